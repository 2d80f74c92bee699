"""RECOR built and evaluated over all eleven bundled domains with the scripted LLM, real
Lucene and the bundled encoders."""

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from pipelines.jobs import RECOR_STAGES

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_recor_stages_build_export_and_evaluate_every_domain(tmp_path):
    env = {**os.environ, "BENCHFOUNDRY_STORAGE": str(tmp_path / "storage"), "BENCHFOUNDRY_LLM_CACHE": str(tmp_path / "llm"),
           "BENCHFOUNDRY_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "tests.pipelines.stage_runner", *[s for s, _ in RECOR_STAGES]], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    storage = tmp_path / "storage"

    stats = pl.read_parquet(storage / "recor" / "statistics.parquet")
    assert stats.height == 11 and stats["#Conv."].sum() >= 11, stats
    # a domain without conversations says why: every one was rejected with a reason
    for domain in stats.filter(pl.col("#Conv.") == 0)["domain"]:
        rejected = pl.read_parquet(storage / "recor" / "conversation_rejects" / f"{domain}.parquet")
        assert rejected.height == 2 and rejected["detail"].str.len_chars().min() > 0
    assert (stats["negatives"] >= 10).all()
    # StackExchange domains mined their negatives from the pool
    mined = pl.read_parquet(storage / "recor" / "hard_negatives" / "law.parquet")
    assert mined.height >= 5 and mined["doc_id"].str.starts_with("law_pool_").all()

    release = storage / "recor" / "release"
    records = [json.loads(line) for line in (release / "medicalsciences_benchmark.jsonl").read_text().splitlines()]
    assert records and records[0]["task"] == "medicalsciences" and records[0]["turns"][0]["conversation_history"] == "No previous conversation."
    documents = {json.loads(line)["doc_id"] for line in (release / "medicalsciences_documents.jsonl").read_text().splitlines()}
    assert {d for r in records for t in r["turns"] for d in t["gold_doc_ids"]} <= documents

    scores = pl.read_parquet(storage / "eval" / "recor_retrieval_metrics.parquet")
    assert set(scores["strategy"]) == {"baseline", "query_rewrite", "reasoning", "history", "history_reasoning"}
    assert set(scores["retriever"]) == {"bm25", "minilm", "e5-small"}
    assert set(scores["domain"]) == set(stats.filter(pl.col("#Conv.") > 0)["domain"])
    assert scores["ndcg@10"].max() > 0
    generation = pl.read_parquet(storage / "eval" / "recor_generation_metrics.parquet")
    assert set(generation["mode"]) == {"oracle", "retrieved", "no_retrieval"}
    no_retrieval = generation.filter(pl.col("mode") == "no_retrieval").row(0, named=True)
    assert no_retrieval["faithfulness"] is None and no_retrieval["correctness"] == pytest.approx(0.75)
