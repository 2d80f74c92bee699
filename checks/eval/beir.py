"""Checks of the evaluation on registered datasets in BEIR's layout: the dataset as read, the
runs and reranked runs per dataset x retriever, and their metric tables."""

from __future__ import annotations

import dagster as dg
import polars as pl

from assets.common.formats import beir as layout
from assets.eval.beir import assets as beir_assets
from assets.eval.beir.rules import BEIR_METRICS
from assets.partitions import beir_dataset_partitions, dataset_retriever_partitions
from checks.eval.shared import (
    METRICS,
    RANKS,
    REFERENCES,
    eval_key,
    interval_problems,
    metric_problems,
    oracle_aliases,
    reranked_systems,
    retriever_aliases,
    run_problems,
    same_passages_problems,
)
from checks.factories import (
    WARN,
    llm_accounting_check,
    not_in,
    problems_result,
    rejects_check,
    table_check,
    table_problems,
    typed,
    unmatched,
    where,
)

COVERAGE = "coverage"
SAME_PASSAGES = "same_passages"
BY_DATASET = beir_assets.BY_DATASET
CORPUS = dg.AssetIn(key=eval_key("beir_corpus").path, partition_mapping=BY_DATASET)
QUERIES = dg.AssetIn(key=eval_key("beir_queries").path, partition_mapping=BY_DATASET)

beir_corpus_schema = table_check(
    eval_key("beir_corpus"),
    beir_assets.CORPUS_SCHEMA,
    unique=("passage_id",),
    not_null=("dataset", "passage_id", "text"),
    partitions_def=beir_dataset_partitions,
)


beir_queries_schema = table_check(
    eval_key("beir_queries"),
    beir_assets.QUERIES_SCHEMA,
    unique=("question_id",),
    not_null=("dataset", "question_id", "query"),
    partitions_def=beir_dataset_partitions,
)


@dg.asset_check(
    asset=eval_key("beir_qrels"),
    name=REFERENCES,
    blocking=True,
    partitions_def=beir_dataset_partitions,
    additional_ins={
        "beir_queries": dg.AssetIn(key=eval_key("beir_queries")),
        "beir_corpus": dg.AssetIn(key=eval_key("beir_corpus")),
    },
    description="One judgment per query and document, at least one; each names a known query and document, and "
    "every query kept is judged (an unjudged one is a reject).",
)
def beir_qrels_references(
    beir_qrels: pl.DataFrame, beir_queries: pl.DataFrame, beir_corpus: pl.DataFrame
) -> dg.AssetCheckResult:
    frame = beir_qrels
    problems = table_problems(frame, beir_assets.QRELS_SCHEMA, ("question_id", "passage_id"), tuple(frame.columns))
    if not frame.height:
        problems.append("no judgment: the dataset has nothing to score")
    problems += unmatched(frame, ["question_id"], beir_queries, ["question_id"], "query ids not in eval/beir_queries")
    problems += unmatched(frame, ["passage_id"], beir_corpus, ["passage_id"], "document ids not in eval/beir_corpus")
    problems += unmatched(beir_queries, ["question_id"], frame, ["question_id"], "queries without a judgment")
    return problems_result(problems, frame.height)


beir_source_rejects_reasons = rejects_check(
    eval_key("beir_source_rejects"), layout.REASONS, layout.REJECTS.keys, partitions_def=beir_dataset_partitions
)


@dg.asset_check(
    asset=eval_key("beir_runs"),
    name=RANKS,
    blocking=True,
    partitions_def=dataset_retriever_partitions,
    description="Ranks 1..n per query, each document once, scores not rising down the list, a registered "
    "retriever, one dataset.",
)
def beir_runs_ranks(beir_runs: pl.DataFrame) -> dg.AssetCheckResult:
    problems = run_problems(beir_runs, retriever_aliases(), columns=beir_assets.RUNS_SCHEMA)
    if typed(beir_runs, beir_assets.RUNS_SCHEMA) and beir_runs["dataset"].n_unique() > 1:
        problems.append(f"{beir_runs['dataset'].n_unique()} datasets in one partition's run")
    return problems_result(problems, beir_runs.height)


@dg.asset_check(
    asset=eval_key("beir_runs"),
    name=REFERENCES,
    blocking=True,
    partitions_def=dataset_retriever_partitions,
    additional_ins={"beir_queries": QUERIES, "beir_corpus": CORPUS},
    description="Every query id is a judged query of the dataset and every document id one of its documents.",
)
def beir_runs_references(
    beir_runs: pl.DataFrame, beir_queries: pl.DataFrame, beir_corpus: pl.DataFrame
) -> dg.AssetCheckResult:
    problems = unmatched(
        beir_runs, ["question_id"], beir_queries, ["question_id"], "query ids not in eval/beir_queries"
    ) + unmatched(beir_runs, ["passage_id"], beir_corpus, ["passage_id"], "document ids not in eval/beir_corpus")
    return problems_result(problems, beir_runs.height)


