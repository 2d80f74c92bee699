"""Checks of QUIT's evaluation: the indexes, the retrieved and reranked runs, the readers'
answers and the metric tables of each (paper Tables 4 to 8)."""

from __future__ import annotations

import dagster as dg
import polars as pl

from assets.eval import metrics as eval_metrics
from assets.eval.quit.rules import STRATEGIES as CONTEXT_STRATEGIES
from assets.eval.quit.steps import ANSWER_SCHEMA, CUTOFFS
from assets.partitions import quit_reader_partitions, retriever_partitions, retriever_reranker_partitions
from checks.eval.shared import (
    METRICS,
    ORACLE_KIND,
    QUIT_CORPUS,
    QUIT_QUESTIONS,
    RANKS,
    REFERENCES,
    SCHEMA,
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
    UNIT,
    WARN,
    errored,
    llm_accounting_check,
    not_in,
    outside,
    problems_result,
    table_problems,
    typed,
    unmatched,
    where,
)
from resources.retrieval import load_retrievers
from resources.storage import exists

# Check names, unique per asset.
INDEX = "index"
COVERAGE = "coverage"
SAME_PASSAGES = "same_passages"

# The reader's Optimal bound: ``system`` of its rows in the answers, and its row in Table 8.
OPTIMAL_SYSTEM, OPTIMAL_ROW = "optimal", "Optimal"
SPLITS = ("all", "train", "dev", "test")
INDEX_SCHEMA = {"retriever": pl.String, "kind": pl.String, "documents": pl.Int64, "location": pl.String}


@dg.asset_check(
    asset=eval_key("quit_index"),
    name=INDEX,
    blocking=True,
    partitions_def=retriever_partitions,
    additional_ins={"benchmark_corpus": QUIT_CORPUS},
    description="One row for the partition's retriever: its registered kind, every corpus passage indexed, the index where it says.",
)
def quit_index_files(quit_index: pl.DataFrame, benchmark_corpus: pl.DataFrame) -> dg.AssetCheckResult:
    """A run searched against an index that lost passages, or one that is not there, would
    score as a bad retriever."""
    problems = table_problems(
        quit_index, INDEX_SCHEMA, unique=("retriever",), not_null=("retriever", "kind", "documents")
    )
    if quit_index.height != 1:
        problems.append(f"{quit_index.height} rows, expected one for the partition's retriever")
    if typed(quit_index, INDEX_SCHEMA):
        specs = load_retrievers()
        for row in quit_index.iter_rows(named=True):
            alias, spec = row["retriever"], specs.get(row["retriever"])
            if spec is None:
                problems.append(f"{alias!r} is not in the retriever registry")
            elif row["kind"] != spec.kind:
                problems.append(f"{alias}: kind {row['kind']!r}, the registry says {spec.kind!r}")
            elif spec.kind == ORACLE_KIND:
                if row["documents"]:
                    problems.append(
                        f"{alias}: the Oracle reads the qrels, yet {row['documents']} documents are indexed"
                    )
            else:
                if row["documents"] != benchmark_corpus.height:
                    problems.append(
                        f"{alias}: {row['documents']} documents indexed, the corpus has {benchmark_corpus.height}"
                    )
                if not row["location"] or not exists(row["location"]):
                    problems.append(f"{alias}: no index at {row['location']!r}")
    return problems_result(problems, quit_index.height)


@dg.asset_check(
    asset=eval_key("quit_runs"),
    name=RANKS,
    blocking=True,
    partitions_def=retriever_partitions,
    description="Ranks 1..n per question, each passage once, scores not rising down the list, a registered retriever.",
)
def quit_runs_ranks(quit_runs: pl.DataFrame) -> dg.AssetCheckResult:
    return problems_result(run_problems(quit_runs, retriever_aliases()), quit_runs.height)


@dg.asset_check(
    asset=eval_key("quit_runs"),
    name=REFERENCES,
    blocking=True,
    partitions_def=retriever_partitions,
    additional_ins={"benchmark_questions": QUIT_QUESTIONS, "benchmark_corpus": QUIT_CORPUS},
    description="Every question id is a benchmark question and every passage id a corpus passage.",
)
def quit_runs_references(
    quit_runs: pl.DataFrame, benchmark_questions: pl.DataFrame, benchmark_corpus: pl.DataFrame
) -> dg.AssetCheckResult:
    problems = unmatched(
        quit_runs, ["question_id"], benchmark_questions, ["question_id"], "question ids not in eval/quit_questions"
    ) + unmatched(quit_runs, ["passage_id"], benchmark_corpus, ["passage_id"], "passage ids not in eval/quit_corpus")
    return problems_result(problems, quit_runs.height)


