"""RECOR built and evaluated over all eleven bundled domains with the scripted LLM, real
Lucene and the bundled encoders (the package's shared build, ``scripted_recor``)."""

import json

import dagster as dg
import polars as pl
import pytest

from assets.partitions import DOMAINS
from assets.recor.release import release_name
from checks.recor import recor_checks


@pytest.mark.slow
def test_recor_stages_build_export_and_evaluate_every_domain(scripted_recor):
    storage = scripted_recor.storage
    instance = scripted_recor.instance()
    for asset in ("benchmark", "turns", "quality_scores"):
        assert instance.get_materialized_partitions(dg.AssetKey(["recor", asset])) == set(DOMAINS)
    assert instance.get_materialized_partitions(dg.AssetKey(["eval", "recor_generation"])) == set(DOMAINS)

    # every RECOR check ran in the build and passed; the LLM accounting may only warn
    evaluations = [
        entry.asset_check_evaluation
        for run in instance.get_run_records()
        for entry in instance.all_logs(run.dagster_run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    ]
    recor = [e for e in evaluations if e.asset_key.path[0] == "recor"]
    assert {e.asset_check_key for e in recor} == {k for check in recor_checks for k in check.check_keys}
    failed = [
        f"{e.asset_check_key.to_user_string()}[{e.partition}]: {e.metadata}"
        for e in recor
        if not e.passed and not (e.check_name == "llm_accounting" and e.severity == dg.AssetCheckSeverity.WARN)
    ]
    assert not failed, failed

    stats = pl.read_parquet(storage / "recor" / "statistics.parquet")
    assert stats["domain"].to_list() == list(DOMAINS) and stats["#Conv."].sum() >= 11, stats
    # a domain without conversations says why: every one was rejected with a reason
    for domain in stats.filter(pl.col("#Conv.") == 0)["domain"]:
        rejected = pl.read_parquet(storage / "recor" / "conversation_rejects" / f"{domain}.parquet")
        assert rejected.height == 2 and rejected["detail"].str.len_chars().min() > 0
    assert (stats["negatives"] >= 10).all()
    # StackExchange domains mined their negatives from the pool
    mined = pl.read_parquet(storage / "recor" / "hard_negatives" / "law.parquet")
    assert mined.height >= 5 and mined["doc_id"].str.starts_with("law_pool_").all()

    release = storage / "recor" / "release"
    for domain in stats.filter(pl.col("#Conv.") > 0)["domain"]:
        exported = [
            json.loads(line) for line in (release / f"{release_name(domain)}_benchmark.jsonl").read_text().splitlines()
        ]
        assert exported and all(3 <= r["metadata"]["num_turns"] == len(r["turns"]) <= 12 for r in exported), domain
    statistics = instance.get_latest_materialization_event(dg.AssetKey(["recor", "statistics"])).asset_materialization
    assert statistics.metadata["domains_not_built"].value == "none"
    records = [json.loads(line) for line in (release / "medicalsciences_benchmark.jsonl").read_text().splitlines()]
    assert (
        records
        and records[0]["task"] == "medicalsciences"
        and records[0]["turns"][0]["conversation_history"] == "No previous conversation."
    )
    documents = {
        json.loads(line)["doc_id"] for line in (release / "medicalsciences_documents.jsonl").read_text().splitlines()
    }
    assert {d for r in records for t in r["turns"] for d in t["gold_doc_ids"]} <= documents

    scores = pl.read_parquet(storage / "eval" / "recor_retrieval_metrics.parquet")
    assert set(scores["strategy"]) == {
        "baseline",
        "query_rewrite",
        "reasoning",
        "history",
        "history_reasoning",
        "last_turn",
        "llm_reasoning",
    }
    assert set(scores["retriever"]) == {"bm25", "minilm"}  # the build's registry (recor_build.py)
    assert set(scores["domain"]) == set(stats.filter(pl.col("#Conv.") > 0)["domain"])
    assert scores["ndcg@10"].max() > 0
    generation = pl.read_parquet(storage / "eval" / "recor_generation_metrics.parquet")
    assert set(generation["mode"]) == {"oracle", "retrieved", "no_retrieval"}
    no_retrieval = generation.filter(pl.col("mode") == "no_retrieval").row(0, named=True)
    assert no_retrieval["faithfulness"] is None and no_retrieval["correctness"] == pytest.approx(0.75)
