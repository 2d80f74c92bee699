"""The default run, end to end, with the real embedded model, Lucene and MiniLM."""

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from assets.recor.release import release_name

ROOT = Path(__file__).resolve().parents[2]


def run_default(tmp_path, *args: str, timeout: int) -> tuple[str, Path, Path]:
    """``python -m pipelines.run_default ARGS`` in a fresh instance, storage and LLM cache;
    its stdout, the instance folder and the storage root."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    storage = tmp_path / "storage"
    env = {**os.environ, "DAGSTER_HOME": str(home), "BENCHFOUNDRY_STORAGE": str(storage),
           "BENCHFOUNDRY_CACHE": str(tmp_path / "cache"), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-m", "pipelines.run_default", *args],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout, home, storage


@pytest.mark.slow
def test_default_run_builds_and_exports_quit(tmp_path):
    stdout, home, storage = run_default(tmp_path, "--benchmarks", "quit", "--max-labeled-questions", "1", timeout=1800)
    assert "QUIT benchmark files" in stdout and "make ui" in stdout
    assert "Total Passages" in stdout

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


@pytest.mark.slow
def test_default_run_builds_and_evaluates_recor_in_every_domain(tmp_path):
    from assets.recor.sources import DOMAINS

    stdout, home, storage = run_default(tmp_path, "--benchmarks", "recor", timeout=3600)
    assert "RECOR statistics" in stdout and "QUIT" not in stdout

    instance = dg.DagsterInstance.from_config(str(home))
    for asset in ("benchmark", "turns", "quality_scores"):
        assert instance.get_materialized_partitions(dg.AssetKey(["recor", asset])) == set(DOMAINS)
    assert instance.get_materialized_partitions(dg.AssetKey(["eval", "recor_generation"])) == set(DOMAINS)
    stats = pl.read_parquet(storage / "recor" / "statistics.parquet")
    assert stats["domain"].to_list() == list(DOMAINS)
    built = stats.filter(pl.col("#Conv.") > 0)["domain"].to_list()
    # The 135M model loses some domains' only question to the validation rules (6 of 11
    # domains kept a conversation when measured; BENCHMARKS.md).
    assert len(built) >= 4, stats
    for domain in built:
        records = (storage / "recor" / "release" / f"{release_name(domain)}_benchmark.jsonl").read_text().splitlines()
        assert records and all(3 <= json.loads(r)["metadata"]["num_turns"] <= 12 for r in records)

    meta = lambda *key: instance.get_latest_materialization_event(dg.AssetKey(list(key))).asset_materialization.metadata
    retrieval = meta("eval", "recor_retrieval_metrics")
    assert retrieval["table_3"].value.splitlines()[0] == "| retriever | Base | QR | Reas | Hist | H+R |"
    for retriever in ("bm25", "minilm", "e5-small"):
        assert f"| {retriever} |" in retrieval["table_3"].value
    assert "data:image/png" in retrieval["per_domain"].value and "data:image/png" in retrieval["turn_position"].value
    generation = meta("eval", "recor_generation_metrics")
    for mode in ("oracle", "retrieved", "no_retrieval"):
        assert f"| {mode} |" in generation["table_8"].value
    assert "| smollm2 |" in generation["dimensions"].value and "| smollm2 |" in generation["lexical"].value
    assert "table_31" in meta("recor", "quality_report")


@pytest.mark.slow
def test_default_run_builds_wikiprofile_facts_and_profiles_the_embedded_model(tmp_path):
    stdout, home, storage = run_default(tmp_path, "--benchmarks", "wikiprofile", timeout=2400)
    assert "WikiProfile:" in stdout and "RECOR" not in stdout and "QUIT" not in stdout

    bench = pl.read_parquet(storage / "wikiprofile" / "benchmark.parquet")
    facts = bench["fact_id"].n_unique()
    assert facts >= 3 and bench.height == 10 * facts
    # every fact lost on the way is kept with its step and reason
    lost = pl.concat([pl.read_parquet(storage / "wikiprofile" / f"{name}.parquet").select("item", "step", "reason")
                      for name in ("direct_question_rejects", "reverse_question_rejects", "natural_question_rejects",
                                   "final_rejects")])
    assert lost["reason"].null_count() == 0

    instance = dg.DagsterInstance.from_config(str(home))
    meta = lambda key: instance.get_latest_materialization_event(dg.AssetKey(["wikiprofile", key])).asset_materialization.metadata
    funnel = meta("benchmark")["funnel"].value
    assert "| 1. pages | 12 |" in funnel and "| 6. facts (downsampled) | 8 |" in funnel
    assert f"| 19. distractors (final facts) | {facts} |" in funnel
    assert instance.get_dynamic_partitions("wikiprofile_subjects") == ["smollm2"]

    # the embedded model profiled with 4 samples per question, thinking through the CoT prompts
    responses = pl.read_parquet(storage / "wikiprofile" / "responses" / "smollm2.parquet")
    assert responses.height == facts * (6 + 4 * 2) * 4 and responses["error"].null_count() == responses.height
    cot = responses.filter(pl.col("thinking"))
    assert cot.height == facts * 4 * 4 and cot["response"].str.len_chars().mean() > \
        responses.filter(~pl.col("thinking") & pl.col("task").is_in(["direct", "reverse"]))["response"].str.len_chars().mean()
    mc = responses.filter(pl.col("task") == "mc_direct")
    assert mc.group_by("fact_id").agg(pl.col("gold_slot").n_unique())["gold_slot"].to_list() == [4] * facts
    graded = pl.read_parquet(storage / "wikiprofile" / "graded_responses" / "smollm2.parquet")
    assert graded.height == responses.height and graded["label"].null_count() == 0
    assert meta("graded_responses")["grader"].value == "rules (smollm2 is advisory)"
    profiles = pl.read_parquet(storage / "wikiprofile" / "profiles" / "smollm2.parquet")
    assert profiles.height == facts

    assert "| smollm2 |" in meta("profile_report")["table_2"].value
    for key, plot in (("profile_report", "profiles_plot"), ("popularity_report", "popularity_plot"),
                      ("direction_report", "direction_plot"), ("thinking_report", "thinking_plot"),
                      ("robustness_report", "robustness_plot")):
        assert meta(key)[plot].value.startswith("![plot](data:image/png;base64,"), key
    assert "| smollm2 | top |" in meta("popularity_report")["popularity"].value
    assert "| smollm2 | verify |" in meta("direction_report")["direct_vs_reverse"].value
