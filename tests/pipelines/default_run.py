"""``make run``'s default (the quick preset, ``python -m pipelines.run_default``) with the
real embedded model, Lucene, MiniLM, e5-small and FAISS, in a fresh instance, storage and
LLM cache, once a session in the background (``tests.background``);
``tests/pipelines/test_end_to_end.py`` checks what it made.

It keeps to one thread, as every process of the session does (tests/conftest.py): the
embedded model's, torch's and FAISS's. Its standard output is the run's summary, which the
tests read whole; its standard error goes to a file beside it."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.background import Build, BuildFolder, environment

ROOT = Path(__file__).resolve().parents[2]
# About 14 minutes alone on two cores; beside the rest of the suite, on one, up to twice that.
# On an AMD EPYC machine of this kind (AVX2, no AVX-512) every stage ran about twice as long
# again beside the suite, and the run was past 3,600 s in wikiprofile_build: 80 minutes, still
# inside CI's 90 with the installs.
TIMEOUT_SECONDS = 4800


class DefaultRun(BuildFolder):
    cache = property(lambda self: self.base / "cache")
    # the summary make run prints, kept for BENCHMARKS.md's per-stage times
    log = property(lambda self: self.base / "make_run.log")
    errors = property(lambda self: self.base / "make_run.stderr")


def start_default_run(base: Path) -> Build:
    run = DefaultRun(base)
    run.make_instance_home()
    env = environment(
        DAGSTER_HOME=str(run.home), BENCHFOUNDRY_STORAGE=str(run.storage), BENCHFOUNDRY_CACHE=str(run.cache)
    )
    # the trained models' registry is the run's own, under its storage root, as for make run
    # (not the test process's, tests/conftest.py)
    env.pop("BENCHFOUNDRY_TRAINED", None)
    return Build(
        "default_run",
        [sys.executable, "-m", "pipelines.run_default"],
        env,
        ROOT,
        run.log,
        timeout=TIMEOUT_SECONDS,
        errors=run.errors,
    ).start()
