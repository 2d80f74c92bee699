"""A labeling materialization killed part-way resumes from the LLM cache."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from tests.pipelines.stage_runner import CONCURRENCY

ROOT = Path(__file__).resolve().parents[2]
BEFORE = ["quit_prepare", "quit_parametric", "quit_passages"]


def env_for(tmp: Path, log: Path, delay: str = "0") -> dict:
    return {**os.environ, "BENCHFOUNDRY_STORAGE": str(tmp / "storage"), "BENCHFOUNDRY_CACHE": str(tmp / "cache"),
            "SCRIPTED_LLM_LOG": str(log), "SCRIPTED_LLM_DELAY": delay, "PYTHONPATH": str(ROOT)}


def stage(tmp: Path, log: Path, stages: list[str], delay: str = "0") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.pipelines.stage_runner", *stages], cwd=ROOT,
                            env=env_for(tmp, log, delay), start_new_session=True)


def prompts(log: Path) -> list[str]:
    return [json.loads(x)["prompt"] for x in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.slow
def test_killed_labeling_resumes_without_asking_again(tmp_path):
    # The stages before labeling, built once; each run below labels from its own copy.
    prepared = tmp_path / "prepared"
    assert stage(prepared, prepared / "prep.jsonl", BEFORE).wait(timeout=600) == 0
    ref, run = tmp_path / "ref", tmp_path / "run"
    for copy in (ref, run):
        shutil.copytree(prepared, copy)

    # An uninterrupted reference run.
    assert stage(ref, ref / "calls.jsonl", ["quit_labeling"]).wait(timeout=600) == 0
    expected = pl.read_parquet(ref / "storage" / "quit" / "passage_answers" / "smollm2.parquet")
    assert len(prompts(ref / "calls.jsonl")) > 200

    # The same, killed while labeling.
    log = run / "label.jsonl"
    proc = stage(run, log, ["quit_labeling"], delay="0.01")
    deadline = time.monotonic() + 300
    while len(prompts(log)) < 200 and time.monotonic() < deadline:
        assert proc.poll() is None, "labeling finished before it could be killed"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    first = prompts(log)
    assert 200 <= len(first) < len(expected)
    assert not (run / "storage" / "quit" / "passage_answers" / "smollm2.parquet").exists()

    log.rename(run / "label-first.jsonl")
    assert stage(run, log, ["quit_labeling"]).wait(timeout=600) == 0
    second = prompts(log)
    # Only calls in flight at the kill (at most one per worker) may be asked again:
    # everything finished was cached.
    assert len(set(first) & set(second)) <= CONCURRENCY
    resumed = pl.read_parquet(run / "storage" / "quit" / "passage_answers" / "smollm2.parquet")
    assert resumed.drop("raw").equals(expected.drop("raw")) and resumed["raw"].to_list() == expected["raw"].to_list()