@dg.asset_check(
    asset=eval_key("beir_runs"),
    name=COVERAGE,
    partitions_def=dataset_retriever_partitions,
    additional_ins={"beir_queries": QUERIES},
    description="Every judged query has documents (a query without any scores 0 on every metric).",
)
def beir_runs_coverage(beir_runs: pl.DataFrame, beir_queries: pl.DataFrame) -> dg.AssetCheckResult:
    problems = unmatched(beir_queries, ["question_id"], beir_runs, ["question_id"], "judged queries without a document")
    return problems_result(problems, beir_runs.height, WARN)


@dg.asset_check(
    asset=eval_key("beir_reranked_runs"),
    name=RANKS,
    blocking=True,
    partitions_def=dataset_retriever_partitions,
    description="Ranks 1..n per query and system, each document once, scores not rising down the list, a "
    "registered retriever+reranker.",
)
def beir_reranked_runs_ranks(beir_reranked_runs: pl.DataFrame) -> dg.AssetCheckResult:
    problems = run_problems(
        beir_reranked_runs, reranked_systems(), per=("system", "question_id"), columns=beir_assets.RUNS_SCHEMA
    )
    return problems_result(problems, beir_reranked_runs.height)


@dg.asset_check(
    asset=eval_key("beir_reranked_runs"),
    name=SAME_PASSAGES,
    blocking=True,
    partitions_def=dataset_retriever_partitions,
    additional_ins={"beir_runs": dg.AssetIn(key=eval_key("beir_runs").path)},
    description="Each reranker's run holds the retrieved documents of each query, none added or lost, and below "
    "its top_k in their retrieved places.",
)
def beir_reranked_same_passages(beir_reranked_runs: pl.DataFrame, beir_runs: pl.DataFrame) -> dg.AssetCheckResult:
    problems = []
    if "system" in beir_reranked_runs.columns:
        for (system,), run in beir_reranked_runs.group_by("system", maintain_order=True):
            problems += [f"{system}: {p}" for p in same_passages_problems(run, beir_runs)]
    else:
        problems.append("column 'system' is missing")
    return problems_result(problems, beir_reranked_runs.height)


def beir_metric_check(name: str, labels: dict, system: str, description: str) -> dg.AssetChecksDefinition:
    @dg.asset_check(asset=eval_key(name), name=METRICS, description=description)
    def _check(frame: pl.DataFrame) -> dg.AssetCheckResult:
        columns = {"dataset": pl.String, **labels, "queries": pl.Int64}
        problems = metric_problems(frame, columns, ("dataset", system), BEIR_METRICS)
        problems += interval_problems(frame, ("dataset", system))
        if typed(frame, columns):
            problems += where(frame, pl.col("queries") < 1, "over no queries", ("dataset", system))
            if system == "retriever":
                problems += where(
                    frame, pl.col("retriever").is_in(oracle_aliases()), "of the Oracle (left out)", ("retriever",)
                )
                problems += not_in(frame, "retriever", retriever_aliases(), ("retriever",))
            else:
                problems += not_in(frame, "system", reranked_systems(), ("system",))
                problems += where(
                    frame,
                    pl.col("system") != pl.concat_str("retriever", pl.lit("+"), "reranker"),
                    "whose system is not retriever+reranker",
                    ("system",),
                )
                problems += where(
                    frame,
                    pl.col("oracle") != pl.col("retriever").is_in(oracle_aliases()),
                    "with the Oracle flag wrong",
                    ("system",),
                )
        return problems_result(problems, frame.height)

    return _check


beir_retrieval_metrics_ranges = beir_metric_check(
    "beir_retrieval_metrics",
    beir_assets.RETRIEVAL_LABELS,
    "retriever",
    "One row per dataset and registered retriever, over at least one query; BEIR's metrics in [0, 1], "
    "Recall@k monotone in k, each interval holding its value; no Oracle.",
)
beir_rerank_metrics_ranges = beir_metric_check(
    "beir_rerank_metrics",
    beir_assets.RERANK_LABELS,
    "system",
    "One row per dataset and retriever+reranker, named by both, Oracle flagged; BEIR's metrics in [0, 1], "
    "Recall@k monotone in k, each interval holding its value.",
)

beir_eval_checks = [
    beir_corpus_schema,
    beir_queries_schema,
    beir_qrels_references,
    beir_source_rejects_reasons,
    beir_runs_ranks,
    beir_runs_references,
    beir_runs_coverage,
    beir_reranked_runs_ranks,
    beir_reranked_same_passages,
    beir_retrieval_metrics_ranges,
    beir_rerank_metrics_ranges,
    llm_accounting_check(eval_key("beir_reranked_runs"), partitions_def=dataset_retriever_partitions),
]
