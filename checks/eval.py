"""Data-quality checks of the evaluation assets of the three benchmarks (``eval/*`` and
WikiProfile's profiling and analyses).

A check blocks where a downstream asset reads the table (an index, a run, queries, answers,
graded samples, profiles); the reports at the end of the graph fail with ERROR but have
nothing to block. Soft signals only warn: an LLM step's failure rate, a question a retriever
found nothing for, an empty popularity tier. Partitioned assets are checked per partition,
loading that partition alone.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Sequence

import dagster as dg
import polars as pl

from assets.common.text import normalize
from assets.eval import finetune_report, finetune_rules
from assets.eval import leaderboard as board
from assets.eval import metrics as eval_metrics
from assets.eval import profiling_rules as method
from assets.eval import reteco, reteco_judge
from assets.eval.analysis import PROFILE_SCHEMA, TAU_GRID
from assets.eval.benchmarks import PAGES_SCHEMA as PAGE_COLUMNS
from assets.eval.contexts import STRATEGIES as CONTEXT_STRATEGIES
from assets.eval.conversational import STRATEGIES as QUERY_STRATEGIES
from assets.eval.conversational import TURN_METRICS
from assets.eval.finetune import CROSS_ENCODER, DENSE, MULTI_VECTOR, TRAINED_ON, TrainedModel, models_of
from assets.eval.generation import DIMENSIONS, MODES, REFERENCE_METRICS
from assets.eval.profiling import SUMMARY_SCHEMA as TABLE_2_SCHEMA
from assets.eval.quit import wiring
from assets.eval.readers import ANSWER_SCHEMA, CUTOFFS
from assets.eval.recor import BY_DOMAIN, RETECO_GENERATION_SCHEMA
from assets.eval.runs import RUN_SCHEMA
from assets.eval.training import LOG_FILE, log_problems, read_log
from assets.eval.wikiprofile import SAMPLE_SCHEMA
from assets.partitions import (
    DOMAINS,
    domain_partitions,
    domain_retriever_partitions,
    finetune_base_partitions,
    quit_reader_partitions,
    retriever_partitions,
    retriever_reranker_partitions,
    subject_partitions,
)
from assets.quit import published as quit_release
from assets.quit.settings import FinetuneSettings
from assets.recor import published as recor_release
from assets.wikiprofile import published as wikiprofile_release
from assets.wikiprofile.release import BENCHMARK_SCHEMA as wikiprofile_tasks_schema
from checks.factories import (
    WARN,
    errored,
    llm_accounting_check,
    problems_result,
    rejects_check,
    table_check,
    table_problems,
)
from checks.recor import gold_outside
from resources.retrieval import RETRIEVERS_PATH, RUN, RetrieverSpec, load_rerankers, load_retrievers, run_file_uri
from resources.storage import MATERIALIZED_PARTITIONS, exists, read_bytes

# Check names, unique per asset.
INDEX = "index"
RANKS = "ranks"
REFERENCES = "references"
COVERAGE = "coverage"
SAME_PASSAGES = "same_passages"
SCHEMA = "schema"
METRICS = "metrics"
SAMPLING = "sampling"
PROFILE_RULE = "profile_rule"
SHARES = "shares"
TIERS_FILLED = "tiers_filled"
RUN_FILES = "run_files"

EXAMPLES = 5
# Float slack for sums and differences recomputed from a table's own columns.
TOLERANCE = 1e-6
UNIT = (0.0, 1.0)
# ranx metric names (ndcg@10, ndcg_burges@10, recall@100, mrr, map@10): every such column is a mean in [0, 1].
RANX_METRIC = re.compile(r"^(hit_rate|recall|precision|ndcg|ndcg_burges|map|mrr|f1|r_precision)(@\d+)?$")
# Metrics that cannot fall as the cut-off grows.
MONOTONE = ("hit_rate", "recall")
ORACLE_KIND = "oracle"
# The reader's Optimal bound: ``system`` of its rows in the answers, and its row in Table 8.
OPTIMAL_SYSTEM, OPTIMAL_ROW = "optimal", "Optimal"
SPLITS = ("all", "train", "dev", "test")
TIERS = ("top", "bottom")
CONDITIONS = ("generate", "generate_thinking", "verify")
EXCLUDED = (method.EXCLUDED_UNGRADABLE, method.EXCLUDED_DIRECT_INFERENCE)
SUMMARY_COUNTS = method.SUMMARY_COUNTS
SUMMARY_SHARES = method.SUMMARY_SHARES


eval_key = wiring.key


def wikiprofile_key(name: str) -> dg.AssetKey:
    return dg.AssetKey(["wikiprofile", name])


# The benchmarks as the evaluation reads them (assets.eval.benchmarks).
QUIT_QUESTIONS = dg.AssetIn(key=eval_key("quit_questions"))
QUIT_CORPUS = dg.AssetIn(key=eval_key("quit_corpus"))
RECOR_BENCHMARK = dg.AssetIn(key=eval_key("recor_turns"))
WIKIPROFILE_BENCHMARK = dg.AssetIn(key=eval_key("wikiprofile_tasks"))


# --- rules shared by the checks -----------------------------------------------------------------


def typed(frame: pl.DataFrame, columns: dict) -> bool:
    """Every column is there with its type: the rules can read them."""
    return all(c in frame.columns and (t is None or frame.schema[c] == t) for c, t in columns.items())


def _examples(frame: pl.DataFrame, ids: Sequence[str]) -> str:
    rows = frame.select(list(ids)).unique(maintain_order=True).head(EXAMPLES).iter_rows()
    return ", ".join("/".join(str(v) for v in row) for row in rows)


def where(frame: pl.DataFrame, mask: pl.Expr, what: str, ids: Sequence[str]) -> list[str]:
    """One problem naming the rows ``mask`` selects (a null mask selects nothing), or none."""
    bad = frame.filter(mask.fill_null(False))
    return [f"{bad.height} rows {what} (e.g. {_examples(bad, ids)})"] if bad.height else []


def outside(frame: pl.DataFrame, columns: Iterable[str], bounds: tuple[float, float], ids: Sequence[str],
            missing_ok: bool = True) -> list[str]:
    """Values outside ``bounds``; null and NaN count as in range only when ``missing_ok``."""
    lo, hi = bounds
    problems = []
    for c in columns:
        value = pl.col(c)
        missing = value.is_null() | value.is_nan() if frame.schema[c].is_float() else value.is_null()
        bad = (~missing & ~value.is_between(lo, hi)) | (pl.lit(not missing_ok) & missing)
        problems += where(frame, bad, f"with {c} outside [{lo:g}, {hi:g}]" + ("" if missing_ok else " or missing"), ids)
    return problems


def not_in(frame: pl.DataFrame, column: str, vocabulary: Iterable, ids: Sequence[str]) -> list[str]:
    known = sorted(vocabulary)
    return where(frame, ~pl.col(column).is_in(known).fill_null(False), f"with {column} not in {known}", ids)


def unmatched(frame: pl.DataFrame, columns: Sequence[str], reference: pl.DataFrame, reference_columns: Sequence[str],
              what: str) -> list[str]:
    """Distinct ``columns`` of ``frame`` that ``reference`` lacks (read as ``reference_columns``)."""
    absent = [c for c in columns if c not in frame.columns] + [c for c in reference_columns if c not in reference.columns]
    if absent:
        return [f"column {c!r} is missing" for c in absent]
    ref = reference.select([pl.col(r).alias(c) for c, r in zip(columns, reference_columns)]).unique()
    bad = frame.select(list(columns)).unique().join(ref, on=list(columns), how="anti", nulls_equal=True)
    return [f"{bad.height} {what} (e.g. {_examples(bad, columns)})"] if bad.height else []


def differs(frame: pl.DataFrame, column: str, expected: pl.Expr, what: str, ids: Sequence[str]) -> list[str]:
    """Rows where ``column`` is not ``expected`` (both NaN or null counts as equal)."""
    value = pl.col(column)
    both_missing = (value.is_null() | value.is_nan()) & (expected.is_null() | expected.is_nan())
    return where(frame, ~both_missing & ~((value - expected).abs() <= TOLERANCE).fill_null(False), what, ids)


def monotone(frame: pl.DataFrame, ids: Sequence[str]) -> list[str]:
    """hit_rate@k and recall@k never fall as k grows."""
    problems = []
    for name in MONOTONE:
        cuts = sorted(int(c.split("@")[1]) for c in frame.columns if RANX_METRIC.match(c) and c.startswith(f"{name}@"))
        for a, b in zip(cuts, cuts[1:]):
            problems += where(frame, pl.col(f"{name}@{a}") > pl.col(f"{name}@{b}") + TOLERANCE,
                              f"with {name}@{a} above {name}@{b}", ids)
    return problems


def metric_problems(frame: pl.DataFrame, columns: dict, unique: Sequence[str], required: Iterable[str]) -> list[str]:
    """A metric table: its columns, the required ranx metrics, every ranx metric in [0, 1]
    and the cut-off metrics monotone."""
    columns = {**columns, **{m: pl.Float64 for m in required}}
    problems = table_problems(frame, columns, unique, not_null=tuple(columns))
    if not typed(frame, columns):
        return problems
    metrics = [c for c in frame.columns if RANX_METRIC.match(c)]
    return problems + outside(frame, metrics, UNIT, unique, missing_ok=False) + monotone(frame, unique)


def run_problems(run: pl.DataFrame, systems: Iterable[str], per: Sequence[str] = ("question_id",),
                 columns: dict = RUN_SCHEMA) -> list[str]:
    """A TREC-style run: ranks 1..n per query without gaps or repeats, each passage once per
    query, scores never rising down the ranking, a registered system."""
    per = list(per)
    problems = table_problems(run, columns, unique=(*per, "rank"), not_null=tuple(columns))
    if not typed(run, columns):
        return problems
    ids = (*per, "rank")
    problems += table_problems(run, {}, unique=(*per, "passage_id"))
    problems += where(run, pl.col("rank") < 1, "with a rank below 1", ids)
    lists = run.group_by(per).agg(pl.len().alias("passages"), pl.col("rank").max().alias("last"))
    problems += where(lists, pl.col("last") != pl.col("passages"), "(queries) whose ranks are not 1..n", per)
    rises = run.sort(*per, "rank").with_columns(pl.col("score").diff().over(per).alias("rise"))
    problems += where(rises, pl.col("rise") > 0, "scored above the passage ranked before them", ids)
    return problems + not_in(run, "system", systems, ("system",))


def retriever_aliases(with_oracle: bool = True) -> list[str]:
    return sorted(a for a, s in load_retrievers().items() if with_oracle or s.kind != ORACLE_KIND)


def oracle_aliases() -> list[str]:
    return sorted(a for a, s in load_retrievers().items() if s.kind == ORACLE_KIND)


def reranked_systems() -> list[str]:
    """``<retriever>+<reranker>``, as the reranked runs name themselves."""
    return sorted(f"{r}+{k}" for r in load_retrievers() for k in load_rerankers())


# --- the benchmarks the evaluation reads (built or released) -------------------------------------

SOURCE_SPLITS = ("train", "dev", "test")
QUIT_LABELS = (0, 1, 2)
QUESTION_COLUMNS = {c: quit_release.QUESTIONS_SCHEMA[c] for c in ("question_id", "split", "question", "answer", "answers", "hints")}
RECOR_COLUMNS = {c: recor_release.BENCHMARK_SCHEMA[c] for c in ("qid", "domain", "conversation_id", "turn_id", "query", "answer",
                                                                 "gold_doc_ids", "conversation_history")}


@dg.asset_check(asset=eval_key("quit_questions"), name=SCHEMA, blocking=True,
                description="Unique question ids in train/dev/test, each with its question and a non-empty answer pool.")
def quit_questions_schema(quit_questions: pl.DataFrame) -> dg.AssetCheckResult:
    problems = table_problems(quit_questions, QUESTION_COLUMNS, unique=("question_id",), not_null=("question_id", "split", "question"))
    if typed(quit_questions, QUESTION_COLUMNS):
        problems += not_in(quit_questions, "split", SOURCE_SPLITS, ["question_id"])
        problems += where(quit_questions, pl.col("answers").list.len().fill_null(0) == 0, "questions without an answer pool", ["question_id"])
    return problems_result(problems, quit_questions.height)


@dg.asset_check(asset=eval_key("quit_corpus"), name=SCHEMA, blocking=True,
                description="Unique passage ids, each with its text and the question it was written for.")
def quit_corpus_schema(quit_corpus: pl.DataFrame) -> dg.AssetCheckResult:
    """The corpus may hold passages of questions outside the evaluated ones (a slice, or
    one split over the release's corpus of all three): to those it is a distractor."""
    columns = {"passage_id": pl.String, "question_id": pl.String, "text": pl.String}
    return problems_result(table_problems(quit_corpus, columns, unique=("passage_id",), not_null=tuple(columns)), quit_corpus.height)


@dg.asset_check(asset=eval_key("quit_qrels"), name=REFERENCES, blocking=True,
                additional_ins={"quit_questions": QUIT_QUESTIONS, "quit_corpus": QUIT_CORPUS},
                description="One label 0/1/2 per question and passage; every qrel names a benchmark question and a corpus passage; "
                            "every question has a relevant passage.")
def quit_qrels_references(quit_qrels: pl.DataFrame, quit_questions: pl.DataFrame, quit_corpus: pl.DataFrame) -> dg.AssetCheckResult:
    """A qrel outside the corpus can never be retrieved, and a question without any relevant
    passage scores 0 on every metric whatever the retriever does."""
    problems = table_problems(quit_qrels, quit_release.QRELS_SCHEMA, unique=("question_id", "passage_id"), not_null=tuple(quit_release.QRELS_SCHEMA))
    if typed(quit_qrels, quit_release.QRELS_SCHEMA):
        ids = ["question_id", "passage_id"]
        problems += not_in(quit_qrels, "label", QUIT_LABELS, ids)
        problems += unmatched(quit_qrels, ["question_id"], quit_questions, ["question_id"], "qrels of no question in eval/quit_questions")
        problems += unmatched(quit_qrels, ["passage_id"], quit_corpus, ["passage_id"], "qrels outside eval/quit_corpus")
        relevant = quit_qrels.filter(pl.col("label") > 0)
        problems += unmatched(quit_questions, ["question_id"], relevant, ["question_id"], "questions without a relevant passage")
    return problems_result(problems, quit_qrels.height)


quit_source_rejects_reasons = rejects_check(eval_key("quit_source_rejects"), quit_release.REASONS, quit_release.REJECTS.keys)


@dg.asset_check(asset=eval_key("recor_turns"), name=SCHEMA, blocking=True, partitions_def=domain_partitions,
                additional_ins={"recor_corpus": dg.AssetIn(key=eval_key("recor_corpus"))},
                description="Unique turn ids (<conversation>_turn_<n>) of one domain, turns numbered from 1, "
                            "every gold document in the domain's corpus.")
def recor_turns_schema(recor_turns: pl.DataFrame, recor_corpus: pl.DataFrame) -> dg.AssetCheckResult:
    problems = table_problems(recor_turns, RECOR_COLUMNS, unique=("qid",), not_null=("qid", "conversation_id", "turn_id", "query"))
    if typed(recor_turns, RECOR_COLUMNS):
        if recor_turns["domain"].n_unique() > 1:
            problems.append(f"turns of several domains in one partition: {', '.join(sorted(recor_turns['domain'].unique().drop_nulls()))}")
        first = recor_turns.group_by("conversation_id").agg(pl.col("turn_id").min().alias("first"), pl.len().alias("turns"),
                                                           pl.col("turn_id").max().alias("last"))
        problems += where(first, (pl.col("first") != 1) | (pl.col("last") != pl.col("turns")),
                          "conversations whose turns are not numbered 1..n", ["conversation_id"])
        problems += [f"{r['turn']}: gold {r['doc_id']} not in eval/recor_corpus"
                     for r in gold_outside(recor_turns, recor_corpus).head(EXAMPLES).iter_rows(named=True)]
    return problems_result(problems, recor_turns.height)


recor_corpus_schema = table_check(eval_key("recor_corpus"), {"doc_id": pl.String, "content": pl.String}, unique=("doc_id",),
                                  not_null=("doc_id", "content"), partitions_def=domain_partitions)
recor_source_rejects_reasons = rejects_check(eval_key("recor_source_rejects"), recor_release.REASONS, recor_release.REJECTS.keys,
                                             partitions_def=domain_partitions)

TASK_COLUMNS = {c: wikiprofile_tasks_schema[c] for c in ("fact_id", "page_id", "task", "question", "answer", "options")}


@dg.asset_check(asset=eval_key("wikiprofile_tasks"), name=SCHEMA, blocking=True,
                description="One row per fact and task, each with its question; the ten tasks of a fact all present.")
def wikiprofile_tasks_schema_check(wikiprofile_tasks: pl.DataFrame) -> dg.AssetCheckResult:
    problems = table_problems(wikiprofile_tasks, TASK_COLUMNS, unique=("fact_id", "task"), not_null=("fact_id", "page_id", "task", "question"))
    if typed(wikiprofile_tasks, TASK_COLUMNS):
        per_fact = wikiprofile_tasks.group_by("fact_id").len()
        problems += where(per_fact, pl.col("len") != len(wikiprofile_release.TASKS), f"facts without their {len(wikiprofile_release.TASKS)} tasks",
                          ["fact_id"])
    return problems_result(problems, wikiprofile_tasks.height)


@dg.asset_check(asset=eval_key("wikiprofile_pages"), name=REFERENCES, blocking=True,
                additional_ins={"wikiprofile_tasks": WIKIPROFILE_BENCHMARK},
                description="Unique page ids with their mean monthly views; every fact's page among them.")
def wikiprofile_pages_references(wikiprofile_pages: pl.DataFrame, wikiprofile_tasks: pl.DataFrame) -> dg.AssetCheckResult:
    """The popularity report puts a fact in a tier by its page's views: a fact whose page is
    missing would fall out of both tiers."""
    problems = table_problems(wikiprofile_pages, PAGE_COLUMNS, unique=("page_id",), not_null=("page_id",))
    if typed(wikiprofile_pages, PAGE_COLUMNS):
        problems += outside(wikiprofile_pages.drop_nulls("mean_monthly_views"), ["mean_monthly_views"], (0.0, math.inf), ["page_id"])
        problems += unmatched(wikiprofile_tasks.select("page_id").unique(), ["page_id"], wikiprofile_pages, ["page_id"],
                              "fact pages not in eval/wikiprofile_pages")
    return problems_result(problems, wikiprofile_pages.height)


wikiprofile_source_rejects_reasons = rejects_check(eval_key("wikiprofile_source_rejects"), wikiprofile_release.REASONS,
                                                   wikiprofile_release.REJECTS.keys)

source_checks = [quit_questions_schema, quit_corpus_schema, quit_qrels_references, quit_source_rejects_reasons,
                 recor_turns_schema, recor_corpus_schema, recor_source_rejects_reasons,
                 wikiprofile_tasks_schema_check, wikiprofile_pages_references, wikiprofile_source_rejects_reasons]


# --- QUIT: index, runs, reranked runs, readers --------------------------------------------------

INDEX_SCHEMA = {"retriever": pl.String, "kind": pl.String, "documents": pl.Int64, "location": pl.String}


@dg.asset_check(asset=eval_key("quit_index"), name=INDEX, blocking=True, partitions_def=retriever_partitions,
                additional_ins={"benchmark_corpus": QUIT_CORPUS},
                description="One row for the partition's retriever: its registered kind, every corpus passage indexed, the index where it says.")
def quit_index_files(quit_index: pl.DataFrame, benchmark_corpus: pl.DataFrame) -> dg.AssetCheckResult:
    """A run searched against an index that lost passages, or one that is not there, would
    score as a bad retriever."""
    problems = table_problems(quit_index, INDEX_SCHEMA, unique=("retriever",), not_null=("retriever", "kind", "documents"))
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
                    problems.append(f"{alias}: the Oracle reads the qrels, yet {row['documents']} documents are indexed")
            else:
                if row["documents"] != benchmark_corpus.height:
                    problems.append(f"{alias}: {row['documents']} documents indexed, the corpus has {benchmark_corpus.height}")
                if not row["location"] or not exists(row["location"]):
                    problems.append(f"{alias}: no index at {row['location']!r}")
    return problems_result(problems, quit_index.height)


@dg.asset_check(asset=eval_key("quit_runs"), name=RANKS, blocking=True, partitions_def=retriever_partitions,
                description="Ranks 1..n per question, each passage once, scores not rising down the list, a registered retriever.")
def quit_runs_ranks(quit_runs: pl.DataFrame) -> dg.AssetCheckResult:
    return problems_result(run_problems(quit_runs, retriever_aliases()), quit_runs.height)


@dg.asset_check(asset=eval_key("quit_runs"), name=REFERENCES, blocking=True, partitions_def=retriever_partitions,
                additional_ins={"benchmark_questions": QUIT_QUESTIONS, "benchmark_corpus": QUIT_CORPUS},
                description="Every question id is a benchmark question and every passage id a corpus passage.")
def quit_runs_references(quit_runs: pl.DataFrame, benchmark_questions: pl.DataFrame,
                         benchmark_corpus: pl.DataFrame) -> dg.AssetCheckResult:
    problems = (unmatched(quit_runs, ["question_id"], benchmark_questions, ["question_id"], "question ids not in eval/quit_questions")
                + unmatched(quit_runs, ["passage_id"], benchmark_corpus, ["passage_id"], "passage ids not in eval/quit_corpus"))
    return problems_result(problems, quit_runs.height)


@dg.asset_check(asset=eval_key("quit_runs"), name=COVERAGE, partitions_def=retriever_partitions,
                additional_ins={"benchmark_questions": QUIT_QUESTIONS},
                description="Every benchmark question has passages (a question without any scores 0 on every metric).")
def quit_runs_coverage(quit_runs: pl.DataFrame, benchmark_questions: pl.DataFrame) -> dg.AssetCheckResult:
    problems = unmatched(benchmark_questions, ["question_id"], quit_runs, ["question_id"], "benchmark questions without a passage")
    return problems_result(problems, quit_runs.height, WARN)


@dg.asset_check(asset=eval_key("quit_retrieval_metrics"), name=METRICS,
                description="One row per retriever and split (all, train, dev, test); ranx metrics in [0, 1], Hit@k and Recall@k monotone in k; no Oracle.")
def quit_retrieval_metrics_ranges(quit_retrieval_metrics: pl.DataFrame) -> dg.AssetCheckResult:
    frame = quit_retrieval_metrics
    columns = {"retriever": pl.String, "split": pl.String, "questions": pl.Int64}
    problems = metric_problems(frame, columns, ("retriever", "split"), eval_metrics.RETRIEVAL_METRICS)
    if typed(frame, columns):
        problems += where(frame, pl.col("retriever").is_in(oracle_aliases()), "of the Oracle (an upper bound, left out)", ("retriever",))
        problems += split_problems(frame, "retriever")
    return problems_result(problems, frame.height)


def split_problems(frame: pl.DataFrame, system: str) -> list[str]:
    """A QUIT report's split rows: a known split, over at least one question, and an ``all``
    row for every system that has any."""
    overall = frame.filter(pl.col("split") == SPLITS[0])
    return (not_in(frame, "split", SPLITS, (system, "split"))
            + where(frame, pl.col("questions") < 1, "over no questions", (system, "split"))
            + unmatched(frame, [system], overall, [system], f"{system}s without an {SPLITS[0]!r} row"))


@dg.asset_check(asset=eval_key("quit_reranked_runs"), name=RANKS, blocking=True, partitions_def=retriever_reranker_partitions,
                description="Ranks 1..n per question, each passage once, scores not rising down the list, a registered retriever+reranker.")
def quit_reranked_runs_ranks(quit_reranked_runs: pl.DataFrame) -> dg.AssetCheckResult:
    return problems_result(run_problems(quit_reranked_runs, reranked_systems()), quit_reranked_runs.height)


@dg.asset_check(asset=eval_key("quit_reranked_runs"), name=SAME_PASSAGES, blocking=True, partitions_def=retriever_reranker_partitions,
                additional_ins={"quit_runs": dg.AssetIn(key=eval_key("quit_runs").path,
                                                        partition_mapping=dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="retriever"))},
                description="The retrieved passages of each question, none added or lost, and below the reranker's top_k in their retrieved places.")