@dg.asset_check(
    asset=eval_key("quit_runs"),
    name=COVERAGE,
    partitions_def=retriever_partitions,
    additional_ins={"benchmark_questions": QUIT_QUESTIONS},
    description="Every benchmark question has passages (a question without any scores 0 on every metric).",
)
def quit_runs_coverage(quit_runs: pl.DataFrame, benchmark_questions: pl.DataFrame) -> dg.AssetCheckResult:
    problems = unmatched(
        benchmark_questions, ["question_id"], quit_runs, ["question_id"], "benchmark questions without a passage"
    )
    return problems_result(problems, quit_runs.height, WARN)


@dg.asset_check(
    asset=eval_key("quit_retrieval_metrics"),
    name=METRICS,
    description=(
        "One row per retriever and split (all, train, dev, test); ranx metrics in [0, 1], Hit@k and "
        "Recall@k monotone in k; no Oracle; each interval holds its value."
    ),
)
def quit_retrieval_metrics_ranges(quit_retrieval_metrics: pl.DataFrame) -> dg.AssetCheckResult:
    frame = quit_retrieval_metrics
    columns = {"retriever": pl.String, "split": pl.String, "questions": pl.Int64}
    problems = metric_problems(frame, columns, ("retriever", "split"), eval_metrics.RETRIEVAL_METRICS)
    if typed(frame, columns):
        problems += where(
            frame,
            pl.col("retriever").is_in(oracle_aliases()),
            "of the Oracle (an upper bound, left out)",
            ("retriever",),
        )
        problems += split_problems(frame, "retriever")
        problems += interval_problems(frame, ("retriever", "split"))
    return problems_result(problems, frame.height)


def split_problems(frame: pl.DataFrame, system: str) -> list[str]:
    """A QUIT report's split rows: a known split, over at least one question, and an ``all``
    row for every system that has any."""
    overall = frame.filter(pl.col("split") == SPLITS[0])
    return (
        not_in(frame, "split", SPLITS, (system, "split"))
        + where(frame, pl.col("questions") < 1, "over no questions", (system, "split"))
        + unmatched(frame, [system], overall, [system], f"{system}s without an {SPLITS[0]!r} row")
    )


@dg.asset_check(
    asset=eval_key("quit_reranked_runs"),
    name=RANKS,
    blocking=True,
    partitions_def=retriever_reranker_partitions,
    description="Ranks 1..n per question, each passage once, scores not rising down the list, a registered retriever+reranker.",
)
def quit_reranked_runs_ranks(quit_reranked_runs: pl.DataFrame) -> dg.AssetCheckResult:
    return problems_result(run_problems(quit_reranked_runs, reranked_systems()), quit_reranked_runs.height)


@dg.asset_check(
    asset=eval_key("quit_reranked_runs"),
    name=SAME_PASSAGES,
    blocking=True,
    partitions_def=retriever_reranker_partitions,
    additional_ins={
        "quit_runs": dg.AssetIn(
            key=eval_key("quit_runs").path,
            partition_mapping=dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="retriever"),
        )
    },
    description="The retrieved passages of each question, none added or lost, and below the reranker's top_k in their retrieved places.",
)
def quit_reranked_same_passages(quit_reranked_runs: pl.DataFrame, quit_runs: pl.DataFrame) -> dg.AssetCheckResult:
    """A reranker only reorders: its run holds what the retriever found (so its ids resolve
    wherever the retrieved run's do), and the tail it does not rerank stays in place."""
    problems = same_passages_problems(quit_reranked_runs, quit_runs)
    return problems_result(problems, quit_reranked_runs.height)


@dg.asset_check(
    asset=eval_key("quit_rerank_metrics"),
    name=METRICS,
    description="One row per retriever+reranker and split (all, train, dev, test), named by both, Oracle flagged; ranx "
    "metrics in [0, 1], Hit@k and Recall@k monotone in k; each interval holds its value.",
)
def quit_rerank_metrics_ranges(quit_rerank_metrics: pl.DataFrame) -> dg.AssetCheckResult:
    frame = quit_rerank_metrics
    columns = {
        "system": pl.String,
        "retriever": pl.String,
        "reranker": pl.String,
        "oracle": pl.Boolean,
        "split": pl.String,
        "questions": pl.Int64,
    }
    problems = metric_problems(frame, columns, ("system", "split"), eval_metrics.RETRIEVAL_METRICS)
    if typed(frame, columns):
        problems += split_problems(frame, "system")
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
        problems += interval_problems(frame, ("system", "split"))
    return problems_result(problems, frame.height)


def reader_systems() -> list[str]:
    """What a reader reads from: a retriever's run, a reranked run, or the Optimal bound."""
    return [*retriever_aliases(), *reranked_systems(), OPTIMAL_SYSTEM]


READER_KEY = ("question_id", "system", "k", "strategy")


