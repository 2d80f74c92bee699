"""Serving a model behind vLLM's OpenAI-compatible HTTP API for the LLM resource.

:class:`VLLMServerResource` starts a server (``vllm serve <model>`` by default, as vLLM's
CUDA build installs it on a GPU host), waits until it answers ``/v1/models``, hands its base
URL to the LLM resource and stops the process it started when the run ends. With
``attach_url`` it only waits for a server that runs elsewhere. Starting and waiting are
separate steps, so a caller with other work to do (a test session) starts the server and
waits for it later. The tests run a real vLLM too: vLLM's CPU build (``make vllm``, its own
virtualenv) serving the embedded model converted to a Hugging Face folder.

What runs is the deployment's choice, not a run's: the servers are given in the definitions'
code, none of their fields is run config (``pipelines.resources.RUN_FIELDS``), and even so
they hold only vetted values (a model id, a port, a dtype, sizes), each passed as one
argument. The program and its fixed arguments come from ``BENCHFOUNDRY_VLLM_COMMAND`` in the
deployment's environment (or from code, the ``command`` argument of
:meth:`VLLMServerResource.start`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import time
import urllib.error
import urllib.request

import dagster as dg
from pydantic import Field, PrivateAttr, field_validator

from resources.redact import redact

# The deployment's server command, with {model}, {host} and {port}; each placeholder fills
# one argument, so a value cannot add arguments of its own.
COMMAND_ENV = "BENCHFOUNDRY_VLLM_COMMAND"
DEFAULT_COMMAND = "vllm serve {model} --host {host} --port {port}"
DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")
# A Hugging Face id (org/name) or a folder: no leading dash (it would read as an option).
_MODEL = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./:@+-]{0,511}")


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


def server_argv(template: str, model: str, host: str, port: int, options: list[str]) -> list[str]:
    """The server's arguments: the template split as a shell would, each placeholder filled
    within its own argument, then the vetted options."""
    return [part.format(model=model, host=host, port=port) for part in shlex.split(template)] + options


class VLLMServerResource(dg.ConfigurableResource):
    """Starts (or attaches to) a vLLM server for the duration of a run.

    The program is the deployment's (``BENCHFOUNDRY_VLLM_COMMAND``, see the module); run
    config sets only the vetted fields below. The server runs in its own process group with
    its output appended to ``log_path``.
    """

    model: str = ""
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    dtype: str | None = Field(default=None, description=f"one of {', '.join(DTYPES)}")
    max_model_len: int | None = Field(default=None, ge=1)
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    tensor_parallel_size: int | None = Field(default=None, ge=1)
    max_num_seqs: int | None = Field(default=None, ge=1)
    served_model_name: str | None = None
    attach_url: str | None = None
    aliases: list[str] = Field(
        default=[],
        description="the registry aliases this server serves; the LLM resource sends only those aliases to it",
    )
    startup_timeout: float = 900.0
    log_path: str = ".cache/vllm_server.log"

    @field_validator("model")
    @classmethod
    def _model_id(cls, value: str) -> str:
        if value and not _MODEL.fullmatch(value):
            raise ValueError(
                f"model {value!r}: a model id or folder (letters, digits and ._/:@+-; not starting with a dash)"
            )
        return value

    @field_validator("host")
    @classmethod
    def _host(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9.:\[\]-]{1,255}", value) or value.startswith("-"):
            raise ValueError(f"host {value!r}: an address or host name")
        return value

    @field_validator("dtype")
    @classmethod
    def _dtype(cls, value: str | None) -> str | None:
        if value is not None and value not in DTYPES:
            raise ValueError(f"dtype {value!r}: one of {', '.join(DTYPES)}")
        return value

    @field_validator("served_model_name")
    @classmethod
    def _served_name(cls, value: str | None) -> str | None:
        if value is not None:
            if not _MODEL.fullmatch(value):
                raise ValueError(f"served_model_name {value!r}: a model id (letters, digits and ._/:@+-)")
        return value

    def options(self) -> list[str]:
        """The vetted fields as the server's options, one argument per value."""
        flags = {
            "--dtype": self.dtype,
            "--max-model-len": self.max_model_len,
            "--gpu-memory-utilization": self.gpu_memory_utilization,
            "--tensor-parallel-size": self.tensor_parallel_size,
            "--max-num-seqs": self.max_num_seqs,
            "--served-model-name": self.served_model_name,
        }
        return [part for flag, value in flags.items() if value is not None for part in (flag, str(value))]

    _proc: subprocess.Popen | None = PrivateAttr(default=None)
    _started: float = PrivateAttr(default=0.0)
    _served: list[str] = PrivateAttr(default_factory=list)

    @property
    def base_url(self) -> str:
        return self.attach_url or f"http://{self.host}:{self.port}/v1"

    @property
    def served_models(self) -> list[str]:
        return list(self._served)

    def start(self, command: str | None = None) -> None:
        """Launch the server without waiting for it (nothing to launch with ``attach_url``).
        ``command``: the template to run instead of the deployment's, for code that starts
        its own server (the tests' vLLM CPU build); run config cannot reach it."""
        self._started = time.monotonic()
        if self.attach_url:
            return
        if not self.model:
            raise ValueError("VLLMServerResource needs a model to serve or an attach_url")
        template = command or os.environ.get(COMMAND_ENV) or DEFAULT_COMMAND
        argv = server_argv(template, self.model, self.host, self.port, self.options())
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

    def exit_report(self) -> str:
        """For an error about this server's model: its exit code and the end of its log, when
        the process this resource started has exited ("" while it runs)."""
        if self._proc is None or self._proc.poll() is None:
            return ""
        return f"\nThe model server ({self.model}) exited with code {self._proc.returncode}.{self._log_tail(1500)}"

    def _log_tail(self, chars: int = 3000) -> str:
        """The end of the server's log, credentials masked (it reaches the event log)."""
        if self.attach_url or not os.path.exists(self.log_path):
            return ""
        with open(self.log_path, "rb") as f:
            f.seek(max(os.path.getsize(self.log_path) - chars, 0))
            return f"\n{self.log_path}:\n" + redact(f.read().decode("utf-8", errors="replace"))

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self.start()
        self.wait()

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        self.stop()
