"""Data-quality checks of the evaluation assets of the three benchmarks (``eval/*`` and
WikiProfile's profiling and analyses).

A check blocks where a downstream asset reads the table (an index, a run, queries, answers,
graded samples, profiles); the reports at the end of the graph fail with ERROR but have
nothing to block. Soft signals only warn: an LLM step's failure rate, a question a retriever
found nothing for, an empty popularity tier. Partitioned assets are checked per partition,
loading that partition alone.

One module per part of the evaluation, as ``assets.eval`` has them: the benchmarks it reads,
QUIT (and its fine-tuning), RECOR, WikiProfile, the registered BEIR-layout datasets and the
leaderboard; ``shared`` holds what
their checks have in common.
"""

from checks.eval.beir import beir_eval_checks
from checks.eval.benchmarks import benchmark_checks
from checks.eval.finetune import finetune_checks
from checks.eval.leaderboard import leaderboard_checks
from checks.eval.quit import quit_eval_checks
from checks.eval.recor import recor_eval_checks
from checks.eval.wikiprofile import wikiprofile_eval_checks

eval_checks = [
    *benchmark_checks,
    *quit_eval_checks,
    *finetune_checks,
    *recor_eval_checks,
    *wikiprofile_eval_checks,
    *beir_eval_checks,
    *leaderboard_checks,
]