@dg.asset_check(
    asset=eval_key("quit_reader_answers"),
    name=SCHEMA,
    blocking=True,
    partitions_def=quit_reader_partitions,
    description=(
        "One reader; one answer per question, system, k and context strategy (the Optimal rows without "
        "either); an exact match is correct."
    ),
)
def quit_reader_answers_schema(quit_reader_answers: pl.DataFrame) -> dg.AssetCheckResult:
    frame = quit_reader_answers
    problems = table_problems(
        frame, ANSWER_SCHEMA, READER_KEY, not_null=("question_id", "reader", "system", "em", "correct")
    )
    if typed(frame, ANSWER_SCHEMA):
        optimal = pl.col("system") == OPTIMAL_SYSTEM
        if frame["reader"].n_unique() > 1:
            problems.append(f"{frame['reader'].n_unique()} readers in one reader's partition")
        problems += not_in(frame, "system", reader_systems(), ("system",))
        problems += where(
            frame,
            ~optimal & ~pl.col("k").is_in(list(CUTOFFS)).fill_null(False),
            f"with k not in {list(CUTOFFS)}",
            READER_KEY,
        )
        problems += where(
            frame,
            ~optimal & ~pl.col("strategy").is_in(sorted(CONTEXT_STRATEGIES)).fill_null(False),
            f"with a context strategy not in {sorted(CONTEXT_STRATEGIES)}",
            READER_KEY,
        )
        problems += where(
            frame,
            optimal & (pl.col("k").is_not_null() | pl.col("strategy").is_not_null()),
            "of the Optimal bound with a k or strategy",
            READER_KEY,
        )
        problems += where(
            frame, pl.col("em") & ~pl.col("correct"), "with an exact match not counted correct", READER_KEY
        )
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=eval_key("quit_reader_answers"),
    name=REFERENCES,
    blocking=True,
    partitions_def=quit_reader_partitions,
    additional_ins={"benchmark_questions": QUIT_QUESTIONS},
    description="Every answer is to a benchmark question, and every benchmark question has its Optimal bound.",
)
def quit_reader_answers_references(
    quit_reader_answers: pl.DataFrame, benchmark_questions: pl.DataFrame
) -> dg.AssetCheckResult:
    problems = unmatched(
        quit_reader_answers,
        ["question_id"],
        benchmark_questions,
        ["question_id"],
        "question ids not in eval/quit_questions",
    )
    if "system" in quit_reader_answers.columns:
        optimal = quit_reader_answers.filter(pl.col("system") == OPTIMAL_SYSTEM)
        problems += unmatched(
            benchmark_questions, ["question_id"], optimal, ["question_id"], "benchmark questions without an Optimal row"
        )
    return problems_result(problems, quit_reader_answers.height)


@dg.asset_check(
    asset=eval_key("quit_reader_metrics"),
    name=METRICS,
    description="One row per system, k, strategy, reader and split (all, train, dev, test); EM and judge in [0, 1]; "
    "one Optimal row per reader and split; each interval holds its value.",
)
def quit_reader_metrics_ranges(quit_reader_metrics: pl.DataFrame) -> dg.AssetCheckResult:
    frame = quit_reader_metrics
    columns = {
        "system": pl.String,
        "k": pl.Int32,
        "strategy": pl.String,
        "reader": pl.String,
        "em": pl.Float64,
        "judge": pl.Float64,
        "split": pl.String,
        "questions": pl.Int64,
    }
    key = ("system", "k", "strategy", "reader", "split")
    problems = table_problems(frame, columns, key, not_null=("system", "strategy", "reader", "split"))
    if typed(frame, columns):
        problems += outside(frame, ["em", "judge"], UNIT, key, missing_ok=False)
        problems += split_problems(frame, "reader")
        optimal = frame.group_by("reader", "split").agg((pl.col("system") == OPTIMAL_ROW).sum().alias("optimal_rows"))
        problems += where(
            optimal,
            pl.col("optimal_rows") != 1,
            f"(readers and splits) without exactly one {OPTIMAL_ROW} row",
            ("reader", "split"),
        )
        problems += interval_problems(frame, key)
    return problems_result(problems, frame.height)


quit_eval_checks = [
    quit_index_files,
    quit_runs_ranks,
    quit_runs_references,
    quit_runs_coverage,
    quit_retrieval_metrics_ranges,
    quit_reranked_runs_ranks,
    quit_reranked_same_passages,
    quit_rerank_metrics_ranges,
    quit_reader_answers_schema,
    quit_reader_answers_references,
    quit_reader_metrics_ranges,
    llm_accounting_check(eval_key("quit_reranked_runs"), partitions_def=retriever_reranker_partitions),
    llm_accounting_check(
        eval_key("quit_reader_answers"),
        partitions_def=quit_reader_partitions,
        failed_items=errored,
        item_column="question_id",
    ),
]