def quit_reranked_same_passages(quit_reranked_runs: pl.DataFrame, quit_runs: pl.DataFrame) -> dg.AssetCheckResult:
    """A reranker only reorders: its run holds what the retriever found (so its ids resolve
    wherever the retrieved run's do), and the tail it does not rerank stays in place."""
    columns = {"question_id": pl.String, "passage_id": pl.String, "rank": pl.Int32}
    problems = table_problems(quit_reranked_runs, {**columns, "system": pl.String}) + table_problems(quit_runs, columns)
    if problems:
        return problems_result(problems, quit_reranked_runs.height)
    rerankers = load_rerankers()
    top_k = {s: rerankers[s.split("+", 1)[-1]].top_k for s in quit_reranked_runs["system"].unique().drop_nulls()
             if s.split("+", 1)[-1] in rerankers}
    joined = quit_reranked_runs.select(*columns, "system").join(
        quit_runs.select("question_id", "passage_id", pl.col("rank").alias("retrieved_rank")),
        on=["question_id", "passage_id"], how="full", coalesce=True,
    ).with_columns(pl.col("system").replace_strict(top_k, default=None, return_dtype=pl.Int64).alias("top_k"))
    ids = ("question_id", "passage_id")
    problems = (where(joined, pl.col("retrieved_rank").is_null(), "reranked but never retrieved", ids)
                + where(joined, pl.col("rank").is_null(), "retrieved but missing from the reranked run", ids)
                + where(joined, (pl.col("retrieved_rank") > pl.col("top_k")) & (pl.col("rank") != pl.col("retrieved_rank")),
                        "below the reranked top_k but moved from their retrieved rank", ids))
    return problems_result(problems, quit_reranked_runs.height)


