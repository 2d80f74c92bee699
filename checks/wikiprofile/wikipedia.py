"""Checks of WikiProfile's pages from Wikimedia's data (``assets.wikiprofile.assets.wikipedia``):
each shard's summaries and each month's views, their rejects, and that ``source_pages``
drawn from them accounts for every month of the window."""

import dagster as dg
import polars as pl

from assets.partitions import wikipedia_month_partitions, wikipedia_shard_partitions
from assets.wikiprofile import sources
from assets.wikiprofile.assets.wikipedia import MISSING_MONTH, NO_SHARD
from assets.wikiprofile.settings import WikiProfileSettings
from assets.wikiprofile.sources.wikipedia import SUMMARY_SCHEMA, VIEW_SCHEMA, WIKIPEDIA_REASONS, WINDOW, window_months
from checks.factories import rejects_check, rows_check, table_check, unmet
from checks.wikiprofile.shared import key

summaries_schema = table_check(
    key("wikipedia_summaries"),
    SUMMARY_SCHEMA,
    unique=["page_id"],
    not_null=list(SUMMARY_SCHEMA),
    partitions_def=wikipedia_shard_partitions,
)


@dg.asset_check(
    asset=key("wikipedia_summaries"),
    blocking=True,
    partitions_def=wikipedia_shard_partitions,
    description="Page ids are Wikipedia's numeric ids; each lead has at least the configured words (the paper's "
    "50), counted right.",
)
def summary_rules(wikipedia_summaries: pl.DataFrame, wikiprofile_settings: WikiProfileSettings) -> dg.AssetCheckResult:
    least = wikiprofile_settings.min_words
    bad = unmet(
        wikipedia_summaries,
        {
            "a numeric page id": pl.col("page_id").str.contains(r"^[0-9]+$"),
            f"at least {least} words": pl.col("words") >= least,
            "words counts the summary's words": pl.col("words") == pl.col("summary").str.count_matches(r"\S+"),
        },
        ids=["page_id"],
    )
    return rows_check(bad, "leads as the method keeps them")


summary_rejects_reasons = rejects_check(
    key("wikipedia_summary_rejects"), WIKIPEDIA_REASONS, sources.REJECTS.keys, partitions_def=wikipedia_shard_partitions
)

views_schema = table_check(
    key("wikipedia_views"),
    VIEW_SCHEMA,
    unique=["page_id", "title"],
    not_null=["title", "views"],
    partitions_def=wikipedia_month_partitions,
)


@dg.asset_check(
    asset=key("wikipedia_views"),
    blocking=True,
    partitions_def=wikipedia_month_partitions,
    description="Every page's views are a count of at least 0, and each page id is numeric where given.",
)
def view_rules(wikipedia_views: pl.DataFrame) -> dg.AssetCheckResult:
    bad = unmet(
        wikipedia_views,
        {
            "views at least 0": pl.col("views") >= 0,
            "a numeric page id or none": pl.col("page_id").is_null() | pl.col("page_id").str.contains(r"^[0-9]+$"),
        },
        ids=["title"],
    )
    return rows_check(bad, "page views as counted")


view_rejects_reasons = rejects_check(
    key("wikipedia_view_rejects"), WIKIPEDIA_REASONS, sources.REJECTS.keys, partitions_def=wikipedia_month_partitions
)


@dg.asset_check(
    asset=key("source_pages"),
    blocking=True,
    additional_ins={"source_rejects": dg.AssetIn(key=key("source_rejects"))},
    description="Drawn from Wikipedia: every month of the window (2023-02 to 2025-06) was read or is named "
    "missing in the rejects, and the pages' months of views never exceed the months read.",
)
def window_accounted(
    context: dg.AssetCheckExecutionContext,
    source_pages: pl.DataFrame,
    source_rejects: pl.DataFrame,
    wikiprofile_settings: WikiProfileSettings,
) -> dg.AssetCheckResult:
    if wikiprofile_settings.pages_source != "wikipedia":
        return dg.AssetCheckResult(passed=True, metadata={"not_applicable": "pages from the project's own JSON"})
    event = context.instance.get_latest_materialization_event(key("source_pages"))
    metadata = event.asset_materialization.metadata if event and event.asset_materialization else {}
    read = int(getattr(metadata.get("months_read"), "value", 0) or 0)
    named = set(source_rejects.filter(pl.col("reason") == MISSING_MONTH)["question_id"])
    months = window_months(*WINDOW)
    unaccounted = len(months) - read - len(named & set(months))
    too_many = source_pages.filter(pl.col("months") > read)
    return dg.AssetCheckResult(
        passed=unaccounted == 0 and read >= 1 and too_many.is_empty(),
        metadata={
            "months_read": read,
            "months_named_missing": len(named),
            "unaccounted_months": unaccounted,
            "pages_with_more_months_than_read": too_many.height,
        },
    )


wikipedia_checks = [
    summaries_schema,
    summary_rules,
    summary_rejects_reasons,
    views_schema,
    view_rules,
    view_rejects_reasons,
    window_accounted,
]
SOURCE_REASONS = sources.SOURCE_REASONS | WIKIPEDIA_REASONS | {MISSING_MONTH, NO_SHARD}
