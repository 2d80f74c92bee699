"""One running Dagster for the operations tests: ``make ui`` (webserver and daemon) over a
fresh instance whose QUIT and WikiProfile facts were built beforehand, serving the
project's definitions with the scripted LLM (``tests.operations.location``)."""

import dataclasses
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.operations.prebuild import operations_env
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
    retrievers: Path

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


CHROMIUM = "/usr/bin/chromium"
# headless Chromium as root in a container, kept off the network
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def page(running_dagster):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.set_default_timeout(60_000)
        yield page
        browser.close()


def location_loaded(url: str) -> bool:
    query = "{workspaceOrError{... on Workspace{locationEntries{name loadStatus locationOrLoadError{__typename}}}}}"
    try:
        request = urllib.request.Request(
            f"{url}/graphql", json.dumps({"query": query}).encode(), {"Content-Type": "application/json"}
        )
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


@pytest.fixture(scope="session")
def operations_prebuild(background_builds) -> Path:
    """The folder of the prebuilt instance, storage, cache and registry."""
    build = background_builds["operations_prebuild"]
    build.wait()
    return build.log.parent


# package scope: the webserver and daemon stop once the operations tests are done, rather
# than polling beside the rest of the suite
@pytest.fixture(scope="package")
def running_dagster(operations_prebuild) -> RunningDagster:
    base = operations_prebuild
    home, storage, registry, env = base / "dagster_home", base / "storage", base / "models.yaml", operations_env(base)

    port = free_port()
    log = base / "dagster_dev.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            ["make", "--no-print-directory", "ui", f"UI_PORT={port}", f"WORKSPACE={WORKSPACE}"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    dagster = RunningDagster(f"http://127.0.0.1:{port}", home, storage, registry, env, log, base / "retrievers.yaml")
    try:
        dagster.wait(
            "the webserver with the code location loaded",
            lambda: proc.poll() is None and location_loaded(dagster.url) or (proc.poll() is not None and _exited(log)),
            timeout=300,
        )
        yield dagster
    finally:
        # `dagster dev` ignores SIGTERM in its children: the whole process group goes.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _exited(log: Path):
    raise AssertionError(f"`make ui` exited early:\n{log.read_text()[-4000:]}")
