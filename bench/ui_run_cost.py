"""What a run launched from the web UI costs against what ``make run`` spends on the same
work (issue 31). ``make run`` executes each stage inside one process that has imported the
project once; a run from the UI or the daemon is a fresh run process (``dagster api
execute_run``), which imports the project, then executes the job with its executor. Under
Dagster's default executor every step, each asset check included, is one more process that
imports the project again (about 10-15 s each on 2 cores), so a one-partition job of two
assets and four checks paid six imports.

The bench prepares QUIT's evaluation source from the bundled release sample, then, for one
partition of a job (default ``quit_retrieval``, partition ``bm25``), alternates:

- ``in_process``: the job in this process, as ``make run`` runs it (the import paid once, before);
- ``ui``: a fresh process doing what a UI run does with the project's executor (in process);
- ``per_step``: the same with Dagster's default executor, a process per step (the old setting).

    .venv/bin/python bench/ui_run_cost.py [--job quit_retrieval --partition bm25] [--repeats 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import dagster as dg  # noqa: E402

QUESTIONS = 3


def _defs(mode: str) -> dg.Definitions:
    from pipelines.definitions import build_defs

    return build_defs() if mode == "ui" else build_defs(executor=dg.multiprocess_executor)


def job_for_ui():
    return _defs("ui").resolve_job_def(os.environ["BENCH_JOB"])


def job_for_per_step():
    return _defs("per_step").resolve_job_def(os.environ["BENCH_JOB"])


def worker(mode: str, job: str, partition: str | None) -> None:
    """One run in this (fresh) process, as a run worker launched by the UI runs it."""
    os.environ["BENCH_JOB"] = job
    target = dg.reconstructable(job_for_ui if mode == "ui" else job_for_per_step)
    tags = {"dagster/partition": partition} if partition else None
    with dg.execute_job(target, instance=dg.DagsterInstance.get(), tags=tags) as result:
        if not result.success:
            raise SystemExit(f"{mode} run of {job}[{partition}] failed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--job", default="quit_retrieval")
    parser.add_argument("--partition", default="bm25")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--worker", choices=["ui", "per_step"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.job, args.partition or None)
        return

    scratch = Path(tempfile.mkdtemp(prefix="ui_run_cost_"))
    (scratch / "home").mkdir()
    (scratch / "home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    os.environ.update(
        DAGSTER_HOME=str(scratch / "home"),
        BENCHFOUNDRY_STORAGE=str(scratch / "storage"),
        BENCHFOUNDRY_CACHE=str(scratch / "cache"),
        HF_HUB_OFFLINE="1",
    )

    started = time.perf_counter()
    from assets.partitions import sync_partitions
    from pipelines.definitions import defs
    from pipelines.stages import QUIET, RELEASE_SAMPLES, release_config

    imported = time.perf_counter() - started

    instance = dg.DagsterInstance.get()
    sync_partitions(instance)
    source = release_config("quit_eval_source", RELEASE_SAMPLES["quit"], max_questions=QUESTIONS)
    assert (
        defs.resolve_job_def("quit_eval_source")
        .execute_in_process(instance=instance, run_config={**QUIET, **source})
        .success
    )

    times: dict[str, list[float]] = {"in_process": [], "ui": [], "per_step": []}
    for _ in range(args.repeats):
        for mode in times:
            t = time.perf_counter()
            if mode == "in_process":
                result = defs.resolve_job_def(args.job).execute_in_process(
                    instance=instance, partition_key=args.partition or None, run_config=QUIET
                )
                assert result.success
            else:
                subprocess.run(
                    [sys.executable, __file__, "--worker", mode, "--job", args.job, "--partition", args.partition],
                    check=True,
                    cwd=ROOT,
                    capture_output=True,
                )
            times[mode].append(time.perf_counter() - t)

    base = statistics.median(times["in_process"])
    print(f"importing the project: {imported:.1f} s (paid once by make run, once by every UI run process)")
    print(f"{args.job}[{args.partition}], median of {args.repeats}:")
    for mode, values in times.items():
        print(f"  {mode:<10} {statistics.median(values):6.1f} s  ({statistics.median(values) / base:.1f}x in_process)")


if __name__ == "__main__":
    main()
