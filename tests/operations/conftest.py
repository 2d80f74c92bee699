"""One running Dagster for the operations tests: ``make ui`` (webserver and daemon) over a
fresh instance whose QUIT and WikiProfile facts were built beforehand, serving the
project's definitions with the scripted LLM (``tests.operations.location``)."""

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import SCRIPTED_REGISTRY
from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
WORKSPACE = "tests/operations/workspace.yaml"
# Locally the screenshots land beside the tests; CI keeps them as the run's artifacts.
ARTIFACTS = Path(os.environ.get("BENCHFOUNDRY_TEST_ARTIFACTS", ROOT / "tests" / "artifacts"))


@dataclasses.dataclass
class RunningDagster:
    url: str
    home: Path
    storage: Path
    registry: Path
    env: dict
    log: Path

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        request = urllib.request.Request(f"{self.url}/graphql", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as r:
            answer = json.loads(r.read())
        assert "errors" not in answer, answer["errors"]
        return answer["data"]

    def instance(self):
        import dagster as dg

        return dg.DagsterInstance.from_config(str(self.home))

    def wait(self, what: str, ready, timeout: float, every: float = 2.0):
        """Poll ``ready()`` until it returns something truthy; the server log on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = ready()
            if value:
                return value
            time.sleep(every)
        raise AssertionError(f"{what}: not after {timeout:.0f}s; the server log ends:\n{self.log.read_text()[-4000:]}")


def location_loaded(url: str) -> bool:
    query = '{workspaceOrError{... on Workspace{locationEntries{name loadStatus locationOrLoadError{__typename}}}}}'
    try:
        request = urllib.request.Request(f"{url}/graphql", json.dumps({"query": query}).encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as r:
            entries = json.loads(r.read())["data"]["workspaceOrError"]["locationEntries"]
    except (OSError, ValueError, KeyError):
        return False
    if any(e["locationOrLoadError"] and e["locationOrLoadError"]["__typename"] == "PythonError" for e in entries):
        raise AssertionError(f"the code location failed to load: {entries}")
    return any(e["loadStatus"] == "LOADED" and e["locationOrLoadError"] for e in entries)


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


# package scope: the webserver and daemon stop once the operations tests are done, rather
# than polling beside the rest of the suite
@pytest.fixture(scope="package")
def running_dagster(tmp_path_factory) -> RunningDagster:
    base = tmp_path_factory.mktemp("operations")
    home, storage = base / "dagster_home", base / "storage"
    home.mkdir()
    # the project's instance settings (the llm pool limit) with absolute folders
    (home / "dagster.yaml").write_text("concurrency:\n  pools:\n    default_limit: 1\ntelemetry:\n  enabled: false\n")
    registry = base / "models.yaml"
    shutil.copy(SCRIPTED_REGISTRY, registry)
    env = {**os.environ, "DAGSTER_HOME": str(home), "BENCHFOUNDRY_STORAGE": str(storage),
           "BENCHFOUNDRY_CACHE": str(base / "cache"), "BENCHFOUNDRY_MODELS": str(registry),
           # the evaluation backfill schedules tick every minute here
           "BENCHFOUNDRY_EVAL_CRON": "* * * * *",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    built = subprocess.run([sys.executable, "-m", "tests.operations.location", "prebuild"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]

    port = free_port()
    log = base / "dagster_dev.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(["make", "--no-print-directory", "ui", f"UI_PORT={port}", f"WORKSPACE={WORKSPACE}"],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    dagster = RunningDagster(f"http://127.0.0.1:{port}", home, storage, registry, env, log)
    try:
        dagster.wait("the webserver with the code location loaded", lambda: proc.poll() is None and location_loaded(dagster.url)
                     or (proc.poll() is not None and _exited(log)), timeout=300)
        yield dagster
    finally:
        # `dagster dev` ignores SIGTERM in its children: the whole process group goes.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _exited(log: Path):
    raise AssertionError(f"`make ui` exited early:\n{log.read_text()[-4000:]}")
