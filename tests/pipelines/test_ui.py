"""``make ui`` stops as a whole: every process it started exits after the signals people
send it, and ``dagster dev`` shuts its services down itself rather than being killed."""

import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
# the launcher's grace (20 s) and the time to notice the signal
STOPPED_WITHIN_SECONDS = 30
STARTED_WITHIN_SECONDS = 120


def _as_a_shell_starts_it(ignore_sigint: bool):
    """make's signal state as a terminal's shell gives it (a script's ``make ui &``: SIGINT
    ignored), whatever this process inherited: an ignored disposition survives exec, and
    pytest started in the background (nohup, CI) may ignore SIGTERM or SIGHUP, which make
    then keeps ignoring."""

    def preexec() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        if ignore_sigint:
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    return preexec


def _started(port: int, make: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTED_WITHIN_SECONDS
    while time.monotonic() < deadline:
        assert make.poll() is None, f"`make ui` exited early:\n{log.read_text()[-3000:]}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=5):
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"the webserver did not answer within {STARTED_WITHIN_SECONDS}s:\n{log.read_text()[-3000:]}")


@pytest.mark.slow
@pytest.mark.parametrize(
    "how",
    [
        # `kill <pid>` on `make ui &` started by a script, whose background jobs ignore SIGINT
        "SIGTERM to make, SIGINT ignored",
        # Ctrl-C in the terminal: the foreground process group
        "SIGINT to make's group",
        # make itself killed: the launcher notices its parent is gone
        "SIGKILL to make",
    ],
)
def test_make_ui_stops_every_process_it_started(tmp_path, how):
    # a code location with nothing in it: the processes are what is under test
    (tmp_path / "location.py").write_text("import dagster as dg\n\ndefs = dg.Definitions()\n")
    (tmp_path / "workspace.yaml").write_text(
        "load_from:\n  - python_file:\n      relative_path: location.py\n      location_name: empty\n"
    )
    env = dict(os.environ, DAGSTER_HOME=str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    port, log = free_port(), tmp_path / "ui.log"
    with open(log, "w") as out:
        make = subprocess.Popen(
            ["make", "--no-print-directory", "ui", f"UI_PORT={port}", f"WORKSPACE={tmp_path / 'workspace.yaml'}"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_as_a_shell_starts_it(how.endswith("ignored")),
        )
    started = [psutil.Process(make.pid)]
    try:
        _started(port, make, log)
        started += started[0].children(recursive=True)
        assert any("dagster_webserver" in " ".join(p.cmdline()) for p in started[1:]), started
        if how.startswith("SIGTERM"):
            os.kill(make.pid, signal.SIGTERM)
        elif how.startswith("SIGINT"):
            os.killpg(make.pid, signal.SIGINT)
        else:
            os.kill(make.pid, signal.SIGKILL)
        _, alive = psutil.wait_procs(started, timeout=STOPPED_WITHIN_SECONDS)
        assert not alive, (
            f"still running {STOPPED_WITHIN_SECONDS}s after {how}: "
            f"{[' '.join(p.cmdline())[:80] for p in alive]}\n{log.read_text()[-3000:]}"
        )
        assert "Dagster services shut down." in log.read_text(), log.read_text()[-3000:]
    finally:
        for p in started:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
