"""Real Postgres, Redis and S3 (moto) servers for service tests, one of each per session.

Each server listens on a free loopback port, keeps its state in a temporary directory and
is stopped when the session ends. The binaries come from the Debian packages that
``make system-packages`` installs; a missing one fails the test that asked for it.
"""

from __future__ import annotations

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

from resources.vllm_server import stop_process_group

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


def wait_until(ready: Callable[[], bool], what: str, process: subprocess.Popen | None = None,
               log: Path | None = None) -> None:
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
    initdb = binary("initdb", "/usr/lib/postgresql/*/bin/initdb")
    pg_ctl = binary("pg_ctl", os.path.join(os.path.dirname(initdb), "pg_ctl"))
    # not under pytest's tmp_path: the postgres account cannot enter root's private directories
    root = Path(tempfile.mkdtemp(prefix="benchfoundry-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    data, log = root / "data", root / "server.log"
    server = Postgres(host="127.0.0.1", port=free_port(), user="benchfoundry", password="benchfoundry",
                      database="dagster")
    run(_as_postgres_user([initdb, "-D", str(data), "-U", server.user, "--auth=trust", "--encoding=UTF8",
                           "--no-sync"]))
    options = f"-k {root} -p {server.port} -c listen_addresses={server.host} -c fsync=off"
    run(_as_postgres_user([pg_ctl, "-D", str(data), "-l", str(log), "-o", options, "-w",
                           "-t", str(STARTUP_SECONDS), "start"]))
    try:
        import psycopg2

        # pg_ctl -w returns once the server accepts connections
        conn = psycopg2.connect(host=server.host, port=server.port, user=server.user, dbname="postgres")
        conn.autocommit = True
        conn.cursor().execute(f"CREATE DATABASE {server.database}")
        conn.close()
        yield server
    finally:
        subprocess.run(_as_postgres_user([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]),
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Redis]:
    redis_bin = binary("redis-server")
    root = Path(tempfile.mkdtemp(prefix="benchfoundry-redis-"))
    server = Redis(host="127.0.0.1", port=free_port())
    log = root / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [redis_bin, "--port", str(server.port), "--bind", server.host, "--dir", str(root),
             "--save", "", "--appendonly", "no"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
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
        process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                   cwd=root, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        import boto3

        client = boto3.client("s3", endpoint_url=server.endpoint_url, region_name=server.region,
                              aws_access_key_id="testing", aws_secret_access_key="testing")
        wait_until(lambda: client.list_buckets() is not None, "moto S3", process, log)
        yield server
    finally:
        stop(process)
        shutil.rmtree(root, ignore_errors=True)


@dataclasses.dataclass(frozen=True)
class ModelServer:
    """llama.cpp's OpenAI-compatible server serving the embedded model as ``smollm2``: it
    speaks the protocol vLLM speaks, so it stands in for a vLLM server."""

    url: str
    log: Path


@pytest.fixture(scope="session")
def llama_cpp_server() -> Iterator[ModelServer]:
    from resources.llm import embedded_model_path
    from resources.vllm_server import wait_healthy

    port = free_port()
    root = Path(tempfile.mkdtemp(prefix="benchfoundry-llama-"))
    log = root / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", embedded_model_path("smollm2-135m-instruct"),
             "--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_healthy(f"http://127.0.0.1:{port}/v1", timeout=120, proc=process)
        yield ModelServer(f"http://127.0.0.1:{port}/v1", log)
    finally:
        stop(process)
        shutil.rmtree(root, ignore_errors=True)