@dg.asset_check(asset=eval_key("quit_rerank_metrics"), name=METRICS,
                description="One row per retriever+reranker and split (all, train, dev, test), named by both, Oracle flagged; ranx "
                            "metrics in [0, 1], Hit@k and Recall@k monotone in k.")
def quit_rerank_metrics_ranges(quit_rerank_metrics: pl.DataFrame) -> dg.AssetCheckResult:
    frame = quit_rerank_metrics
    columns = {"system": pl.String, "retriever": pl.String, "reranker": pl.String, "oracle": pl.Boolean, "split": pl.String,
               "questions": pl.Int64}
    problems = metric_problems(frame, columns, ("system", "split"), eval_metrics.RETRIEVAL_METRICS)
    if typed(frame, columns):
        problems += split_problems(frame, "system")
        problems += not_in(frame, "system", reranked_systems(), ("system",))
        problems += where(frame, pl.col("system") != pl.concat_str("retriever", pl.lit("+"), "reranker"),
                          "whose system is not retriever+reranker", ("system",))
        problems += where(frame, pl.col("oracle") != pl.col("retriever").is_in(oracle_aliases()),
                          "with the Oracle flag wrong", ("system",))
    return problems_result(problems, frame.height)


def reader_systems() -> list[str]:
    """What a reader reads from: a retriever's run, a reranked run, or the Optimal bound."""
    return [*retriever_aliases(), *reranked_systems(), OPTIMAL_SYSTEM]


READER_KEY = ("question_id", "system", "k", "strategy")


@dg.asset_check(asset=eval_key("quit_reader_answers"), name=SCHEMA, blocking=True, partitions_def=quit_reader_partitions,
                description="One reader; one answer per question, system, k and context strategy (the Optimal rows without either); an exact match is correct.")
def quit_reader_answers_schema(quit_reader_answers: pl.DataFrame) -> dg.AssetCheckResult:
    frame = quit_reader_answers
    problems = table_problems(frame, ANSWER_SCHEMA, READER_KEY, not_null=("question_id", "reader", "system", "em", "correct"))
    if typed(frame, ANSWER_SCHEMA):
        optimal = pl.col("system") == OPTIMAL_SYSTEM
        if frame["reader"].n_unique() > 1:
            problems.append(f"{frame['reader'].n_unique()} readers in one reader's partition")
        problems += not_in(frame, "system", reader_systems(), ("system",))
        problems += where(frame, ~optimal & ~pl.col("k").is_in(list(CUTOFFS)).fill_null(False), f"with k not in {list(CUTOFFS)}", READER_KEY)
        problems += where(frame, ~optimal & ~pl.col("strategy").is_in(sorted(CONTEXT_STRATEGIES)).fill_null(False),
                          f"with a context strategy not in {sorted(CONTEXT_STRATEGIES)}", READER_KEY)
        problems += where(frame, optimal & (pl.col("k").is_not_null() | pl.col("strategy").is_not_null()),
                          "of the Optimal bound with a k or strategy", READER_KEY)
        problems += where(frame, pl.col("em") & ~pl.col("correct"), "with an exact match not counted correct", READER_KEY)
    return problems_result(problems, frame.height)


@dg.asset_check(asset=eval_key("quit_reader_answers"), name=REFERENCES, blocking=True, partitions_def=quit_reader_partitions,
                additional_ins={"benchmark_questions": QUIT_QUESTIONS},
                description="Every answer is to a benchmark question, and every benchmark question has its Optimal bound.")
def quit_reader_answers_references(quit_reader_answers: pl.DataFrame, benchmark_questions: pl.DataFrame) -> dg.AssetCheckResult:
    problems = unmatched(quit_reader_answers, ["question_id"], benchmark_questions, ["question_id"], "question ids not in eval/quit_questions")
    if "system" in quit_reader_answers.columns:
        optimal = quit_reader_answers.filter(pl.col("system") == OPTIMAL_SYSTEM)
        problems += unmatched(benchmark_questions, ["question_id"], optimal, ["question_id"], "benchmark questions without an Optimal row")
    return problems_result(problems, quit_reader_answers.height)


@dg.asset_check(asset=eval_key("quit_reader_metrics"), name=METRICS,
                description="One row per system, k, strategy, reader and split (all, train, dev, test); EM and judge in [0, 1]; "
                            "one Optimal row per reader and split.")
def quit_reader_metrics_ranges(quit_reader_metrics: pl.DataFrame) -> dg.AssetCheckResult:
    frame = quit_reader_metrics
    columns = {"system": pl.String, "k": pl.Int32, "strategy": pl.String, "reader": pl.String, "em": pl.Float64, "judge": pl.Float64,
               "split": pl.String, "questions": pl.Int64}
    key = ("system", "k", "strategy", "reader", "split")
    problems = table_problems(frame, columns, key, not_null=("system", "strategy", "reader", "split"))
    if typed(frame, columns):
        problems += outside(frame, ["em", "judge"], UNIT, key, missing_ok=False)
        problems += split_problems(frame, "reader")
        optimal = frame.group_by("reader", "split").agg((pl.col("system") == OPTIMAL_ROW).sum().alias("optimal_rows"))
        problems += where(optimal, pl.col("optimal_rows") != 1, f"(readers and splits) without exactly one {OPTIMAL_ROW} row",
                          ("reader", "split"))
    return problems_result(problems, frame.height)


# --- RECOR: queries, runs, generation -------------------------------------------------------

QUERY_SCHEMA = {"domain": pl.String, "qid": pl.String, "conversation_id": pl.String, "turn_id": pl.Int32,
                "strategy": pl.String, "query": pl.String, "fallback": pl.Boolean}


@dg.asset_check(asset=eval_key("recor_queries"), name=SCHEMA, blocking=True, partitions_def=domain_partitions,
                description="Each turn's query under each strategy of assets.eval.conversational.STRATEGIES, none empty, in a known domain.")
def recor_queries_schema(recor_queries: pl.DataFrame) -> dg.AssetCheckResult:
    frame = recor_queries
    problems = table_problems(frame, QUERY_SCHEMA, ("qid", "strategy"), not_null=tuple(QUERY_SCHEMA))
    if typed(frame, QUERY_SCHEMA):
        ids = ("qid", "strategy")
        problems += not_in(frame, "strategy", QUERY_STRATEGIES, ids) + not_in(frame, "domain", DOMAINS, ("domain",))
        problems += where(frame, pl.col("turn_id") < 1, "with a turn below 1", ids)
        problems += where(frame, pl.col("query").str.strip_chars() == "", "with an empty query", ids)
        turns = frame.group_by("qid").agg(pl.col("strategy").n_unique().alias("strategies"))
        problems += where(turns, pl.col("strategies") != len(QUERY_STRATEGIES), f"(turns) without all {len(QUERY_STRATEGIES)} strategies", ("qid",))
    return problems_result(problems, frame.height)


@dg.asset_check(asset=eval_key("recor_queries"), name=REFERENCES, blocking=True, partitions_def=domain_partitions,
                additional_ins={"benchmark": RECOR_BENCHMARK},
                description="Queries for exactly the domain's benchmark turns.")
def recor_queries_references(recor_queries: pl.DataFrame, benchmark: pl.DataFrame) -> dg.AssetCheckResult:
    problems = (unmatched(recor_queries, ["qid"], benchmark, ["qid"], "turns not in eval/recor_turns")
                + unmatched(benchmark, ["qid"], recor_queries, ["qid"], "benchmark turns without queries"))
    return problems_result(problems, recor_queries.height)


RECOR_RUN_SCHEMA = {**RUN_SCHEMA, "strategy": pl.String, "domain": pl.String}


@dg.asset_check(asset=eval_key("recor_runs"), name=RANKS, blocking=True, partitions_def=domain_retriever_partitions,
                description="Per turn and strategy: ranks 1..n, each document once, scores not rising; a registered retriever, known strategy and domain.")
def recor_runs_ranks(recor_runs: pl.DataFrame) -> dg.AssetCheckResult:
    problems = run_problems(recor_runs, retriever_aliases(with_oracle=False), ("question_id", "strategy"), RECOR_RUN_SCHEMA)
    if typed(recor_runs, RECOR_RUN_SCHEMA):
        problems += not_in(recor_runs, "strategy", QUERY_STRATEGIES, ("strategy",)) + not_in(recor_runs, "domain", DOMAINS, ("domain",))
    return problems_result(problems, recor_runs.height)


@dg.asset_check(asset=eval_key("recor_runs"), name=REFERENCES, blocking=True, partitions_def=domain_retriever_partitions,
                additional_ins={"recor_queries": dg.AssetIn(key=eval_key("recor_queries").path, partition_mapping=BY_DOMAIN),
                                "corpus": dg.AssetIn(key=eval_key("recor_corpus"), partition_mapping=BY_DOMAIN)},
                description="Every turn and strategy searched is one of the domain's queries; every document is in the domain's corpus.")
def recor_runs_references(recor_runs: pl.DataFrame, recor_queries: pl.DataFrame, corpus: pl.DataFrame) -> dg.AssetCheckResult:
    problems = (unmatched(recor_runs, ["question_id", "strategy"], recor_queries, ["qid", "strategy"], "turn+strategy not in eval/recor_queries")
                + unmatched(recor_runs, ["passage_id"], corpus, ["doc_id"], "document ids not in eval/recor_corpus"))
    return problems_result(problems, recor_runs.height)


@dg.asset_check(asset=eval_key("recor_retrieval_metrics"), name=METRICS, blocking=True,
                description="One row per turn with gold documents, retriever and strategy; nDCG@10, MAP@10, Recall@10 and MRR in [0, 1].")
