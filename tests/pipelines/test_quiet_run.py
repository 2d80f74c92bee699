"""What ``make run`` prints where (issue 50): the project's lines on the terminal, a line per
stage run; Dagster's step lines, Anserini's INFO lines and Dagster's beta and preview warnings
in the log file its first line names; all of it on the terminal with ``--verbose``."""

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import dagster as dg
import pytest

from pipelines import console
from pipelines.run_default import run_stages
from tests.background import environment
from tests.pipelines import quiet_run

ROOT = Path(__file__).resolve().parents[2]
JAVA_INFO = "INFO  [main] index.AbstractIndexer"
HELD = ("BetaWarning", "PreviewWarning")


def test_each_stage_run_is_a_line_with_its_partition_the_runs_done_of_all_and_the_time():
    @dg.op
    def step() -> None:
        pass

    @dg.job
    def first() -> None:
        step()

    @dg.job(partitions_def=dg.StaticPartitionsDefinition(["law", "biology"]))
    def second() -> None:
        step()

    defs = dg.Definitions(jobs=[first, second])
    lines = []
    stages = [("first", None), ("second", "domains")]
    partitions = {"domains": ["law", "biology"]}
    assert run_stages(defs, dg.DagsterInstance.ephemeral(), stages, log=lines.append, partitions=partitions)
    assert [re.sub(r"\d+s", "Ns", re.sub(r"\d+m\d+s", "MmSs", line)) for line in lines] == [
        "[1/3] first: ok in Ns, MmSs elapsed",
        "[2/3] second[law]: ok in Ns, MmSs elapsed",
        "[3/3] second[biology]: ok in Ns, MmSs elapsed",
    ]


def test_quiet_sends_the_descriptors_and_the_beta_warnings_to_the_log_and_keeps_the_others(tmp_path, capfd):
    log = tmp_path / "logs" / "run.log"
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with console.quiet(str(log)) as terminal:
            os.write(1, b"what the JVM prints\n")
            os.write(2, b"a step line\n")
            warnings.warn("a beta API", dg.BetaWarning, stacklevel=1)
            warnings.warn("a preview API", dg.PreviewWarning, stacklevel=1)
            warnings.warn("a superseded API", dg.SupersessionWarning, stacklevel=1)
            print("[1/1] stage: ok", file=terminal.out)
    os.write(1, b"the summary\n")
    out, err = capfd.readouterr()
    assert out == "[1/1] stage: ok\nthe summary\n"
    assert "SupersessionWarning: a superseded API" in err and "BetaWarning" not in err and "PreviewWarning" not in err
    logged = log.read_text()
    for line in ("what the JVM prints", "a step line", "BetaWarning: a beta API", "PreviewWarning: a preview API"):
        assert line in logged, line
    assert "SupersessionWarning: a superseded API" in logged and "the summary" not in logged


def make_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m tests.pipelines.quiet_run ARGS`` in a fresh instance, storage and cache under ``tmp_path``."""
    (tmp_path / "home").mkdir()
    env = environment(
        DAGSTER_HOME=str(tmp_path / "home"),
        BENCHFOUNDRY_STORAGE=str(tmp_path / "storage"),
        BENCHFOUNDRY_CACHE=str(tmp_path / "cache"),
    )
    env.pop("PYTHONWARNINGS", None)
    done = subprocess.run(
        [sys.executable, "-m", "tests.pipelines.quiet_run", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.mark.slow
def test_make_run_prints_the_projects_lines_and_logs_java_dagster_and_beta_warnings(tmp_path):
    done = make_run(tmp_path)
    lines = done.stdout.splitlines()
    log = Path(re.match(r"the log of this run: (\S+) \(", lines[0]).group(1))
    assert log.parent == tmp_path / "cache" / "logs"
    assert lines[1].startswith("make run, the demo slice")
    assert re.fullmatch(rf"\[1/1\] {quiet_run.STAGE}: ok in \d+s, \d+m\d\ds elapsed", lines[3])
    assert lines[-2:] == [quiet_run.SUMMARY, f"log of this run:          {log}"]
    terminal = done.stdout + done.stderr
    for noise in (JAVA_INFO, *HELD, quiet_run.PER_CALL, " - dagster - "):
        assert noise not in terminal, noise
    # a warning of another category is not filtered
    assert f"UserWarning: {quiet_run.OTHER_WARNING}" in done.stderr
    logged = log.read_text()
    for line in (JAVA_INFO, quiet_run.PER_CALL, f"UserWarning: {quiet_run.OTHER_WARNING}", *HELD):
        assert line in logged, line
    # the imports' beta warnings, and the one the stage raised
    assert "assets/eval/quit/assets.py" in logged and "tests/pipelines/quiet_run.py" in logged


@pytest.mark.slow
def test_make_run_verbose_prints_everything_and_writes_no_log(tmp_path):
    done = make_run(tmp_path, "--verbose")
    assert done.stdout.startswith("make run, the demo slice") and JAVA_INFO in done.stdout
    for line in (*HELD, quiet_run.PER_CALL, f"UserWarning: {quiet_run.OTHER_WARNING}"):
        assert line in done.stderr, line
    assert not (tmp_path / "cache" / "logs").exists()
