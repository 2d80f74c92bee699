"""Checks of what QUIT reads (``assets.quit.sources``): the source questions, their rejects
and the reference passages difficulty searches."""

import dagster as dg
import great_expectations.expectations as gxe
import polars as pl

from assets.quit.sources import MIN_HINTS, REFERENCE_SCHEMA, REJECTS, SOURCE_REASONS
from checks.factories import problems_result, rejects_check, suite_check, table_check
from checks.quit.shared import key
from resources.storage import exists


@dg.asset_check(
    asset=key("source_questions"), blocking=True, description="Schema, unique ids, at least 5 usable hints."
)
def source_questions_suite(source_questions: pl.DataFrame) -> dg.AssetCheckResult:
    frame = source_questions.with_columns(pl.col("hints").list.len().alias("hint_count")).drop(
        "hints", "aliases", "hint_convergence", "candidate_answers"
    )
    return suite_check(
        frame,
        [
            gxe.ExpectColumnValuesToBeUnique(column="question_id"),
            gxe.ExpectColumnValuesToNotBeNull(column="question"),
            gxe.ExpectColumnValuesToNotBeNull(column="answer"),
            gxe.ExpectColumnValuesToBeInSet(column="source", value_set=["triviahg", "wikihint"]),
            gxe.ExpectColumnValuesToBeBetween(column="hint_count", min_value=MIN_HINTS),
        ],
        "quit_source_questions",
    )


source_rejects_reasons = rejects_check(key("source_rejects"), SOURCE_REASONS, REJECTS.keys)


reference_index_schema = table_check(
    key("reference_index"), REFERENCE_SCHEMA, unique=["id"], not_null=["id", "contents"]
)


@dg.asset_check(
    asset=key("reference_index"),
    blocking=True,
    description="The reference passages have a text and are all in the BM25 index difficulty searches.",
)
def reference_index_complete(context, reference_index: pl.DataFrame) -> dg.AssetCheckResult:
    empty = reference_index.filter(pl.col("contents").str.strip_chars() == "")
    event = context.instance.get_latest_materialization_event(key("reference_index"))
    where = event.asset_materialization.metadata.get("index") if event and event.asset_materialization else None
    problems = (
        [f"{empty.height} passages without text (e.g. {', '.join(empty['id'].head(5).to_list())})"]
        if empty.height
        else []
    )
    if where is not None and not exists(where.value):
        problems.append(f"no index at {where.value}")
    return problems_result(problems, reference_index.height)


source_checks = [source_questions_suite, reference_index_schema, reference_index_complete, source_rejects_reasons]