def recor_retrieval_metrics_ranges(recor_retrieval_metrics: pl.DataFrame) -> dg.AssetCheckResult:
    """Blocking: the generation picks its retrieval configuration by these scores."""
    frame = recor_retrieval_metrics
    columns = {"domain": pl.String, "conversation_id": pl.String, "qid": pl.String, "turn_id": pl.Int32, "retriever": pl.String,
               "strategy": pl.String}
    key = ("qid", "retriever", "strategy")
    problems = metric_problems(frame, columns, key, TURN_METRICS)
    if typed(frame, columns):
        problems += not_in(frame, "strategy", QUERY_STRATEGIES, key) + not_in(frame, "domain", DOMAINS, ("domain",))
        problems += not_in(frame, "retriever", retriever_aliases(with_oracle=False), ("retriever",))
    return problems_result(problems, frame.height)


@dg.asset_check(asset=eval_key("reteco_retrieval"), name=METRICS,
                description="One row per target turn and run; every run scores every target turn; the depth group is the turn's; "
                            "nDCG@10, MAP@10, Recall@10 and MRR in [0, 1].")
def reteco_retrieval_ranges(reteco_retrieval: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key = reteco_retrieval, ("qid", "run")
    columns = {**reteco.TURN_SCHEMA, "run": pl.String, "retriever": pl.String, "strategy": pl.String}
    problems = metric_problems(frame, columns, key, reteco.METRICS)
    if typed(frame, columns):
        problems += where(frame, pl.col("depth") != reteco.depth_expr(), "whose depth group is not their turn's", key)
        problems += where(frame, pl.col("task_qid") != reteco.task_qid_expr(), "whose task id is not <conversation>#turn<n>", key)
        turns = frame.group_by("domain").agg(pl.col("qid").n_unique().alias("turns"))
        per_run = frame.group_by("domain", "run").len().join(turns, on="domain").filter(pl.col("len") != pl.col("turns"))
        problems += where(per_run, pl.lit(True), "(domain, run) scoring fewer or more turns than the domain's targets",
                          ("domain", "run"))
    return problems_result(problems, frame.height)


# Problems of the registry's run files the check's metadata names; the rest are counted.
PROBLEMS_SHOWN = 20


def recor_run_retrievers() -> list[RetrieverSpec]:
    """The registry's run file retrievers that RECOR's evaluation runs (not one trained on
    another benchmark, as ``assets.partitions`` leaves it out of RECOR's partitions)."""
    return [s for _, s in sorted(load_retrievers().items()) if s.kind == RUN and s.trained_on in (None, "recor")]


def registry_runs(specs: Iterable[RetrieverSpec], benchmark: pl.DataFrame, corpus: pl.DataFrame) -> list[reteco.Checked]:
    """Each run file ``specs`` name for the domains of ``benchmark``, read raw by RETECO's
    rules (``reteco.check_run``) against the target turns and documents of the domains it
    serves: its own domain, or every domain for a template without ``{part}``. A missing file,
    or a file whose domains share a task query id, is a file the scorer cannot read."""
    domains = sorted(set(benchmark["domain"]))
    targets: dict[tuple[str, ...], reteco.Targets] = {}
    checked = []
    for spec in specs:
        served: dict[str, list[str]] = {}
        for domain in domains:
            served.setdefault(run_file_uri(spec, "recor", domain), []).append(domain)
        for uri, parts in served.items():
            source, key = f"{spec.alias}: {uri}", tuple(parts)
            try:
                if key not in targets:
                    targets[key] = reteco.Targets.from_tables(benchmark.filter(pl.col("domain").is_in(parts)),
                                                              corpus.filter(pl.col("domain").is_in(parts))["doc_id"])
            except ValueError as e:
                checked.append(unreadable(source, f"{e}; give each domain its own file ({{part}} in the template)"))
                continue
            try:
                data = read_bytes(uri)
            except FileNotFoundError:
                checked.append(unreadable(source, f"no run file (template {spec.path!r}) for {', '.join(parts)}"))
                continue
            checked.append(reteco.check_run(data, source, targets[key]))
    return checked


def unreadable(source: str, why: str) -> reteco.Checked:
    return reteco.Checked(source, "run", [reteco.Problem(None, "file", True, why)], {})


def run_files_result(checked: list[reteco.Checked]) -> dg.AssetCheckResult:
    """Passed when no file has a problem; otherwise ERROR when one cannot be scored and WARN
    when the scorer only changes something. Errors are listed first, each problem with its
    file and line, at most :data:`PROBLEMS_SHOWN` of them."""
    problems = sorted(((c.source, p) for c in checked for p in c.problems), key=lambda found: not found[1].fatal)
    errors = sum(p.fatal for _, p in problems)
    shown = [f"{source}: {p}" for source, p in problems[:PROBLEMS_SHOWN]]
    if len(problems) > PROBLEMS_SHOWN:
        shown.append(f"... and {len(problems) - PROBLEMS_SHOWN} more")
    return dg.AssetCheckResult(passed=not problems, severity=dg.AssetCheckSeverity.ERROR if errors else WARN, metadata={
        "run_files": len(checked), "errors": errors, "warnings": len(problems) - errors,
        "problems": dg.MetadataValue.md("\n".join(f"- {line}" for line in shown) or "none"),
        "summaries": dg.MetadataValue.md("\n\n".join(f"```\n{c.summary()}\n```" for c in checked))})


@dg.asset_check(asset=eval_key("reteco_retrieval"), name=RUN_FILES,
                additional_ins={"benchmark": wiring.materialized("recor_turns"),
                                "corpus": dg.AssetIn(key=eval_key("recor_corpus"), partition_mapping=dg.AllPartitionMapping(),
                                                     metadata={**MATERIALIZED_PARTITIONS, "columns": ["domain", "doc_id"]})},
                description="Every run file of a kind: run retriever in the registry, for each evaluated domain, read raw by "
                            "RETECO Track 2's rules against the domain's target turns and documents: ERROR when a file cannot "
                            "be scored, WARN when the scorer changes something (a repeated document removed, an unknown one "
                            "discarded, a missing turn scored 0, a line ignored); each problem named by file and line.")
def reteco_run_files(benchmark: pl.DataFrame, corpus: pl.DataFrame) -> dg.AssetCheckResult:
    """The files as a participant would submit them, before ``eval/recor_runs`` keeps the top
    100 of each turn: what the task's scorer would say of them, not what the project made of them."""
    specs = recor_run_retrievers()
    if not specs:
        return dg.AssetCheckResult(passed=True, metadata={
            "run_files": 0, "problems": dg.MetadataValue.md(f"none: no kind: run retriever in {RETRIEVERS_PATH}")})
    return run_files_result(registry_runs(specs, benchmark, corpus))

RETECO_GENERATION_KEY = ("qid", "system", "subtrack")


@dg.asset_check(asset=eval_key("reteco_generation"), name=SCHEMA, blocking=True, partitions_def=domain_partitions,
                description="One row per target turn, system and sub-track (2b, 2c); every system scores every target turn "
                            "of the domain; each dimension a normalized 1-5 integer, (s - 1) / 4 in {0, 0.25, ..., 1}; a turn "
                            "without an answer 0 on every dimension; 2c rows name their run and carry its nDCG@10, MAP@10, "
                            "Recall@10, MRR in [0, 1], 2b rows neither.")
def reteco_generation_schema(reteco_generation: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key = reteco_generation, RETECO_GENERATION_KEY
    problems = table_problems(frame, RETECO_GENERATION_SCHEMA, key,
                              not_null=(*reteco.TURN_SCHEMA, "system", "subtrack", *reteco.DIMENSIONS, "answered"))
    if typed(frame, RETECO_GENERATION_SCHEMA):
        problems += not_in(frame, "subtrack", reteco_judge.SUBTRACKS, key)
        problems += outside(frame, reteco.DIMENSIONS, UNIT, key)
        problems += where(frame, pl.any_horizontal(((pl.col(d) * 4) - (pl.col(d) * 4).round()).abs() > TOLERANCE
                                                   for d in reteco.DIMENSIONS),
                          "with a dimension that is no normalized 1-5 integer", key)
        problems += where(frame, ~pl.col("answered") & pl.any_horizontal(pl.col(d) != 0 for d in reteco.DIMENSIONS),
                          "scored above 0 without an answer", key)
        is_2c = pl.col("subtrack") == "2c"
        problems += where(frame, is_2c & (pl.col("run").is_null() | pl.any_horizontal(pl.col(m).is_null() for m in reteco.METRICS)),
                          "in 2c without their run's retrieval scores", key)
        problems += where(frame, ~is_2c & (pl.col("run").is_not_null() | pl.any_horizontal(pl.col(m).is_not_null()
                                                                                           for m in reteco.METRICS)),
                          "in 2b with a run", key)
        problems += outside(frame, reteco.METRICS, UNIT, key)
        turns = frame.select("qid").n_unique()
        short = frame.group_by("system", "subtrack").len().filter(pl.col("len") != turns)
        problems += where(short, pl.lit(True), f"(system, sub-track) not scoring each of the {turns} target turns once",
                          ("system", "subtrack"))
    return problems_result(problems, frame.height)


@dg.asset_check(asset=eval_key("reteco_leaderboard"), name=METRICS,
                description="One row per sub-track and run; 2a rows hold nDCG@10, MAP@10, Recall@10, MRR and no judge "
                            "dimension, 2b rows the five dimensions and no retrieval figure, 2c rows both; every figure in "
                            "[0, 1]; the macro the mean of the five dimensions.")
def reteco_leaderboard_ranges(reteco_leaderboard: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key = reteco_leaderboard, ("subtrack", "run")
    retrieval = [reteco.METRIC_NAMES[m] for m in reteco.METRICS]
    judged = [*reteco.DIMENSIONS, "macro"]
    columns = {"subtrack": pl.String, "run": pl.String, "turns": pl.Int64, **{c: pl.Float64 for c in (*retrieval, *judged)}}
    problems = table_problems(frame, columns, key, not_null=("subtrack", "run", "turns"))
    if typed(frame, columns):
        problems += not_in(frame, "subtrack", ["2a", *reteco_judge.SUBTRACKS], key)
        problems += outside(frame, [*retrieval, *judged], UNIT, key)
        for subtrack, present, absent in (("2a", retrieval, judged), ("2b", judged, retrieval), ("2c", [*retrieval, *judged], [])):
            rows = frame.filter(pl.col("subtrack") == subtrack)
            problems += where(rows, pl.any_horizontal(pl.col(c).is_null() for c in present), "missing a figure of their sub-track", key)
            if absent:
                problems += where(rows, pl.any_horizontal(pl.col(c).is_not_null() for c in absent),
                                  "holding another sub-track's figure", key)
        problems += differs(frame, "macro", pl.mean_horizontal(*reteco.DIMENSIONS), "whose macro is not the dimensions' mean", key)
    return problems_result(problems, frame.height)


# Reference-answer scores: ROUGE-L and METEOR in [0, 1]; unrescaled BERTScore F1 is a mean of
# cosines, so [-1, 1].
REFERENCE_SCORES = tuple(REFERENCE_METRICS)
SCORES = (*DIMENSIONS, *REFERENCE_SCORES)
UNIT_SCORES = tuple(s for s in SCORES if s != "bertscore_f1")
COSINE = (-1.0, 1.0)
GENERATION_SCHEMA = {"domain": pl.String, "qid": pl.String, "generator": pl.String, "mode": pl.String, "answer": pl.String,
                     **{s: pl.Float64 for s in SCORES}}
GENERATION_KEY = ("qid", "generator", "mode")
NO_RETRIEVAL = "no_retrieval"


@dg.asset_check(asset=eval_key("recor_generation"), name=SCHEMA, blocking=True, partitions_def=domain_partitions,
                description="One answer per turn, generator and mode; judged dimensions, ROUGE-L and METEOR in [0, 1], BERTScore F1 in [-1, 1]; no faithfulness without passages, no score without an answer, every answer (an empty one too) scored against the reference.")
def recor_generation_schema(recor_generation: pl.DataFrame) -> dg.AssetCheckResult:
    frame = recor_generation
    problems = table_problems(frame, GENERATION_SCHEMA, GENERATION_KEY, not_null=("domain", "qid", "generator", "mode"))
    if typed(frame, GENERATION_SCHEMA):
        problems += not_in(frame, "mode", MODES, GENERATION_KEY) + not_in(frame, "domain", DOMAINS, ("domain",))
        problems += outside(frame, UNIT_SCORES, UNIT, GENERATION_KEY) + outside(frame, ["bertscore_f1"], COSINE, GENERATION_KEY)
        problems += where(frame, (pl.col("mode") == NO_RETRIEVAL) & pl.col("faithfulness").is_not_null(),
                          "judged faithful to passages they were not given", GENERATION_KEY)
        problems += where(frame, pl.col("answer").is_null() & pl.any_horizontal(pl.col(s).is_not_null() for s in SCORES),
                          "scored without an answer", GENERATION_KEY)
        problems += where(frame, pl.col("answer").is_not_null() & pl.any_horizontal(pl.col(s).is_null() for s in REFERENCE_SCORES),
                          "answered without a reference score", GENERATION_KEY)
    return problems_result(problems, frame.height)


@dg.asset_check(asset=eval_key("recor_generation"), name=REFERENCES, blocking=True, partitions_def=domain_partitions,
                additional_ins={"benchmark": RECOR_BENCHMARK},
                description="Answers to the domain's benchmark turns, every turn in every mode by every generator.")
def recor_generation_references(recor_generation: pl.DataFrame, benchmark: pl.DataFrame) -> dg.AssetCheckResult:
    problems = unmatched(recor_generation, ["qid"], benchmark, ["qid"], "turns not in eval/recor_turns")
    if not problems and "generator" in recor_generation.columns:
        expected = (benchmark.select("qid").unique().join(recor_generation.select("generator").unique(), how="cross")
                    .join(pl.DataFrame({"mode": MODES}), how="cross"))
        problems += unmatched(expected, list(GENERATION_KEY), recor_generation, list(GENERATION_KEY), "turn+generator+mode without an answer row")
    return problems_result(problems, recor_generation.height)


@dg.asset_check(asset=eval_key("recor_generation_metrics"), name=METRICS,
                description="One row per generator and mode; judged dimensions, overall, ROUGE-L and METEOR in [0, 1], BERTScore F1 in [-1, 1].")
def recor_generation_metrics_ranges(recor_generation_metrics: pl.DataFrame) -> dg.AssetCheckResult:
    frame = recor_generation_metrics
    columns = {"generator": pl.String, "mode": pl.String, **{s: pl.Float64 for s in (*DIMENSIONS, "overall", *REFERENCE_SCORES)}}
    key = ("generator", "mode")
    problems = table_problems(frame, columns, key, not_null=key)
    if typed(frame, columns):
        problems += not_in(frame, "mode", MODES, key) + outside(frame, [c for c in columns if c not in (*key, "bertscore_f1")], UNIT, key)
        problems += outside(frame, ["bertscore_f1"], COSINE, key)
    return problems_result(problems, frame.height)


# --- WikiProfile: samples, grades, profiles ---------------------------------------------------

SAMPLE_KEY = ("fact_id", "task", "thinking", "sample")
QUESTION = ("fact_id", "task", "thinking")
IS_MC = pl.col("task").is_in(list(method.MC_TASKS))


@dg.asset_check(asset=wikiprofile_key("responses"), name=SCHEMA, blocking=True, partitions_def=subject_partitions,
                description="One row per fact, task, thinking setting and sample; known tasks, thinking only on knowledge questions, a gold slot exactly on multiple choice, a response or its error.")
def responses_schema(responses: pl.DataFrame) -> dg.AssetCheckResult:
    frame = responses
    problems = table_problems(frame, SAMPLE_SCHEMA, SAMPLE_KEY, not_null=SAMPLE_KEY)
    if typed(frame, SAMPLE_SCHEMA):
        problems += not_in(frame, "task", method.TASKS, SAMPLE_KEY)
        problems += where(frame, pl.col("thinking") & ~pl.col("task").is_in(list(method.KNOWLEDGE_TASKS)),
                          "asked with thinking though not a knowledge question", SAMPLE_KEY)
        problems += where(frame, pl.col("sample") < 0, "with a negative sample index", SAMPLE_KEY)
        problems += where(frame, IS_MC & ~pl.col("gold_slot").is_between(0, len(method.LETTERS) - 1).fill_null(False),
                          "of multiple choice without a gold slot", SAMPLE_KEY)
        problems += where(frame, ~IS_MC & pl.col("gold_slot").is_not_null(), "with a gold slot outside multiple choice", SAMPLE_KEY)
        problems += where(frame, pl.col("response").is_null() & pl.col("error").is_null(), "with neither a response nor an error", SAMPLE_KEY)
    return problems_result(problems, frame.height)


@dg.asset_check(asset=wikiprofile_key("responses"), name=SAMPLING, blocking=True, partitions_def=subject_partitions,
                description="Every question asked n times (samples 0..n-1, the same n everywhere); the gold in every multiple-choice slot equally often.")
def responses_sampling(responses: pl.DataFrame) -> dg.AssetCheckResult:
    """g(q) compares shares across questions: a question with fewer samples, or options whose
    gold sits in one slot more often, biases its grade."""
    frame = responses
    columns = {c: SAMPLE_SCHEMA[c] for c in (*SAMPLE_KEY, "gold_slot")}
    problems = table_problems(frame, columns)
    if not problems and frame.height:
        asked = frame.group_by(QUESTION).agg(pl.len().alias("samples"), pl.col("sample").max().alias("last"))
        n = asked["samples"].max()
        problems += where(asked, (pl.col("samples") != n) | (pl.col("last") != n - 1), f"(questions) without samples 0..{n - 1}", QUESTION)
        slots = frame.filter(IS_MC).group_by(*QUESTION, "gold_slot").len()
        balance = slots.group_by(QUESTION).agg(pl.col("len").n_unique().alias("counts"), pl.col("gold_slot").max().alias("last"),
                                               pl.len().alias("slots"))
        problems += where(balance, (pl.col("counts") != 1) | (pl.col("last") != pl.col("slots") - 1),
                          "(multiple-choice questions) with the gold in some slots more often", QUESTION)
    return problems_result(problems, frame.height)


@dg.asset_check(asset=wikiprofile_key("responses"), name=REFERENCES, blocking=True, partitions_def=subject_partitions,
                additional_ins={"benchmark": WIKIPROFILE_BENCHMARK},
                description="Every sample is of a benchmark question, every benchmark question is asked, every gold slot is one of its options.")
def responses_references(responses: pl.DataFrame, benchmark: pl.DataFrame) -> dg.AssetCheckResult:
    problems = (unmatched(responses, ["fact_id", "task"], benchmark, ["fact_id", "task"], "fact+task not in eval/wikiprofile_tasks")
                + unmatched(benchmark, ["fact_id", "task"], responses, ["fact_id", "task"], "benchmark questions never asked"))
    if not problems and "gold_slot" in responses.columns and "options" in benchmark.columns:
        slots = responses.join(benchmark.select("fact_id", "task", pl.col("options").list.len().alias("options")), on=["fact_id", "task"])
        problems += where(slots, pl.col("gold_slot") >= pl.col("options"), "with the gold slot past the options", SAMPLE_KEY)
    return problems_result(problems, responses.height)


GRADED_SCHEMA = {**SAMPLE_SCHEMA, "label": pl.String, "model": pl.String}


@dg.asset_check(asset=wikiprofile_key("graded_responses"), name=SCHEMA, blocking=True, partitions_def=subject_partitions,
                description=f"One label per sample, from {', '.join(method.LABELS)}; one model.")
def graded_responses_schema(graded_responses: pl.DataFrame) -> dg.AssetCheckResult:
    frame = graded_responses
    problems = table_problems(frame, GRADED_SCHEMA, SAMPLE_KEY, not_null=(*SAMPLE_KEY, "label", "model"))
    if typed(frame, GRADED_SCHEMA):
        problems += not_in(frame, "label", method.LABELS, SAMPLE_KEY)
        if frame["model"].n_unique() > 1:
            problems.append(f"{frame['model'].n_unique()} models in one subject's partition")
    return problems_result(problems, frame.height)


@dg.asset_check(asset=wikiprofile_key("graded_responses"), name=REFERENCES, blocking=True, partitions_def=subject_partitions,
                additional_ins={"responses": dg.AssetIn(key=wikiprofile_key("responses").path)},
                description="Exactly the subject's sampled responses are graded.")
def graded_responses_references(graded_responses: pl.DataFrame, responses: pl.DataFrame) -> dg.AssetCheckResult:
    key = list(SAMPLE_KEY)
    problems = (unmatched(graded_responses, key, responses, key, "graded samples not in wikiprofile/responses")
                + unmatched(responses, key, graded_responses, key, "responses left ungraded"))
    return problems_result(problems, graded_responses.height)


PROFILE_KEY = ("model", "fact_id")
KNOWLEDGE_FLAGS = ("encodes", "knows", "knows_thinking")
PROFILE_KINDS = (*method.PROFILES, *method.UNDECIDED.values(), *EXCLUDED)
THINKING_MISSING = pl.col("thinking_run") == method.THINKING_MISSING


@dg.asset_check(asset=wikiprofile_key("profiles"), name=SCHEMA, blocking=True, partitions_def=subject_partitions,
                description=f"One profile per fact, from {', '.join(PROFILE_KINDS)}; the model's thinking run "
                            f"{' or '.join(method.THINKING_RUNS)} for all its facts.")
def profiles_schema(profiles: pl.DataFrame) -> dg.AssetCheckResult:
    problems = table_problems(profiles, PROFILE_SCHEMA, PROFILE_KEY, not_null=(*PROFILE_KEY, "profile", "thinking_run"))
    if typed(profiles, PROFILE_SCHEMA):
        problems += not_in(profiles, "profile", PROFILE_KINDS, PROFILE_KEY)
        problems += not_in(profiles, "thinking_run", method.THINKING_RUNS, PROFILE_KEY)
        mixed = profiles.group_by("model").agg(pl.col("thinking_run").n_unique().alias("runs")).filter(pl.col("runs") > 1)
        problems += [f"models with facts both with and without a thinking run: {', '.join(sorted(mixed['model']))}"] if mixed.height else []
    return problems_result(problems, profiles.height)


@dg.asset_check(asset=wikiprofile_key("profiles"), name=PROFILE_RULE, blocking=True, partitions_def=subject_partitions,
                description="Each profile is what encodes / knows / knows with thinking make it; an ungradable fact has none of "
                            "the three; knows with thinking is null exactly when the thinking run is missing.")
def profiles_follow_the_rule(profiles: pl.DataFrame) -> dg.AssetCheckResult:
    """The reports count profiles and flags separately; a row where they disagree counts twice
    differently. A missing thinking run is a legitimate outcome (KT null, profile undecided);
    a null KT beside a thinking run, or a KT without one, is a broken table."""
    problems = table_problems(profiles, PROFILE_SCHEMA)
    if not problems:
        flags = pl.any_horizontal(pl.col(f).is_not_null() for f in KNOWLEDGE_FLAGS)
        ungradable = pl.col("profile") == method.EXCLUDED_UNGRADABLE
        problems += where(profiles, ungradable & flags, "ungradable yet with encodes / knows set", PROFILE_KEY)
        problems += where(profiles, ~ungradable & (pl.col("encodes").is_null() | pl.col("knows").is_null()),
                          "profiled without encodes and knows", PROFILE_KEY)
        problems += where(profiles, ~ungradable & ~THINKING_MISSING & pl.col("knows_thinking").is_null(),
                          "profiled with a thinking run but without knows_thinking", PROFILE_KEY)
        problems += where(profiles, THINKING_MISSING & pl.col("knows_thinking").is_not_null(),
                          "with knows_thinking though the thinking run is missing", PROFILE_KEY)
        gradable = profiles.filter(~ungradable & pl.col("encodes").is_not_null() & pl.col("knows").is_not_null())
        expected = [method.profile(*(r[f] for f in KNOWLEDGE_FLAGS)) for r in gradable.iter_rows(named=True)]
        ruled = gradable.with_columns(pl.Series("expected", expected, dtype=pl.String))
        problems += where(ruled, pl.col("profile") != pl.col("expected"), "whose profile is not the one its flags give", PROFILE_KEY)
    return problems_result(problems, profiles.height)


@dg.asset_check(asset=wikiprofile_key("profiles"), name=REFERENCES, blocking=True, partitions_def=subject_partitions,
                additional_ins={"benchmark": WIKIPROFILE_BENCHMARK},
                description="Exactly the benchmark's facts are profiled.")
def profiles_references(profiles: pl.DataFrame, benchmark: pl.DataFrame) -> dg.AssetCheckResult:
    problems = (unmatched(profiles, ["fact_id"], benchmark, ["fact_id"], "facts not in eval/wikiprofile_tasks")
                + unmatched(benchmark, ["fact_id"], profiles, ["fact_id"], "benchmark facts without a profile"))
    return problems_result(problems, profiles.height)


# --- WikiProfile's reports -------------------------------------------------------------------

SUMMARY_SCHEMA = {c: t for c, t in TABLE_2_SCHEMA.items() if c != "model"}


def _share(*names: str) -> pl.Expr:
    return pl.sum_horizontal(*names)


def summary_problems(frame: pl.DataFrame, key: Sequence[str]) -> list[str]:
    """Table 2 rows: shares in [0, 1]; the five profiles add up to 1 of the profiled facts
    (direct recall and the two undecided unions, without a thinking run), and the profiled
    and the two excluded kinds to 1 of all facts; Knows and Knows(+Think) count direct
    inference over the gradable facts, the Figure 4 bar does not; the shares that need the
    thinking run are null exactly when it is missing."""
    problems = outside(frame, SUMMARY_SHARES, UNIT, key)
    problems += not_in(frame, "thinking_run", method.THINKING_RUNS, key)
    problems += where(frame, (pl.col("profiled") < 0) | (pl.col("profiled") > pl.col("facts")), "with profiled facts not between 0 and all facts", key)
    present, missing = frame.filter(~THINKING_MISSING), frame.filter(THINKING_MISSING)
    profiled = pl.col("profiled") > 0
    problems += where(present, profiled & ((_share(*method.PROFILES) - 1).abs() > TOLERANCE), "whose five profiles do not add up to 1", key)
    undecided = method.UNDECIDED
    problems += where(missing, profiled & ((_share("direct_recall", *undecided.values()) - 1).abs() > TOLERANCE),
                      "(without a thinking run) whose direct recall and undecided shares do not add up to 1", key)
    problems += differs(present, undecided[True], _share("recall_failure", "recall_with_thinking"),
                        f"whose {undecided[True]} is not recall failure + recall with thinking", key)
    problems += differs(present, undecided[False], _share("encoding_failure", "inference_without_encoding"),
                        f"whose {undecided[False]} is not encoding failure + inference without encoding", key)
    covered = pl.col("profiled") / pl.col("facts") + pl.sum_horizontal(f"excluded_{e}" for e in EXCLUDED)
    problems += where(frame, (pl.col("facts") > 0) & ((covered - 1).abs() > TOLERANCE), "whose profiled and excluded shares do not add up to 1", key)
    # Knows over the gradable facts: (direct recall facts + direct inference facts) / (profiled + direct inference)
    inferred = pl.col("excluded_direct_inference") * pl.col("facts")
    gradable = pl.col("profiled") + inferred
    over_gradable = lambda share: pl.when(gradable > 0).then((share * pl.col("profiled") + inferred) / gradable)  # noqa: E731
    problems += differs(frame, "knows", over_gradable(pl.col("direct_recall")).otherwise(math.nan),
                        "whose knows is not direct recall + direct inference over the gradable facts", key)
    thinking = method.KNOWN_WITH_THINKING
    problems += differs(present, "knows_thinking", over_gradable(_share(*thinking)).otherwise(math.nan),
                        "whose knows_thinking is not the known-with-thinking profiles + direct inference over the gradable facts", key)
    problems += differs(present, "knows_thinking_excl_direct", pl.when(profiled).then(_share(*thinking)).otherwise(math.nan),
                        "whose knows_thinking_excl_direct (Figure 4) is not direct recall + recall with thinking + inference without encoding", key)
    needs_thinking = ("knows_thinking", "knows_thinking_excl_direct", *method.THINKING_DEPENDENT)
    problems += where(present, profiled & pl.any_horizontal(pl.col(c).is_null() for c in needs_thinking),
                      f"with a thinking run but a null share among {', '.join(needs_thinking)}", key)
    problems += where(missing, pl.any_horizontal(pl.col(c).is_not_null() for c in needs_thinking),
                      f"without a thinking run but with a share among {', '.join(needs_thinking)}", key)
    return problems


@dg.asset_check(asset=wikiprofile_key("profile_report"), name=SHARES,
                description="Table 2: one row per model; shares in [0, 1], the profiles adding up to the profiled facts.")
def profile_report_shares(profile_report: pl.DataFrame) -> dg.AssetCheckResult:
    columns = {"model": pl.String, **SUMMARY_SCHEMA}
    problems = table_problems(profile_report, columns, ("model",), not_null=("model", *SUMMARY_COUNTS, "thinking_run"))
    if typed(profile_report, columns):
        problems += summary_problems(profile_report, ("model",))
    return problems_result(problems, profile_report.height)


POPULARITY_SCHEMA = {"model": pl.String, "tier": pl.String, "facts": pl.Int64, "encodes": pl.Float64, "recall": pl.Float64,
                     "recall_thinking": pl.Float64, "thinking_gain": pl.Float64}


@dg.asset_check(asset=wikiprofile_key("popularity_report"), name=SHARES,
                description="Top and bottom tier per model; rates are shares in [0, 1], recall with thinking at least recall, the gain their difference.")
def popularity_report_shares(popularity_report: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key = popularity_report, ("model", "tier")
    problems = table_problems(frame, POPULARITY_SCHEMA, key, not_null=(*key, "facts"))
    if typed(frame, POPULARITY_SCHEMA):
        problems += not_in(frame, "tier", TIERS, key) + outside(frame, ["encodes", "recall", "recall_thinking"], UNIT, key)
        problems += where(frame, pl.col("facts") < 0, "with a negative fact count", key)
        problems += where(frame, pl.col("recall") > pl.col("recall_thinking") + TOLERANCE, "recalling more without thinking than with it", key)
        problems += differs(frame, "thinking_gain", pl.col("recall_thinking") - pl.col("recall"), "whose gain is not recall with minus without thinking", key)
    return problems_result(problems, frame.height)


@dg.asset_check(asset=wikiprofile_key("popularity_report"), name=TIERS_FILLED,
                description="Both popularity tiers of every model hold facts (an empty tier leaves Figure 5 blank).")
def popularity_report_tiers(popularity_report: pl.DataFrame) -> dg.AssetCheckResult:
    problems = table_problems(popularity_report, {c: POPULARITY_SCHEMA[c] for c in ("model", "tier", "facts")})
    if not problems:
        problems += where(popularity_report, pl.col("facts") == 0, "(tiers) without facts", ("model", "tier"))
    return problems_result(problems, popularity_report.height, WARN)


DIRECTION_SCHEMA = {"model": pl.String, "condition": pl.String, "facts": pl.Int64, "direct": pl.Float64, "reverse": pl.Float64,
                    "delta": pl.Float64}


@dg.asset_check(asset=wikiprofile_key("direction_report"), name=SHARES,
                description=f"One row per model and condition ({', '.join(CONDITIONS)}); direct and reverse shares in [0, 1], delta their difference.")
def direction_report_shares(direction_report: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key = direction_report, ("model", "condition")
    problems = table_problems(frame, DIRECTION_SCHEMA, key, not_null=(*key, "facts"))
    if typed(frame, DIRECTION_SCHEMA):
        problems += not_in(frame, "condition", CONDITIONS, key) + outside(frame, ["direct", "reverse"], UNIT, key)
        problems += differs(frame, "delta", pl.col("reverse") - pl.col("direct"), "whose delta is not reverse minus direct", key)
    return problems_result(problems, frame.height)


THINKING_SCHEMA = {"model": pl.String, "encoded": pl.Boolean, "not_known": pl.Int64, "recovered": pl.Int64, "recovered_share": pl.Float64}


@dg.asset_check(asset=wikiprofile_key("thinking_report"), name=SHARES,
                description="Encoded and not encoded per model; recovered between 0 and the facts not known, its share of them in [0, 1].")
def thinking_report_shares(thinking_report: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key = thinking_report, ("model", "encoded")
    problems = table_problems(frame, THINKING_SCHEMA, key, not_null=(*key, "not_known", "recovered"))
    if typed(frame, THINKING_SCHEMA):
        problems += where(frame, (pl.col("recovered") < 0) | (pl.col("recovered") > pl.col("not_known")),
                          "recovering more facts than are not known", key)
        share = pl.when(pl.col("not_known") > 0).then(pl.col("recovered") / pl.col("not_known")).otherwise(math.nan)
        problems += differs(frame, "recovered_share", share, "whose share is not recovered over not known", key)
    return problems_result(problems, frame.height)


@dg.asset_check(asset=wikiprofile_key("robustness_report"), name=SHARES,
                description="Table 2 at every (tau_enc, tau_know) of the grid per model; thresholds in [0, 1], shares as in Table 2.")
def robustness_report_shares(robustness_report: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key = robustness_report, ("model", "tau_enc", "tau_know")
    columns = {"model": pl.String, "tau_enc": pl.Float64, "tau_know": pl.Float64, **SUMMARY_SCHEMA}
    problems = table_problems(frame, columns, key, not_null=(*key, *SUMMARY_COUNTS, "thinking_run"))
    if typed(frame, columns):
        problems += outside(frame, ["tau_enc", "tau_know"], UNIT, key, missing_ok=False) + summary_problems(frame, key)
        grid = frame.select("model").unique().join(pl.DataFrame(TAU_GRID, schema=["tau_enc", "tau_know"], orient="row"), how="cross")
        problems += unmatched(grid, list(key), frame, list(key), "model+thresholds of the grid missing")
    return problems_result(problems, frame.height)


# --- LLM accounting of every LLM-bound step ------------------------------------------------------

llm_accounting = [
    llm_accounting_check(eval_key("quit_reranked_runs"), partitions_def=retriever_reranker_partitions),
    llm_accounting_check(eval_key("quit_reader_answers"), partitions_def=quit_reader_partitions,
                         failed_items=errored, item_column="question_id"),
    llm_accounting_check(eval_key("recor_queries"), partitions_def=domain_partitions,
                         failed_items=lambda frame: frame.filter(pl.col("fallback")), item_column="qid"),
    llm_accounting_check(eval_key("recor_generation"), partitions_def=domain_partitions,
                         failed_items=lambda frame: frame.filter(pl.col("answer").is_null() | pl.col("correctness").is_null()),
                         item_column="qid"),
    llm_accounting_check(eval_key("reteco_generation"), partitions_def=domain_partitions,
                         failed_items=lambda frame: frame.filter(pl.col("judge_failures") > 0), item_column="qid"),
    llm_accounting_check(wikiprofile_key("responses"), partitions_def=subject_partitions,
                         failed_items=errored, item_column="fact_id"),
    llm_accounting_check(wikiprofile_key("graded_responses"), partitions_def=subject_partitions),
]


eval_checks = [
    *source_checks, quit_index_files, quit_runs_ranks, quit_runs_references, quit_runs_coverage, quit_retrieval_metrics_ranges,
    quit_reranked_runs_ranks, quit_reranked_same_passages, quit_rerank_metrics_ranges,
    quit_reader_answers_schema, quit_reader_answers_references, quit_reader_metrics_ranges,
    recor_queries_schema, recor_queries_references, recor_runs_ranks, recor_runs_references, recor_retrieval_metrics_ranges,
    reteco_retrieval_ranges, reteco_run_files, reteco_generation_schema, reteco_leaderboard_ranges,
    recor_generation_schema, recor_generation_references, recor_generation_metrics_ranges,
    responses_schema, responses_sampling, responses_references, graded_responses_schema, graded_responses_references,
    profiles_schema, profiles_follow_the_rule, profiles_references,
    profile_report_shares, popularity_report_shares, popularity_report_tiers, direction_report_shares,
    thinking_report_shares, robustness_report_shares,
    *llm_accounting,
]


# --- the leaderboard ------------------------------------------------------------------------------

RUN_ON = "run_on"
LEADERBOARD_KEY = ("system",)
QUIT_HITS = [c for c in board.SCORES if c.startswith("quit/hit_rate@")]


@dg.asset_check(asset=eval_key("leaderboard"), name=SCHEMA,
                description="One row per system, of the known kinds; every score a share in [0, 1] (null: not run), "
                            "QUIT's Hit@k rising with k.")
def leaderboard_schema(leaderboard: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key = leaderboard, LEADERBOARD_KEY
    problems = table_problems(frame, board.SCHEMA, key, not_null=("system", "kind", "benchmarks"))
    if typed(frame, board.SCHEMA):
        known = pl.col("kind").str.split(", ").list.eval(pl.element().is_in(list(board.KINDS))).list.all()
        problems += where(frame, ~known, f"with a kind not of {list(board.KINDS)}", key)
        problems += outside(frame, board.SCORES, UNIT, key)
        for a, b in zip(QUIT_HITS, QUIT_HITS[1:]):
            problems += where(frame, pl.col(a) > pl.col(b) + TOLERANCE, f"with {a} above {b}", key)
    return problems_result(problems, frame.height)


@dg.asset_check(asset=eval_key("leaderboard"), name=RUN_ON,
                description="Each row names exactly the benchmarks it has scores on, at least one; a reader has its EM "
                            "and the setting it was reached in, a subject its WikiProfile scores.")
def leaderboard_run_on(leaderboard: pl.DataFrame) -> dg.AssetCheckResult:
    """The row key merges a system's results from several report tables: a row whose
    ``benchmarks`` or ``kind`` disagree with its scores was merged wrong."""
    frame, key = leaderboard, LEADERBOARD_KEY
    problems = table_problems(frame, board.SCHEMA)
    if typed(frame, board.SCHEMA):
        scored = [pl.when(pl.any_horizontal(pl.col(c).is_not_null() for c in board.SCORES if board.benchmark_of(c) == b))
                  .then(pl.lit(b)) for b in board.BENCHMARKS]
        expected = pl.concat_str(scored, separator=", ", ignore_nulls=True)
        kinds = pl.col("kind").str.split(", ")
        problems += where(frame, expected == "", "without any score", key)
        problems += where(frame, (expected != "") & (pl.col("benchmarks") != expected), "whose benchmarks are not those they have scores on", key)
        problems += where(frame, kinds.list.contains(board.READER) != pl.col(board.QUIT_EM).is_not_null(),
                          "with a QUIT EM but not a reader, or a reader without one", key)
        problems += where(frame, pl.col(board.QUIT_EM).is_null() != pl.col(board.QUIT_EM_SETTING).is_null(),
                          "with a QUIT EM and no setting, or a setting and no EM", key)
        problems += where(frame, kinds.list.contains(board.SUBJECT) != pl.col("benchmarks").str.contains("wikiprofile"),
                          "with WikiProfile scores but not a subject, or a subject without them", key)
    return problems_result(problems, frame.height)


leaderboard_checks = [leaderboard_schema, leaderboard_run_on]
eval_checks.extend(leaderboard_checks)


# --- QUIT's fine-tuning data ----------------------------------------------------------------------

POSITIVES = "positives"
NEGATIVES = "negatives"
PAIRS_PER_QUESTION = "pairs_per_question"
TRAIN_ONLY = "train_only"
RANDOM_FALLBACK = "random_fallback"
PAIR_KEY = ("question_id", "pair")
QUIT_QRELS = dg.AssetIn(key=eval_key("quit_qrels"))
FINETUNE_SOURCE = {"quit_questions": QUIT_QUESTIONS, "quit_corpus": QUIT_CORPUS, "quit_qrels": QUIT_QRELS}


def _owners(corpus: pl.DataFrame, questions: pl.DataFrame, column: str) -> pl.DataFrame:
    """Each passage, named ``column``, with the question it was written for and that question's split."""
    return (corpus.select(pl.col("passage_id").alias(column), pl.col("question_id").alias(f"{column}_of"))
            .join(questions.select(pl.col("question_id").alias(f"{column}_of"), pl.col("split").alias(f"{column}_split")),
                  on=f"{column}_of", how="left"))


@dg.asset_check(asset=eval_key("quit_finetune_data"), name=SCHEMA, blocking=True,
                description="One row per question and pair, pairs numbered 0..n-1; every value there but a random "
                            "negative's rank; each negative from BM25 (with its rank) or random.")
def quit_finetune_data_schema(quit_finetune_data: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key, columns = quit_finetune_data, PAIR_KEY, finetune_rules.PAIRS_SCHEMA
    problems = table_problems(frame, columns, key, not_null=tuple(c for c in columns if c != "negative_rank"))
    if typed(frame, columns):
        bm25 = pl.col("negative_source") == finetune_rules.BM25
        problems += not_in(frame, "negative_source", finetune_rules.NEGATIVE_SOURCES, key)
        problems += where(frame, bm25 & ~(pl.col("negative_rank") >= 1).fill_null(False), "BM25 negatives without a rank of 1 or more", key)
        problems += where(frame, ~bm25 & pl.col("negative_rank").is_not_null(), "random negatives with a BM25 rank", key)
        numbered = frame.group_by("question_id").agg(pl.len().alias("pairs"), pl.col("pair").min().alias("first"),
                                                     pl.col("pair").max().alias("last"))
        problems += where(numbered, (pl.col("first") != 0) | (pl.col("last") != pl.col("pairs") - 1),
                          "(questions) whose pairs are not numbered 0..n-1", ["question_id"])
    return problems_result(problems, frame.height)


@dg.asset_check(asset=eval_key("quit_finetune_data"), name=POSITIVES, blocking=True, additional_ins={"quit_qrels": QUIT_QRELS},
                description="Every positive is relevant to its question (label 1 or 2 in the qrels, the label it carries); "
                            "a question's label-2 pairs come before its label-1 pairs.")
def quit_finetune_data_positives(quit_finetune_data: pl.DataFrame, quit_qrels: pl.DataFrame) -> dg.AssetCheckResult:
    """Label 1 is a weaker positive: a question is trained on one only once its label-2
    passages run out, so a trainer that reads a prefix of its pairs gets the best first."""
    frame, key = quit_finetune_data, PAIR_KEY
    problems = table_problems(frame, finetune_rules.PAIRS_SCHEMA)
    if typed(frame, finetune_rules.PAIRS_SCHEMA):
        labels = quit_qrels.select("question_id", pl.col("passage_id").alias("positive_id"), pl.col("label").alias("qrel"))
        labeled = frame.join(labels, on=["question_id", "positive_id"], how="left")
        problems += where(labeled, ~(pl.col("qrel") >= 1).fill_null(False), "with a positive its question's qrels do not label 1 or 2", key)
        problems += where(labeled, pl.col("qrel") != pl.col("positive_label"), "whose positive_label is not the qrels' label", key)
        ordered = frame.sort(*key).with_columns(pl.col("positive_label").cast(pl.Int32).diff().over("question_id").alias("rise"))
        problems += where(ordered, pl.col("rise") > 0, "with a label-2 positive after a label-1 one", key)
    return problems_result(problems, frame.height)


@dg.asset_check(asset=eval_key("quit_finetune_data"), name=NEGATIVES, blocking=True, additional_ins=FINETUNE_SOURCE,
                description="Every negative is a passage of another train question (the one it names), of a different "
                            "answer, and not in its question's qrels.")
def quit_finetune_data_negatives(quit_finetune_data: pl.DataFrame, quit_questions: pl.DataFrame, quit_corpus: pl.DataFrame,
                                 quit_qrels: pl.DataFrame) -> dg.AssetCheckResult:
    """A negative that answers its question, being its own, in its qrels, or written for the
    same answer, would teach the model to push away a relevant passage."""
    frame, key = quit_finetune_data, PAIR_KEY
    problems = table_problems(frame, finetune_rules.PAIRS_SCHEMA)
    if typed(frame, finetune_rules.PAIRS_SCHEMA):
        answers = quit_questions.select("question_id", pl.col("answer").map_elements(normalize, return_dtype=pl.String))
        judged = (frame.join(_owners(quit_corpus, quit_questions, "negative_id"), on="negative_id", how="left")
                  .join(quit_qrels.select("question_id", pl.col("passage_id").alias("negative_id"), pl.lit(True).alias("in_qrels")),
                        on=["question_id", "negative_id"], how="left")
                  .join(answers, on="question_id", how="left")
                  .join(answers.rename({"question_id": "negative_id_of", "answer": "negative_answer"}), on="negative_id_of", how="left"))
        problems += where(judged, pl.col("negative_id_of").is_null(), "with a negative not in eval/quit_corpus", key)
        problems += where(judged, pl.col("negative_id_of") != pl.col("negative_question_id"),
                          "whose negative_question_id is not the negative's question in eval/quit_corpus", key)
        problems += where(judged, pl.col("negative_id_of") == pl.col("question_id"), "with a negative of the question itself", key)
        problems += where(judged, pl.col("negative_id_split") != finetune_rules.TRAIN,
                          "with a negative of a question outside the train split", key)
        problems += where(judged, pl.col("in_qrels"), "with a negative in its question's qrels", key)
        problems += where(judged, (pl.col("answer") != "") & (pl.col("answer") == pl.col("negative_answer")),
                          "with a negative of a question with the same answer", key)
    return problems_result(problems, frame.height)


@dg.asset_check(asset=eval_key("quit_finetune_data"), name=PAIRS_PER_QUESTION, blocking=True,
                additional_ins={**FINETUNE_SOURCE, "quit_finetune_rejects": dg.AssetIn(key=eval_key("quit_finetune_rejects"))},
                description="Every train question has min(positives, its relevant train passages) pairs, or none and a reject.")
def quit_finetune_data_pairs(quit_finetune_data: pl.DataFrame, quit_questions: pl.DataFrame, quit_corpus: pl.DataFrame,
                             quit_qrels: pl.DataFrame, quit_finetune_rejects: pl.DataFrame,
                             finetune_settings: FinetuneSettings) -> dg.AssetCheckResult:
    """A question with fewer pairs lost positives it had; one with none and no reject was
    dropped silently."""
    frame, n = quit_finetune_data, max(finetune_settings.positives)
    problems = table_problems(frame, {"question_id": pl.String}) + table_problems(quit_finetune_rejects, {"question_id": pl.String})
    if not problems:
        pool = finetune_rules.train_passages(quit_questions, quit_corpus).select("passage_id")
        relevant = quit_qrels.filter(pl.col("label") >= 1).join(pool, on="passage_id", how="semi").group_by("question_id").len("relevant")
        rejected = quit_finetune_rejects.select("question_id").unique().with_columns(pl.lit(True).alias("rejected"))
        counted = (quit_questions.filter(pl.col("split") == finetune_rules.TRAIN).select("question_id")
                   .join(relevant, on="question_id", how="left")
                   .join(frame.group_by("question_id").len("pairs"), on="question_id", how="left")
                   .join(rejected, on="question_id", how="left").with_columns(pl.col("relevant", "pairs").fill_null(0)))
        expected = pl.when(pl.col("rejected")).then(0).otherwise(pl.min_horizontal(pl.col("relevant"), pl.lit(n)))
        problems += where(counted, pl.col("pairs") != expected,
                          f"train questions whose pairs are not min({n}, their relevant train passages), none when rejected",
                          ["question_id"])
    return problems_result(problems, frame.height, positives=n)


@dg.asset_check(asset=eval_key("quit_finetune_data"), name=TRAIN_ONLY, blocking=True,
                additional_ins={"quit_questions": QUIT_QUESTIONS, "quit_corpus": QUIT_CORPUS},
                description="No dev or test id: every question is a train question, every positive and negative a passage "
                            "of one.")
def quit_finetune_data_train_only(quit_finetune_data: pl.DataFrame, quit_questions: pl.DataFrame,
                                  quit_corpus: pl.DataFrame) -> dg.AssetCheckResult:
    """A dev or test passage trained on would inflate the fine-tuned models' scores on the
    splits they are evaluated on."""
    frame, key = quit_finetune_data, PAIR_KEY
    problems = table_problems(frame, finetune_rules.PAIRS_SCHEMA)
    if typed(frame, finetune_rules.PAIRS_SCHEMA):
        splits = quit_questions.select("question_id", "split")
        judged = (frame.join(splits, on="question_id", how="left")
                  .join(_owners(quit_corpus, quit_questions, "positive_id"), on="positive_id", how="left")
                  .join(_owners(quit_corpus, quit_questions, "negative_id"), on="negative_id", how="left"))
        for column, what in (("split", "questions"), ("positive_id_split", "positives"), ("negative_id_split", "negatives")):
            problems += where(judged, pl.col(column).fill_null("none") != finetune_rules.TRAIN, f"with {what} not of a train question", key)
    return problems_result(problems, frame.height)


@dg.asset_check(asset=eval_key("quit_finetune_data"), name=RANDOM_FALLBACK,
                description="Under negatives: bm25, every negative is BM25's (warns): a random one stands in where BM25 "
                            "found no passage of another train question.")
def quit_finetune_data_random_fallback(quit_finetune_data: pl.DataFrame, finetune_settings: FinetuneSettings) -> dg.AssetCheckResult:
    frame = quit_finetune_data
    problems = table_problems(frame, {"question_id": pl.String, "pair": pl.Int32, "negative_source": pl.String})
    if not problems and finetune_settings.negatives == finetune_rules.BM25:
        problems += where(frame, pl.col("negative_source") == finetune_rules.RANDOM,
                          "with a random negative under negatives: bm25", PAIR_KEY)
    return problems_result(problems, frame.height, WARN, negatives=finetune_settings.negatives)


quit_finetune_rejects_reasons = rejects_check(eval_key("quit_finetune_rejects"), finetune_rules.REASONS, finetune_rules.REJECTS.keys)

finetune_data_checks = [quit_finetune_data_schema, quit_finetune_data_positives, quit_finetune_data_negatives,
                        quit_finetune_data_pairs, quit_finetune_data_train_only, quit_finetune_data_random_fallback,
                        quit_finetune_rejects_reasons]
eval_checks.extend(finetune_data_checks)


# --- QUIT's fine-tuned models ---------------------------------------------------------------------

REGISTERED = "registered"
LOSS_LOG = "loss_log"


def materialization_metadata(context: dg.AssetCheckExecutionContext, key: dg.AssetKey) -> dict:
    """The metadata of the checked partition's latest materialization (a model asset writes
    its own folder and stores no table to load)."""
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[context.partition_key]), limit=1).records
    event = records[0].asset_materialization if records else None
    return {k: v.value for k, v in event.metadata.items()} if event is not None else {}


def trained_model_problems(meta: dict, specs: dict, model: TrainedModel) -> list[str]:
    """Each model of a materialization (one per count of positives) is saved where its row
    says, with its weights and loss log, and its alias is registered as a ``model.kind``
    system reading that folder, trained on QUIT (so RECOR leaves it out), with that count."""
    problems = []
    for row in models_of(meta):
        folder, alias, positives = row.get("model_path"), row.get("alias"), row.get("positives")
        if not folder or not alias:
            problems.append("the materialization names no model_path or no alias")
            continue
        if not os.path.isfile(os.path.join(folder, "modules.json")) or not os.path.isfile(os.path.join(folder, LOG_FILE)):
            problems.append(f"no saved model with its loss log at {folder}")
        spec, key = specs.get(alias), model.path_key
        if spec is None:
            problems.append(f"{alias!r} is not registered")
            continue
        if (spec.kind, getattr(spec, key), spec.trained_on) != (model.kind, folder, TRAINED_ON):
            problems.append(f"{alias!r} is registered as kind {spec.kind!r}, {key} {getattr(spec, key)!r}, trained on "
                            f"{spec.trained_on!r}; expected {model.kind!r}, {folder!r}, {TRAINED_ON!r}")
        # A materialization made before the sweep records no count.
        if positives is not None and spec.positives != positives:
            problems.append(f"{alias!r} is registered with {spec.positives} positives a question; its model was "
                            f"trained on {positives}")
    return problems


def trained_model_checks(asset: str, model: TrainedModel) -> list[dg.AssetChecksDefinition]:
    """The checks of one fine-tuned model asset, per base model partition: each count's alias
    is registered at its folder (``registered``), and each loss log is usable (``loss_log``)."""
    key, what = eval_key(asset), model.section[:-1]

    @dg.asset_check(asset=key, name=REGISTERED, partitions_def=finetune_base_partitions,
                    description=f"Each model folder is saved where the materialization says, and its {what} alias is "
                                f"registered as a {model.kind} {what} reading that folder, trained on QUIT with its "
                                "count of positives.")
    def registered(context) -> dg.AssetCheckResult:
        """An alias registered at another folder would evaluate another training under this
        model's name; one not registered is never evaluated."""
        meta = materialization_metadata(context, key)
        models = models_of(meta)
        return problems_result(trained_model_problems(meta, model.load(), model), len(models),
                               model_path=", ".join(str(m.get("model_path")) for m in models))

    @dg.asset_check(asset=key, name=LOSS_LOG, partitions_def=finetune_base_partitions,
                    description="Each saved loss log has a step, and every step's loss is a finite number.")
    def loss_log(context) -> dg.AssetCheckResult:
        problems, steps = [], 0
        for row in models_of(materialization_metadata(context, key)):
            folder = row.get("model_path")
            if not folder or not os.path.isfile(os.path.join(folder, LOG_FILE)):
                problems.append(f"no loss log at {folder}")
                continue
            log = read_log(folder)
            problems += [f"{row.get('alias')}: {p}" for p in log_problems(log)]
            steps += len(log)
        return problems_result(problems, steps)

    return [registered, loss_log]


dense_model_checks = trained_model_checks("quit_dense_model", DENSE)
rerank_model_checks = trained_model_checks("quit_rerank_model", CROSS_ENCODER)
colbert_model_checks = trained_model_checks("quit_colbert_model", MULTI_VECTOR)
finetune_model_checks = [*dense_model_checks, *rerank_model_checks, *colbert_model_checks]
eval_checks.extend(finetune_model_checks)


# --- QUIT's fine-tuning report ----------------------------------------------------------------

FINETUNE_REPORT_KEY = ("table", "system", "reader", "split", "metric")
HELD_OUT, FINE_TUNED = "held_out", "fine_tuned"


@dg.asset_check(asset=eval_key("quit_finetune_report"), name=HELD_OUT, additional_ins={"quit_questions": QUIT_QUESTIONS},
                description="One row per table, system, reader, split and metric; each table's own metrics, in [0, 1]; "
                            "only held-out splits (never train), each row counting all of its split's questions; a "
                            "count of positives (at least 1) only on a fine-tuned retrieval or reranking row.")
def quit_finetune_report_held_out(quit_finetune_report: pl.DataFrame, quit_questions: pl.DataFrame) -> dg.AssetCheckResult:
    """A train question in these tables would score a fine-tuned model on what it learned from."""
    frame, key = quit_finetune_report, FINETUNE_REPORT_KEY
    problems = table_problems(frame, finetune_report.SCHEMA, key,
                              not_null=("table", "system", "retriever", "fine_tuned", "split", "questions", "metric", "value"))
    if typed(frame, finetune_report.SCHEMA):
        problems += not_in(frame, "table", finetune_report.TABLES, key)
        for table, metrics in ((finetune_report.RETRIEVAL, finetune_report.RETRIEVAL_METRICS),
                               (finetune_report.RERANKING, finetune_report.RERANKING_METRICS),
                               (finetune_report.READER, finetune_report.READER_METRICS)):
            problems += not_in(frame.filter(pl.col("table") == table), "metric", metrics, key)
        problems += outside(frame, ["value"], UNIT, key, missing_ok=False)
        held_out = {s: len(ids) for s, ids in finetune_report.held_out(quit_questions).items()}
        problems += not_in(frame, "split", held_out, key)
        counts = pl.DataFrame({"split": list(held_out), "expected": list(held_out.values())},
                              schema={"split": pl.String, "expected": pl.Int64})
        joined = frame.join(counts, on="split", how="inner")
        problems += where(joined, pl.col("questions") != pl.col("expected"), "counting other than their split's questions", key)
        problems += where(frame, pl.col("positives") < 1, "with a count of positives below 1", key)
        untrained = ~pl.col("fine_tuned") | (pl.col("table") == finetune_report.READER)
        problems += where(frame, pl.col("positives").is_not_null() & untrained,
                          "with a count of positives on a vanilla or a reader row", key)
    return problems_result(problems, frame.height)


@dg.asset_check(asset=eval_key("quit_finetune_report"), name=FINE_TUNED,
                additional_ins={"quit_runs": dg.AssetIn(key=eval_key("quit_runs"))},
                description="Every registered fine-tuned retriever with a run is in the retrieval table, marked fine-tuned; "
                            "a vanilla system is never marked so; a row's count of positives is its model's registered "
                            "one (warns: a model not yet evaluated, or trained again since, is no broken table).")
def quit_finetune_report_fine_tuned(quit_finetune_report: pl.DataFrame, quit_runs: pl.DataFrame) -> dg.AssetCheckResult:
    frame, models = quit_finetune_report, finetune_report.trained_models()
    trained = set(models)
    problems = table_problems(frame, {"table": pl.String, "system": pl.String, "retriever": pl.String,
                                      "reranker": pl.String, "fine_tuned": pl.Boolean, "positives": pl.Int32})
    if not problems:
        retrieval = frame.filter(pl.col("table") == finetune_report.RETRIEVAL)
        run = set(quit_runs["system"].unique().to_list()) & trained
        absent = sorted(run - set(retrieval.filter(pl.col("fine_tuned"))["system"].to_list()))
        if absent and not frame.is_empty():
            problems.append(f"fine-tuned retrievers with a run but no fine-tuned row: {', '.join(absent)}")
        problems += where(retrieval, pl.col("fine_tuned") != pl.col("system").is_in(sorted(trained)),
                          "marked fine-tuned or not against the registries", ("system",))
        counts = pl.DataFrame({"evaluated": list(models), "registered": [m.positives for m in models.values()]},
                              schema={"evaluated": pl.String, "registered": pl.Int32})
        scored = (frame.filter(pl.col("table") != finetune_report.READER)
                  .with_columns(pl.coalesce("reranker", "retriever").alias("evaluated"))
                  .join(counts, on="evaluated", how="left"))
        problems += where(scored, pl.col("positives").ne_missing(pl.col("registered")),
                          "whose count of positives is not their model's registered one", ("system",))
    return problems_result(problems, frame.height, WARN, fine_tuned=", ".join(sorted(trained)) or "none")


eval_checks.extend([quit_finetune_report_held_out, quit_finetune_report_fine_tuned])
