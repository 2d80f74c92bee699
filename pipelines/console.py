"""Where ``make run`` (:mod:`pipelines.run_default`) prints what: the project's lines on the
terminal; Dagster's step lines, what the JVM prints (Anserini's INFO lines), what native
libraries print and Dagster's beta and preview warnings in the run's log file. ``--verbose``
keeps all of it on the terminal, as it was.

Lucene runs in this process's JVM (pyjnius), whose log4j writes to the process's standard
output itself, below Python's ``sys.stdout``: so during the stages the file descriptors 1 and
2 point at the log file, and the project's lines go to copies of the terminal's.

Importing this module holds the warnings of :data:`HELD` from then on: the project's modules
raise them as they are imported, before a run knows where its log is, so
:mod:`pipelines.run_default` imports this module before them."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
import warnings
from collections.abc import Iterator
from typing import TextIO

import dagster as dg

# The APIs the project uses on purpose though Dagster marks them beta or preview (partition
# mappings between multi-partitions, backfill policies, observable source assets, partitioned
# asset checks): their warnings are said in the log, not on every run's terminal. Every other
# warning, a superseded API's among them, stays on the terminal.
HELD = (dg.BetaWarning, dg.PreviewWarning)

_held: list[str] = []
_show = warnings.showwarning


def _hold(message, category, filename, lineno, file=None, line=None) -> None:
    if issubclass(category, HELD):
        _held.append(warnings.formatwarning(message, category, filename, lineno, line))
    else:
        _show(message, category, filename, lineno, file, line)


warnings.showwarning = _hold


@dataclasses.dataclass(frozen=True)
class Terminal:
    """Where the project's lines go during the stages."""

    out: TextIO
    err: TextIO


def log_path(cache: str) -> str:
    """A new run's log file: ``<cache>/logs/run-<local time>.log``, absolute (the cache folder
    is the deployment's, always on local disk)."""
    return os.path.abspath(os.path.join(cache, "logs", time.strftime("run-%Y%m%d-%H%M%S.log")))


def loud() -> None:
    """``--verbose``: the held warnings on standard error, and the later ones as they come."""
    sys.stderr.writelines(_held)
    _held.clear()
    warnings.showwarning = _show


@contextlib.contextmanager
def quiet(path: str) -> Iterator[Terminal]:
    """Within: everything written to the file descriptors 1 and 2 (Python's streams, the JVM,
    native code, child processes) and the warnings of :data:`HELD` appended to ``path``, the
    held ones first; the other warnings on the terminal and in the log; the project's lines on
    the :class:`Terminal` it gives."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    with (
        open(path, "a", encoding="utf-8", buffering=1) as log,
        os.fdopen(os.dup(1), "w", encoding=encoding, buffering=1) as out,
        os.fdopen(os.dup(2), "w", encoding=encoding, buffering=1) as err,
    ):
        log.writelines(_held)
        _held.clear()

        def show(message, category, filename, lineno, file=None, line=None) -> None:
            text = warnings.formatwarning(message, category, filename, lineno, line)
            log.write(text)
            if not issubclass(category, HELD):
                err.write(text)

        shown, warnings.showwarning = warnings.showwarning, show
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield Terminal(out, err)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            warnings.showwarning = shown
