"""Checks of the benchmarks as the evaluation reads them (``assets.eval.sources``), built
or released: each table's ids and references, and the rejects of the released files."""

from __future__ import annotations

import math

import dagster as dg
import polars as pl

from assets.eval.sources import PAGES_SCHEMA as PAGE_COLUMNS
from assets.partitions import domain_partitions
from assets.quit import published as quit_release
from assets.recor import published as recor_release
from assets.recor.rules import gold_outside
from assets.wikiprofile import published as wikiprofile_release
from assets.wikiprofile.release import BENCHMARK_SCHEMA as wikiprofile_tasks_schema
from checks.eval.shared import QUIT_CORPUS, QUIT_QUESTIONS, REFERENCES, SCHEMA, WIKIPROFILE_BENCHMARK, eval_key
from checks.factories import (
    EXAMPLES,
    not_in,
    outside,
    problems_result,
    rejects_check,
    table_check,
    table_problems,
    typed,
    unmatched,
    where,
)

SOURCE_SPLITS = ("train", "dev", "test")
QUIT_LABELS = (0, 1, 2)
QUESTION_COLUMNS = {
    c: quit_release.QUESTIONS_SCHEMA[c] for c in ("question_id", "split", "question", "answer", "answers", "hints")
}
RECOR_COLUMNS = {
    c: recor_release.BENCHMARK_SCHEMA[c]
    for c in ("qid", "domain", "conversation_id", "turn_id", "query", "answer", "gold_doc_ids", "conversation_history")
}


@dg.asset_check(
    asset=eval_key("quit_questions"),
    name=SCHEMA,
    blocking=True,
    description="Unique question ids in train/dev/test, each with its question and a non-empty answer pool.",
)
def quit_questions_schema(quit_questions: pl.DataFrame) -> dg.AssetCheckResult:
    problems = table_problems(
        quit_questions, QUESTION_COLUMNS, unique=("question_id",), not_null=("question_id", "split", "question")
    )
    if typed(quit_questions, QUESTION_COLUMNS):
        problems += not_in(quit_questions, "split", SOURCE_SPLITS, ["question_id"])
        problems += where(
            quit_questions,
            pl.col("answers").list.len().fill_null(0) == 0,
            "questions without an answer pool",
            ["question_id"],
        )
    return problems_result(problems, quit_questions.height)


@dg.asset_check(
    asset=eval_key("quit_corpus"),
    name=SCHEMA,
    blocking=True,
    description="Unique passage ids, each with its text and the question it was written for.",
)
def quit_corpus_schema(quit_corpus: pl.DataFrame) -> dg.AssetCheckResult:
    """The corpus may hold passages of questions outside the evaluated ones (a slice, or
    one split over the release's corpus of all three): to those it is a distractor."""
    columns = {"passage_id": pl.String, "question_id": pl.String, "text": pl.String}
    return problems_result(
        table_problems(quit_corpus, columns, unique=("passage_id",), not_null=tuple(columns)), quit_corpus.height
    )


@dg.asset_check(
    asset=eval_key("quit_qrels"),
    name=REFERENCES,
    blocking=True,
    additional_ins={"quit_questions": QUIT_QUESTIONS, "quit_corpus": QUIT_CORPUS},
    description="One label 0/1/2 per question and passage; every qrel names a benchmark question and a corpus passage; "
    "every question has a relevant passage.",
)
def quit_qrels_references(
    quit_qrels: pl.DataFrame, quit_questions: pl.DataFrame, quit_corpus: pl.DataFrame
) -> dg.AssetCheckResult:
    """A qrel outside the corpus can never be retrieved, and a question without any relevant
    passage scores 0 on every metric whatever the retriever does."""
    problems = table_problems(
        quit_qrels,
        quit_release.QRELS_SCHEMA,
        unique=("question_id", "passage_id"),
        not_null=tuple(quit_release.QRELS_SCHEMA),
    )
    if typed(quit_qrels, quit_release.QRELS_SCHEMA):
        ids = ["question_id", "passage_id"]
        problems += not_in(quit_qrels, "label", QUIT_LABELS, ids)
        problems += unmatched(
            quit_qrels, ["question_id"], quit_questions, ["question_id"], "qrels of no question in eval/quit_questions"
        )
        problems += unmatched(quit_qrels, ["passage_id"], quit_corpus, ["passage_id"], "qrels outside eval/quit_corpus")
        relevant = quit_qrels.filter(pl.col("label") > 0)
        problems += unmatched(
            quit_questions, ["question_id"], relevant, ["question_id"], "questions without a relevant passage"
        )
    return problems_result(problems, quit_qrels.height)


quit_source_rejects_reasons = rejects_check(
    eval_key("quit_source_rejects"), quit_release.REASONS, quit_release.REJECTS.keys
)


