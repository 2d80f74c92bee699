"""Builds that tests share, started in a subprocess when the session begins and awaited by
the fixture that hands them out, so the rest of the suite runs meanwhile.

The machine has two cores, and every process of the session keeps to one thread (the test
process, the builds, the servers: tests/conftest.py): the scripted builds, the end-to-end
run of the real embedded model (``make run``'s code path) and the foreground tests share
them, each filling the time another waits on a server, a daemon or a subprocess. A thread
more would not help: llama.cpp's or OpenMP's threads wait for each other at every layer, and
beside another busy process two threads ran slower than one (BENCHMARKS.md). The tests that
read a build run after the others, then the tests of the vLLM server (which compare it with
the in-process model), and the end-to-end run's checks last.

The session's vLLM server starts here too: it answers after a minute of imports and engine
start on an idle machine, several beside the suite, all spent while other tests run.

A build (or server) is started only when a selected test asks for its fixture, and stopped
at the end of the session if it is still running.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from resources.vllm_server import stop_process_group

# Fixtures whose tests run after the tests that use none of them, in this order: the tests
# of a background build (they wait for it), then those of the vLLM server, which also run
# the in-process model to compare: beside a busy build a model on CPU ran 4 to 7 times
# slower (the served labeling test took 320 s instead of 47); the end-to-end run's tests last.
# The tests that evaluate with ranx come first among them: ranx compiles its metrics on first
# use (about a minute on a new venv), which the release evaluation's build does first, while
# the other tests run.
LATE_FIXTURES = ("compiled_metrics", "scripted_recor", "release_run", "vllm_server", "default_run")
# Fixtures built (or served) in the background, started in this order: the end-to-end run,
# the longest, first.
BACKGROUND = ("default_run", "release_run", "scripted_recor", "operations_prebuild", "vllm_server")
# Fixtures served by another's build: the release evaluation compiles ranx's metrics first.
SERVED_BY = {"compiled_metrics": "release_run"}


@dataclasses.dataclass
class Build:
    """One build's subprocess; its output goes to ``log`` (a pipe would fill and block it)."""

    name: str
    command: list[str]
    env: dict[str, str]
    cwd: Path
    log: Path
    timeout: float
    # where its standard error goes, when a test reads its output alone; otherwise into ``log``
    errors: Path | None = None
    process: subprocess.Popen | None = None
    started: float = 0.0

    def start(self) -> Build:
        self.started = time.monotonic()
        with contextlib.ExitStack() as files:
            out = files.enter_context(self.log.open("w"))
            err = files.enter_context(self.errors.open("w")) if self.errors else subprocess.STDOUT
            self.process = subprocess.Popen(
                self.command, cwd=self.cwd, env=self.env, stdout=out, stderr=err, start_new_session=True
            )
        return self

    def wait(self) -> str:
        """The build's output once it has finished; fails the waiting test when it failed."""
        left = self.timeout - (time.monotonic() - self.started)
        try:
            code = self.process.wait(timeout=max(left, 1))
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"background build {self.name} ran past {self.timeout:.0f}s:\n{self.tail()}")
        if code != 0:
            pytest.fail(f"background build {self.name} exited with {code}:\n{self.tail()}")
        return self.log.read_text()

    def tail(self, chars: int = 6000) -> str:
        logs = [path for path in (self.log, self.errors) if path is not None and path.exists()]
        return "\n".join(path.read_text()[-chars:] for path in logs)

    def stop(self) -> None:
        if self.process is not None:
            stop_process_group(self.process, grace=10)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        used = [i for i, name in enumerate(LATE_FIXTURES) if name in getattr(item, "fixturenames", ())]
        return 1 + max(used) if used else 0

    items.sort(key=rank)  # stable: collection order within each rank


def _starter(fixture: str) -> Callable[[Path], Build]:
    """What starts the build behind ``fixture``: it prepares the folder it is given and
    returns the started Build (for ``vllm_server``, the started server resource; both stop
    with ``stop()``). Imported here, so collecting the unit tests imports none."""
    from tests.operations.prebuild import start_prebuild
    from tests.pipelines.default_run import start_default_run
    from tests.pipelines.recor_build import start_scripted_recor
    from tests.pipelines.release_run import start_release_run
    from tests.servers import start_vllm

    return {
        "default_run": start_default_run,
        "scripted_recor": start_scripted_recor,
        "operations_prebuild": start_prebuild,
        "vllm_server": start_vllm,
        "release_run": start_release_run,
    }[fixture]


@pytest.fixture(scope="session", autouse=True)
def background_builds(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Starts, at the first test, every background build a selected test asks for."""
    wanted = {name for item in request.session.items for name in getattr(item, "fixturenames", ())}
    wanted |= {SERVED_BY[name] for name in wanted if name in SERVED_BY}
    builds = {name: _starter(name)(tmp_path_factory.mktemp(name)) for name in BACKGROUND if name in wanted}
    yield builds
    for build in builds.values():
        build.stop()


RAM = Path("/dev/shm")


@pytest.fixture(scope="session")
def compiled_metrics(background_builds) -> None:
    """Waits until ranx's metrics are compiled into its cache (``compile_metrics``, the
    release evaluation's first step), so a test that evaluates does not compile them too."""
    build = background_builds["release_run"]
    marker = build.log.parent / METRICS_COMPILED
    while not marker.exists() and build.process.poll() is None:
        time.sleep(0.5)
    if not marker.exists():
        build.wait()  # it failed before compiling: the waiting test fails with its log


# Written by the release evaluation's build once ranx's metrics are compiled.
METRICS_COMPILED = "metrics.compiled"


def instance_home(path: Path) -> Path:
    """A Dagster instance folder at ``path`` whose files live in memory where the machine has
    a tmpfs: the instance's SQLite files commit every event, and a build stores thousands
    (each asset check's evaluation costs about a third less off disk). ``path`` is a link
    to it, so copying the build copies the instance; the memory is freed at exit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not (RAM.is_dir() and os.access(RAM, os.W_OK)):
        path.mkdir()
        return path
    target = Path(tempfile.mkdtemp(prefix="benchfoundry-instance-", dir=RAM))
    _RAM_FOLDERS.append(target)
    path.symlink_to(target, target_is_directory=True)
    return path


_RAM_FOLDERS: list[Path] = []


@dataclasses.dataclass(frozen=True)
class BuildFolder:
    """A background build's folder: its Dagster instance and its storage root."""

    base: Path

    home = property(lambda self: self.base / "dagster_home")
    storage = property(lambda self: self.base / "storage")

    def make_instance_home(self) -> None:
        """The instance's folder (``instance_home``), telemetry off."""
        instance_home(self.home)
        (self.home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")

    def instance(self):
        import dagster as dg

        return dg.DagsterInstance.from_config(str(self.home))


def pytest_sessionfinish() -> None:
    for folder in _RAM_FOLDERS:
        shutil.rmtree(folder, ignore_errors=True)


def environment(**extra: str) -> dict[str, str]:
    """The subprocess environment of a build: this one, offline (a build that imports the
    tests adds ``PYTHONPATH`` itself)."""
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1", **extra}
