"""The cluster executor (pipelines.cluster) on real services: a RECOR domain built by
Dagster's Celery executor through a Redis broker, with two Celery workers started the way
a deployment starts them (``dagster-celery worker start``), sharing the Postgres instance
and the S3 Parquet root. Steps must be spread over both workers' processes (told apart by
the process group each worker was started in), and the run must succeed, its steps reading
their inputs from the bucket whichever worker wrote them."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster_celery.make_app import make_app

ROOT = Path(__file__).parents[2]
BIN = Path(sys.executable).parent
DOMAIN = "law"
WORKERS = ("bf-worker-1", "bf-worker-2")
READY_SECONDS = 120
RUN_SECONDS = 300


def start_worker(name: str, config: Path, log: Path) -> subprocess.Popen:
    # dagster-celery runs `celery` by name, from the same environment as the test
    env = {**os.environ, "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")]),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with open(log, "wb") as out:
        return subprocess.Popen(
            [str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app", "-y", str(config), "-n", name],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )


def stop_worker(worker: subprocess.Popen) -> None:
    try:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    except ProcessLookupError:
        pass


def wait_for_workers(broker: str, workers: list[subprocess.Popen], logs: list[Path]) -> None:
    app = make_app({"broker": broker, "backend": broker})
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        dead = [log for w, log in zip(workers, logs) if w.poll() is not None]
        assert not dead, f"a worker exited:\n{dead[0].read_text(errors='replace')[-3000:]}"
        if len(app.control.ping(timeout=1.0)) == len(workers):
            return
    pytest.fail(f"workers did not answer within {READY_SECONDS}s:\n" + "\n".join(
        log.read_text(errors="replace")[-2000:] for log in logs))


def run_watched(job, instance, workers: list[subprocess.Popen], logs: list[Path]) -> dg.JobExecutionResult:
    """Run ``job`` while watching the workers: Dagster's Celery loop waits for ever on a step
    whose worker died, so a dead worker or an overrun must fail the test instead."""
    outcome = {}

    def execute() -> None:
        try:
            outcome["result"] = dg.execute_job(job, instance=instance, tags={"dagster/partition": DOMAIN})
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            outcome["error"] = e

    thread = threading.Thread(target=execute, daemon=True)
    thread.start()
    deadline = time.monotonic() + RUN_SECONDS
    while thread.is_alive():
        dead = [log for w, log in zip(workers, logs) if w.poll() is not None]
        if dead or time.monotonic() > deadline:
            reason = "a worker exited" if dead else f"the run took over {RUN_SECONDS}s"
            pytest.fail(f"{reason}:\n" + "\n".join(log.read_text(errors="replace")[-2000:] for log in logs))
        thread.join(timeout=1.0)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


@pytest.mark.slow
def test_recor_domain_on_two_celery_workers(deployment, redis_server, monkeypatch, tmp_path):
    from tests.services import scripted_defs

    broker = redis_server.url(0)
    monkeypatch.setenv("BENCHFOUNDRY_CELERY_BROKER", broker)
    monkeypatch.setenv("BENCHFOUNDRY_CELERY_BACKEND", broker)
    config = tmp_path / "celery.yaml"
    # the worker reads the executor's config block of a run config; one step at a time per worker
    config.write_text(yaml.safe_dump({"execution": {"config": {
        "broker": broker, "backend": broker, "config_source": {"worker_concurrency": 1}}}}))
    # as a deployment does before its workers start: two workers opening an empty database
    # at once both create the instance's tables, and one fails on the other's
    subprocess.run([str(BIN / "dagster"), "instance", "migrate"], cwd=ROOT, check=True, capture_output=True)
    logs = [tmp_path / f"{name}.log" for name in WORKERS]
    workers = [start_worker(name, config, log) for name, log in zip(WORKERS, logs)]
    try:
        wait_for_workers(broker, workers, logs)
        groups = {worker.pid: name for worker, name in zip(workers, WORKERS)}
        with dg.DagsterInstance.get() as instance:
            result = run_watched(dg.reconstructable(scripted_defs.recor_build_on_celery), instance, workers, logs)
            assert result.success, "\n".join(log.read_text(errors="replace")[-3000:] for log in logs)
            starts = instance.get_records_for_run(result.run_id, of_type=dg.DagsterEventType.STEP_START,
                                                  limit=100).records
            pids = {r.event_log_entry.dagster_event.pid for r in starts}
            ran_in = {groups.get(os.getpgid(pid)) for pid in pids}
        materialized = result.get_asset_materialization_events()
        assert len(starts) == len(result.job_def.graph.nodes) and len(materialized) >= 15
        assert os.getpid() not in pids
        assert ran_in == set(WORKERS), f"steps ran in {ran_in} (pids {pids})"
        assert deployment.keys(f"{deployment.storage_prefix}/recor/benchmark/{DOMAIN}.parquet")
    finally:
        for worker in workers:
            stop_worker(worker)