@dg.asset_check(
    asset=eval_key("recor_turns"),
    name=SCHEMA,
    blocking=True,
    partitions_def=domain_partitions,
    additional_ins={"recor_corpus": dg.AssetIn(key=eval_key("recor_corpus"))},
    description="Unique turn ids (<conversation>_turn_<n>) of one domain, turns numbered from 1, "
    "every gold document in the domain's corpus.",
)
def recor_turns_schema(recor_turns: pl.DataFrame, recor_corpus: pl.DataFrame) -> dg.AssetCheckResult:
    problems = table_problems(
        recor_turns, RECOR_COLUMNS, unique=("qid",), not_null=("qid", "conversation_id", "turn_id", "query")
    )
    if typed(recor_turns, RECOR_COLUMNS):
        if recor_turns["domain"].n_unique() > 1:
            problems.append(
                f"turns of several domains in one partition: {', '.join(sorted(recor_turns['domain'].unique().drop_nulls()))}"
            )
        first = recor_turns.group_by("conversation_id").agg(
            pl.col("turn_id").min().alias("first"), pl.len().alias("turns"), pl.col("turn_id").max().alias("last")
        )
        problems += where(
            first,
            (pl.col("first") != 1) | (pl.col("last") != pl.col("turns")),
            "conversations whose turns are not numbered 1..n",
            ["conversation_id"],
        )
        problems += [
            f"{r['turn']}: gold {r['doc_id']} not in eval/recor_corpus"
            for r in gold_outside(recor_turns, recor_corpus).head(EXAMPLES).iter_rows(named=True)
        ]
    return problems_result(problems, recor_turns.height)


recor_corpus_schema = table_check(
    eval_key("recor_corpus"),
    {"doc_id": pl.String, "content": pl.String},
    unique=("doc_id",),
    not_null=("doc_id", "content"),
    partitions_def=domain_partitions,
)
recor_source_rejects_reasons = rejects_check(
    eval_key("recor_source_rejects"),
    recor_release.REASONS,
    recor_release.REJECTS.keys,
    partitions_def=domain_partitions,
)

TASK_COLUMNS = {c: wikiprofile_tasks_schema[c] for c in ("fact_id", "page_id", "task", "question", "answer", "options")}


@dg.asset_check(
    asset=eval_key("wikiprofile_tasks"),
    name=SCHEMA,
    blocking=True,
    description="One row per fact and task, each with its question; the ten tasks of a fact all present.",
)
def wikiprofile_tasks_schema_check(wikiprofile_tasks: pl.DataFrame) -> dg.AssetCheckResult:
    problems = table_problems(
        wikiprofile_tasks, TASK_COLUMNS, unique=("fact_id", "task"), not_null=("fact_id", "page_id", "task", "question")
    )
    if typed(wikiprofile_tasks, TASK_COLUMNS):
        per_fact = wikiprofile_tasks.group_by("fact_id").len()
        problems += where(
            per_fact,
            pl.col("len") != len(wikiprofile_release.TASKS),
            f"facts without their {len(wikiprofile_release.TASKS)} tasks",
            ["fact_id"],
        )
    return problems_result(problems, wikiprofile_tasks.height)


@dg.asset_check(
    asset=eval_key("wikiprofile_pages"),
    name=REFERENCES,
    blocking=True,
    additional_ins={"wikiprofile_tasks": WIKIPROFILE_BENCHMARK},
    description="Unique page ids with their mean monthly views; every fact's page among them.",
)
def wikiprofile_pages_references(
    wikiprofile_pages: pl.DataFrame, wikiprofile_tasks: pl.DataFrame
) -> dg.AssetCheckResult:
    """The popularity report puts a fact in a tier by its page's views: a fact whose page is
    missing would fall out of both tiers."""
    problems = table_problems(wikiprofile_pages, PAGE_COLUMNS, unique=("page_id",), not_null=("page_id",))
    if typed(wikiprofile_pages, PAGE_COLUMNS):
        problems += outside(
            wikiprofile_pages.drop_nulls("mean_monthly_views"), ["mean_monthly_views"], (0.0, math.inf), ["page_id"]
        )
        problems += unmatched(
            wikiprofile_tasks.select("page_id").unique(),
            ["page_id"],
            wikiprofile_pages,
            ["page_id"],
            "fact pages not in eval/wikiprofile_pages",
        )
    return problems_result(problems, wikiprofile_pages.height)


wikiprofile_source_rejects_reasons = rejects_check(
    eval_key("wikiprofile_source_rejects"), wikiprofile_release.REASONS, wikiprofile_release.REJECTS.keys
)

benchmark_checks = [
    quit_questions_schema,
    quit_corpus_schema,
    quit_qrels_references,
    quit_source_rejects_reasons,
    recor_turns_schema,
    recor_corpus_schema,
    recor_source_rejects_reasons,
    wikiprofile_tasks_schema_check,
    wikiprofile_pages_references,
    wikiprofile_source_rejects_reasons,
]
