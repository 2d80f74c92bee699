"""Serving a model behind vLLM's OpenAI-compatible HTTP API for the LLM resource.

:class:`VLLMServerResource` starts a server command (``vllm serve <model>`` by default, as
vLLM's CUDA build installs it on a GPU host), waits until it answers ``/v1/models``, hands
its base URL to the LLM resource and stops the process it started when the run ends. With
``attach_url`` it only waits for a server that runs elsewhere. Starting and waiting are
separate steps, so a caller with other work to do (a test session) starts the server and
waits for it later. The tests run a real vLLM too: vLLM's CPU build (``make vllm``, its own
virtualenv) serving the embedded model converted to a Hugging Face folder.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
import urllib.error
import urllib.request

import dagster as dg
from pydantic import Field, PrivateAttr


def wait_healthy(base_url: str, timeout: float, proc: subprocess.Popen | None = None) -> list[str]:
    """Poll ``<base_url>/models`` until it answers; returns the served model ids."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"model server exited with code {proc.returncode} before becoming healthy")
        try:
            with urllib.request.urlopen(f"{base_url.rstrip('/')}/models", timeout=5) as r:
                body = json.loads(r.read())
            return [m.get("id") for m in body.get("data", [])]
        except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError) as e:
            last = e
            time.sleep(0.5)
    raise TimeoutError(f"no healthy model server at {base_url} after {timeout:.0f}s (last error: {last})")


def stop_process_group(proc: subprocess.Popen, grace: float) -> None:
    """Stop a process started in its own session, and everything it forked: SIGTERM, then
    SIGKILL after ``grace`` seconds."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class VLLMServerResource(dg.ConfigurableResource):
    """Starts (or attaches to) a vLLM server for the duration of a run.

    ``command`` is formatted with ``model``, ``host`` and ``port``; it runs in its own
    process group with its output appended to ``log_path``.
    """

    model: str = ""
    command: str = "vllm serve {model} --host {host} --port {port}"
    host: str = "127.0.0.1"
    port: int = 8000
    attach_url: str | None = None
    aliases: list[str] = Field(
        default=[],
        description="the registry aliases this server serves; the LLM resource sends only those aliases to it",
    )
    startup_timeout: float = 900.0
    log_path: str = ".cache/vllm_server.log"

    _proc: subprocess.Popen | None = PrivateAttr(default=None)
    _started: float = PrivateAttr(default=0.0)
    _served: list[str] = PrivateAttr(default_factory=list)

    @property
    def base_url(self) -> str:
        return self.attach_url or f"http://{self.host}:{self.port}/v1"

    @property
    def served_models(self) -> list[str]:
        return list(self._served)

    def start(self) -> None:
        """Launch the server command without waiting for it (nothing to launch with
        ``attach_url``)."""
        self._started = time.monotonic()
        if self.attach_url:
            return
        if not self.model:
            raise ValueError("VLLMServerResource needs a model to serve or an attach_url")
        argv = shlex.split(self.command.format(model=self.model, host=self.host, port=self.port))
        os.makedirs(os.path.dirname(self.log_path) or ".", exist_ok=True)
        with open(self.log_path, "ab") as log:
            # A new session, so stopping it also stops the workers the server forks.
            self._proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait(self) -> list[str]:
        """Block until the server answers, at most ``startup_timeout`` after ``start``;
        returns the served model ids. A server that exits or never answers is stopped and
        the error carries the end of its log."""
        left = self.startup_timeout - (time.monotonic() - (self._started or time.monotonic()))
        try:
            self._served = wait_healthy(self.base_url, max(left, 1.0), self._proc)
        except (RuntimeError, TimeoutError) as e:
            self.stop()
            raise type(e)(f"{e}{self._log_tail()}") from e
        return self.served_models

    def stop(self) -> None:
        """Stop the server this resource started, and everything it forked."""
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_process_group(proc, grace=30)

    def _log_tail(self, chars: int = 3000) -> str:
        if self.attach_url or not os.path.exists(self.log_path):
            return ""
        with open(self.log_path, "rb") as f:
            f.seek(max(os.path.getsize(self.log_path) - chars, 0))
            return f"\n{self.log_path}:\n" + f.read().decode("utf-8", errors="replace")

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self.start()
        self.wait()

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        self.stop()
