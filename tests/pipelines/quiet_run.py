"""``make run`` (:func:`pipelines.run_default.main`, imported first as ``python -m
pipelines.run_default`` imports it) on a plan of one stage that writes what the real stages
write besides the project's lines: Dagster's step lines, a per-call log line, Anserini's INFO
lines (a two-document Lucene index built in the JVM), a Dagster beta warning and a warning of
another kind. Its summary is one line. ``tests/pipelines/test_quiet_run.py`` reads what it
printed and logged. Usage: python -m tests.pipelines.quiet_run [--verbose]

Paths come from the environment: DAGSTER_HOME, BENCHFOUNDRY_STORAGE, BENCHFOUNDRY_CACHE."""

from __future__ import annotations

from pipelines import run_default  # isort: split

import os
import sys
import warnings

import dagster as dg

from resources.lucene import build_index

STAGE = "two_documents_indexed"
PER_CALL = "a per-call line of the stage"
OTHER_WARNING = "a warning of another kind"
SUMMARY = "the summary"


@dg.op
def index_two_documents(context) -> None:
    context.log.info(PER_CALL)
    # a beta API, where no import has used it
    dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="stage")
    warnings.warn(OTHER_WARNING, UserWarning, stacklevel=1)
    docs = [{"id": "a", "contents": "hello world"}, {"id": "b", "contents": "foo bar"}]
    build_index(docs, os.path.join(os.environ["BENCHFOUNDRY_STORAGE"], "index"), threads=1)


@dg.job(name=STAGE)
def two_documents_indexed() -> None:
    index_two_documents()


def main(argv: list[str]) -> int:
    run_default.build_defs = lambda **_: dg.Definitions(jobs=[two_documents_indexed])
    run_default.plan = lambda options: run_default.RunPlan([(STAGE, None)], {}, {})
    run_default.sync_partitions = lambda *_, **__: None
    run_default.summarize = lambda options, storage: print(SUMMARY)
    return run_default.main(["--benchmarks", "quit", *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
