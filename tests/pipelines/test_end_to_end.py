"""The default run, end to end, with the real embedded model, Lucene and MiniLM."""

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_default_run_builds_and_exports_quit(tmp_path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    storage = tmp_path / "storage"
    env = {**os.environ, "DAGSTER_HOME": str(home), "BENCHFOUNDRY_STORAGE": str(storage),
           "BENCHFOUNDRY_CACHE": str(tmp_path / "cache"), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-m", "pipelines.run_default", "--max-labeled-questions", "1"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "QUIT benchmark files" in out.stdout and "make ui" in out.stdout
    assert "Total Passages" in out.stdout

    release = storage / "quit" / "release"
    corpus = [json.loads(line) for line in (release / "corpus.jsonl").read_text().splitlines()]
    questions = [q for split in ("train", "dev", "test") for q in json.loads((release / f"{split}.json").read_text())]
    assert len(questions) == 1 and len(corpus) == 325
    assert {c["title"] for c in corpus} == {questions[0]["id"]}
    assert len(questions[0]["hints"]) == 5 and questions[0]["answers"]
    qrels = [line.split() for split in ("train", "dev", "test") for line in (release / f"qrels.{split}.txt").read_text().splitlines()]
    assert {q[2] for q in qrels} == {c["id"] for c in corpus} and {q[3] for q in qrels} <= {"1", "2"}

    rejects = pl.read_parquet(storage / "quit" / "source_rejects.parquet")
    assert {"duplicate_id", "duplicate_question", "too_few_hints"} <= set(rejects["reason"])
    assert pl.read_parquet(storage / "quit" / "leakage_rejects.parquet").height >= 3

    instance = dg.DagsterInstance.from_config(str(home))
    event = instance.get_latest_materialization_event(dg.AssetKey(["quit", "passage_answers"]))
    meta = event.asset_materialization.metadata
    assert meta["llm/calls"].value >= 325
    assert "llm/served_from_cache" in meta and "llm/parse_failures" in meta
    stats = instance.get_latest_materialization_event(dg.AssetKey(["quit", "statistics"])).asset_materialization.metadata
    assert stats["table1/Total Passages"].value == 325.0
    checks = instance.get_latest_materialization_event(dg.AssetKey(["quit", "passages"]))
    assert checks is not None

    # the evaluation: every reranker on every retriever, the Oracle rows, the reader table
    meta = lambda key: instance.get_latest_materialization_event(dg.AssetKey(["eval", key])).asset_materialization.metadata
    retrieval, rerank, reading = meta("quit_retrieval_metrics"), meta("quit_rerank_metrics"), meta("quit_reader_metrics")
    assert "| bm25 |" in retrieval["table_2"].value and "oracle" not in retrieval["table_2"].value
    for reranker in ("rankgpt", "pointwise", "upr"):
        assert f"| {reranker} |" in rerank["table_7"].value
        assert f"| e5-small+{reranker} |" in rerank["table_5"].value
        assert f"| oracle+{reranker} |" in reading["table_8"].value
    assert "| Optimal |" in reading["table_8"].value and "data:image/png" in reading["passages_by_hints"].value

