"""The background builds: their tests are ordered after the rest, a finished build hands out
its output, and a failed or overdue one fails the test that waits for it with its log."""

import shutil
import sys
import types

import pytest

from tests.background import LATE_FIXTURES, Build, instance_home, pytest_collection_modifyitems


def item(name: str, *fixtures: str):
    return types.SimpleNamespace(name=name, fixturenames=["request", *fixtures])


def test_tests_of_a_background_build_run_after_the_others_and_the_end_to_end_run_last():
    items = [
        item("e2e_a", "default_run"),
        item("unit"),
        item("served", "vllm_server"),
        item("recor", "scripted_recor"),
        item("e2e_b", "default_run"),
        item("other", "tmp_path"),
    ]
    pytest_collection_modifyitems(items)
    assert [i.name for i in items] == ["unit", "other", "recor", "served", "e2e_a", "e2e_b"]
    assert LATE_FIXTURES[-1] == "default_run"


def build(tmp_path, code: str, timeout: float = 60) -> Build:
    return Build("probe", [sys.executable, "-c", code], {}, tmp_path, tmp_path / "probe.log", timeout).start()


def test_a_finished_build_hands_out_its_output(tmp_path):
    assert (
        build(tmp_path, "print('built', flush=True); import sys; print('and warned', file=sys.stderr)").wait()
        == "built\nand warned\n"
    )


def test_a_failed_build_fails_the_waiting_test_with_its_log(tmp_path):
    with pytest.raises(pytest.fail.Exception, match=r"exited with 3:\n.*half built"):
        build(tmp_path, "print('half built'); raise SystemExit(3)").wait()


def test_an_overdue_build_is_stopped(tmp_path):
    slow = build(tmp_path, "import time; print('started', flush=True); time.sleep(60)", timeout=2)
    with pytest.raises(pytest.fail.Exception, match="ran past 2s"):
        slow.wait()
    assert slow.process.poll() is not None


def test_an_instance_home_is_a_folder_that_copies_as_one(tmp_path):
    home = instance_home(tmp_path / "build" / "dagster_home")
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    assert home.is_dir() and (home / "dagster.yaml").exists()
    shutil.copytree(tmp_path / "build", tmp_path / "copy")
    copied = tmp_path / "copy" / "dagster_home"
    assert copied.is_dir() and not copied.is_symlink() and (copied / "dagster.yaml").read_text().startswith("telemetry")


def test_a_build_with_an_error_file_hands_out_its_output_alone_and_fails_with_both(tmp_path):
    code = "import sys; print('summary', flush=True); print('warned', file=sys.stderr); raise SystemExit({})"

    def run(name: str, exit_code: int) -> Build:
        folder = tmp_path / name
        folder.mkdir()
        command = [sys.executable, "-c", code.format(exit_code)]
        return Build(name, command, {}, folder, folder / "out.log", 60, errors=folder / "err.log").start()

    assert run("ok", 0).wait() == "summary\n"
    assert (tmp_path / "ok" / "err.log").read_text() == "warned\n"
    with pytest.raises(pytest.fail.Exception, match=r"exited with 2:\nsummary\n\nwarned"):
        run("failed", 2).wait()
