"""RECOR as Track 2 of RETECO (SemEval-2027 Task 1) scores it: the task's rules for run and
generation files and its tables (``rules``), and its generation judge (``steps``). Checking
and scoring submissions (``submissions``) is read through ``rules``, imported here first so
that either module may be imported first."""

from assets.eval.recor.reteco import rules  # noqa: F401
