"""A labeling materialization killed part-way resumes from the LLM cache, on disk and on
Postgres (the shared cache a cluster's workers use)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import psycopg2
import pytest

from tests.pipelines.stage_runner import CONCURRENCY
from tests.servers import new_database

ROOT = Path(__file__).resolve().parents[2]
BEFORE = ["quit_prepare", "quit_parametric", "quit_passages"]


def env_for(tmp: Path, log: Path, delay: str = "0", cache_url: str | None = None) -> dict:
    """The stage runner's environment; ``cache_url``: the LLM answers in that Postgres database
    instead of under ``tmp``."""
    cache = (
        {"BENCHFOUNDRY_CACHE_TYPE": "postgres", "BENCHFOUNDRY_CACHE_URL": cache_url}
        if cache_url
        else {"BENCHFOUNDRY_CACHE_TYPE": "disk"}
    )
    return {
        **os.environ,
        "BENCHFOUNDRY_STORAGE": str(tmp / "storage"),
        "BENCHFOUNDRY_CACHE": str(tmp / "cache"),
        "SCRIPTED_LLM_LOG": str(log),
        "SCRIPTED_LLM_DELAY": delay,
        "PYTHONPATH": str(ROOT),
        **cache,
    }


def stage(tmp: Path, log: Path, stages: list[str], delay: str = "0", cache_url: str | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.pipelines.stage_runner", *stages],
        cwd=ROOT,
        env=env_for(tmp, log, delay, cache_url),
        start_new_session=True,
    )


def prompts(log: Path) -> list[str]:
    return [json.loads(x)["prompt"] for x in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> tuple[Path, pl.DataFrame]:
    """The stages before labeling, and the labeled table of an uninterrupted run on a copy of
    them (the reference), built once for both backends; each test labels a copy of its own."""
    folder = tmp_path_factory.mktemp("prepared")
    assert stage(folder, folder / "prep.jsonl", BEFORE).wait(timeout=600) == 0
    ref = tmp_path_factory.mktemp("reference")
    shutil.copytree(folder, ref, dirs_exist_ok=True)
    assert stage(ref, ref / "calls.jsonl", ["quit_labeling"]).wait(timeout=600) == 0
    assert len(prompts(ref / "calls.jsonl")) > 200
    return folder, pl.read_parquet(ref / "storage" / "quit" / "passage_answers" / "smollm2.parquet")


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["disk", "postgres"])
def test_killed_labeling_resumes_without_asking_again(prepared, tmp_path, backend, request):
    before, expected = prepared
    run = tmp_path / "run"
    shutil.copytree(before, run)
    url = new_database(request.getfixturevalue("postgres_server")) if backend == "postgres" else None

    # Labeling killed part-way, then run again to the end.
    log = run / "label.jsonl"
    proc = stage(run, log, ["quit_labeling"], delay="0.01", cache_url=url)
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
    assert stage(run, log, ["quit_labeling"], cache_url=url).wait(timeout=600) == 0
    second = prompts(log)
    # Only calls in flight at the kill (at most one per worker) may be asked again:
    # everything finished was cached.
    assert len(set(first) & set(second)) <= CONCURRENCY
    resumed = pl.read_parquet(run / "storage" / "quit" / "passage_answers" / "smollm2.parquet")
    assert resumed.drop("raw").equals(expected.drop("raw")) and resumed["raw"].to_list() == expected["raw"].to_list()
    if url:  # the answers were in the database, not in a disk cache beside it
        with psycopg2.connect(url) as conn, conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM benchfoundry_llm_answers")
            assert cur.fetchone()[0] >= len(set(first) | set(second))
