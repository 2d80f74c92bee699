"""``make ui``: ``dagster dev`` (webserver, daemon, code servers) that stops as a whole.

``python -m pipelines.ui [dagster dev options]`` starts ``dagster dev`` in a process group
of its own and stops that group, as Ctrl-C would, when this launcher gets SIGINT or SIGTERM
or when its parent (make) goes away; whatever of the group is still there after
``GRACE_SECONDS`` is killed. Started directly under make, ``dagster dev`` could outlive it:
make does not pass SIGINT on to its recipe, and ``dagster dev`` handles SIGTERM as it
handles SIGINT, so where SIGINT is ignored (``make ui &`` in a script) it ignores both.
"""

import ctypes
import os
import signal
import subprocess
import sys

# `dagster dev` stops its webserver, daemon and code servers within a few seconds; a run
# still executing gets the same time to record its interruption.
GRACE_SECONDS = 20.0
POLL_SECONDS = 0.5
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1


def _stop_with_launcher() -> None:
    """In the child before exec: SIGTERM when the launcher dies, even by SIGKILL, which
    leaves it no chance to stop the group itself."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def stop_group(proc: subprocess.Popen, grace: float) -> None:
    """SIGINT to ``proc``'s process group (``dagster dev``'s own clean shutdown), then
    SIGKILL to whatever of the group outlives ``proc`` or ``grace`` seconds."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def main(argv: list[str]) -> int:
    """Run ``dagster dev argv`` until it exits, a stop signal arrives or the parent is gone;
    the exit status is ``dagster dev``'s, or 128 + the signal that stopped it."""
    parent = os.getppid()
    received: list[int] = []
    for sig in STOP_SIGNALS:
        # also where the shell started us with SIGINT ignored: the child then inherits the
        # default disposition, which `dagster dev` turns into its shutdown
        signal.signal(sig, lambda signum, _frame: received.append(signum))
    proc = subprocess.Popen(
        [sys.executable, "-m", "dagster", "dev", *argv],
        start_new_session=True,
        preexec_fn=_stop_with_launcher if sys.platform == "linux" else None,
    )
    while proc.poll() is None and not received and os.getppid() == parent:
        try:
            proc.wait(timeout=POLL_SECONDS)
        except subprocess.TimeoutExpired:
            pass
    if proc.returncode is None:
        why = signal.Signals(received[0]).name if received else "the parent process exited"
        try:
            print(f"pipelines.ui: {why}; stopping dagster dev (process group {proc.pid})", file=sys.stderr, flush=True)
        except OSError:
            pass  # the terminal or pipe went with the parent; stopping matters more than saying so
    stop_group(proc, GRACE_SECONDS)
    return 128 + received[0] if received else proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
