"""Serving a model behind an OpenAI-compatible HTTP API for the LLM resource.

On a GPU host this starts ``vllm serve <model>`` (the command is configurable), waits until
the server answers ``/v1/models``, hands its base URL to the LLM resource and stops the
process it started when the run ends. With ``attach_url`` it only waits for an existing
server. Any server speaking the same protocol works; tests use llama.cpp's
(``python -m llama_cpp.server``) serving the embedded model.
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
from pydantic import PrivateAttr


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
    """Starts (or attaches to) an OpenAI-compatible model server for the duration of a run."""

    model: str = ""
    command: str = "vllm serve {model} --host {host} --port {port}"
    host: str = "127.0.0.1"
    port: int = 8000
    attach_url: str | None = None
    startup_timeout: float = 900.0
    log_path: str = ".cache/vllm_server.log"

    _proc: subprocess.Popen | None = PrivateAttr(default=None)
    _served: list[str] = PrivateAttr(default_factory=list)

    @property
    def base_url(self) -> str:
        return self.attach_url or f"http://{self.host}:{self.port}/v1"

    @property
    def served_models(self) -> list[str]:
        return list(self._served)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        if self.attach_url:
            self._served = wait_healthy(self.attach_url, self.startup_timeout)
            return
        if not self.model:
            raise ValueError("VLLMServerResource needs a model to serve or an attach_url")
        argv = shlex.split(self.command.format(model=self.model, host=self.host, port=self.port))
        os.makedirs(os.path.dirname(self.log_path) or ".", exist_ok=True)
        log = open(self.log_path, "ab")
        # A new session, so stopping it also stops the workers the server forks.
        self._proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._served = wait_healthy(self.base_url, self.startup_timeout, self._proc)
        except Exception:
            self.teardown_after_execution(context)
            raise

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_process_group(proc, grace=30)
