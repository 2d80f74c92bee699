"""The cluster executor (pipelines.cluster) on real services: a RECOR domain built by
Dagster's Celery executor through a Redis broker, with two Celery workers started the way
a deployment starts them (``dagster-celery worker start``), sharing the Postgres instance
and the S3 Parquet root. Steps must be spread over both workers' processes (told apart by
the process group each worker was started in), and the run must succeed, its steps reading
their inputs from the bucket whichever worker wrote them."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster_celery.make_app import make_app

from tests.servers import free_port

ROOT = Path(__file__).parents[2]
BIN = Path(sys.executable).parent
DOMAIN = "law"
WORKERS = ("bf-worker-1", "bf-worker-2")
READY_SECONDS = 120
RUN_SECONDS = 300


def start_worker(name: str, config: Path, log: Path, **env_vars: str) -> subprocess.Popen:
    # dagster-celery runs `celery` by name, from the same environment as the test
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")]),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        **env_vars,
    }
    with open(log, "wb") as out:
        return subprocess.Popen(
            [str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app", "-y", str(config), "-n", name],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
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
    pytest.fail(
        f"workers did not answer within {READY_SECONDS}s:\n"
        + "\n".join(log.read_text(errors="replace")[-2000:] for log in logs)
    )


def run_watched(
    job, instance, workers: list[subprocess.Popen], logs: list[Path], tags: dict | None = None
) -> dg.JobExecutionResult:
    """Run ``job`` while watching the workers: Dagster's Celery loop waits for ever on a step
    whose worker died, so a dead worker or an overrun must fail the test instead."""
    outcome = {}

    def execute() -> None:
        try:
            outcome["result"] = dg.execute_job(
                job, instance=instance, tags={"dagster/partition": DOMAIN} if tags is None else tags
            )
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


def prepare_workers(redis_server, monkeypatch, tmp_path: Path) -> tuple[str, Path]:
    """The broker URL and the worker config file, with the instance's tables made."""
    broker = redis_server.url(0)
    monkeypatch.setenv("BENCHFOUNDRY_CELERY_BROKER", broker)
    monkeypatch.setenv("BENCHFOUNDRY_CELERY_BACKEND", broker)
    config = tmp_path / "celery.yaml"
    # the worker reads the executor's config block of a run config; one step at a time per worker
    config.write_text(
        yaml.safe_dump(
            {"execution": {"config": {"broker": broker, "backend": broker, "config_source": {"worker_concurrency": 1}}}}
        )
    )
    # as a deployment does before its workers start: two workers opening an empty database
    # at once both create the instance's tables, and one fails on the other's
    subprocess.run([str(BIN / "dagster"), "instance", "migrate"], cwd=ROOT, check=True, capture_output=True)
    return broker, config


@pytest.mark.slow
def test_recor_domain_on_two_celery_workers(deployment, redis_server, monkeypatch, tmp_path):
    from tests.services import scripted_defs

    broker, config = prepare_workers(redis_server, monkeypatch, tmp_path)
    logs = [tmp_path / f"{name}.log" for name in WORKERS]
    workers = [start_worker(name, config, log) for name, log in zip(WORKERS, logs)]
    try:
        wait_for_workers(broker, workers, logs)
        groups = {worker.pid: name for worker, name in zip(workers, WORKERS)}
        with dg.DagsterInstance.get() as instance:
            result = run_watched(dg.reconstructable(scripted_defs.recor_build_on_celery), instance, workers, logs)
            assert result.success, "\n".join(log.read_text(errors="replace")[-3000:] for log in logs)
            starts = instance.get_records_for_run(
                result.run_id, of_type=dg.DagsterEventType.STEP_START, limit=100
            ).records
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


@pytest.mark.slow
def test_a_step_retried_on_another_worker_is_answered_from_the_shared_cache(
    deployment, redis_server, postgres_server, monkeypatch, tmp_path
):
    """Each worker has its own cache folder, as each pod has: only the Postgres answer cache
    is shared. The step's first attempt asks 40 calls and fails; its worker is then taken off
    the queue, so the retry runs on the other worker, and the stand-in must be asked nothing
    again."""
    from tests.servers import new_database
    from tests.services import retry_defs
    from tests.standin import Server

    broker, config = prepare_workers(redis_server, monkeypatch, tmp_path)
    attempts = tmp_path / "attempts"
    attempts.mkdir()
    registry = tmp_path / "models.yaml"
    monkeypatch.setenv("BENCHFOUNDRY_TEST_REGISTRY", str(registry))
    monkeypatch.setenv("BENCHFOUNDRY_CACHE_TYPE", "postgres")
    monkeypatch.setenv("BENCHFOUNDRY_CACHE_URL", new_database(postgres_server))
    monkeypatch.setenv("BENCHFOUNDRY_TEST_ATTEMPTS", str(attempts))
    monkeypatch.setenv("OPENAI_API_KEY", "not-a-real-key")
    logs = [tmp_path / f"{name}.log" for name in WORKERS]
    with Server(free_port(), name="model", log=tmp_path / "model.log") as model:
        registry.write_text(f"models:\n  m: {{model: hosted_vllm/m, backend: vllm, api_base: '{model.url}'}}\n")
        workers = [
            start_worker(name, config, log, BENCHFOUNDRY_CACHE=str(tmp_path / f"cache-{name}"))
            for name, log in zip(WORKERS, logs)
        ]
        try:
            wait_for_workers(broker, workers, logs)
            groups = {worker.pid: name for worker, name in zip(workers, WORKERS)}
            app = make_app({"broker": broker, "backend": broker})
            handover = threading.Thread(target=take_off_the_queue, daemon=True, args=(app, attempts, groups))
            handover.start()
            with dg.DagsterInstance.get() as instance:
                result = run_watched(
                    dg.reconstructable(retry_defs.shared_cache_retry), instance, workers, logs, tags={}
                )
            assert result.success, "\n".join(log.read_text(errors="replace")[-3000:] for log in logs)
            seen = model.seen()
        finally:
            for worker in workers:
                stop_worker(worker)
    first, retry = (json.loads((attempts / f"attempt-{n}.json").read_text()) for n in (0, 1))
    assert groups[first["process_group"]] != groups[retry["process_group"]], "the retry ran on the same worker"
    assert (first["answered"], first["sent"]) == (retry_defs.CALLS, retry_defs.CALLS)
    assert (retry["answered"], retry["from_cache"], retry["sent"]) == (retry_defs.CALLS, retry_defs.CALLS, 0)
    assert len(seen["asked"]) == retry_defs.CALLS and set(seen["asked"].values()) == {1}, seen["asked"]


def take_off_the_queue(app, attempts: Path, groups: dict[int, str]) -> None:
    """Once the first attempt has asked its calls, stop its worker consuming the queue, then
    let the attempt fail: Dagster queues the retry, and only the other worker takes it."""
    deadline = time.monotonic() + RUN_SECONDS
    while not (attempts / "attempt-0.json").exists():
        if time.monotonic() > deadline:
            return
        time.sleep(0.2)
    group = json.loads((attempts / "attempt-0.json").read_text())["process_group"]
    # a worker started with ``-n NAME`` is NAME@host to Celery's control commands
    app.control.cancel_consumer(
        "dagster", destination=[f"{groups[group]}@{socket.gethostname()}"], reply=True, timeout=10
    )
    (attempts / "handed-over").touch()
