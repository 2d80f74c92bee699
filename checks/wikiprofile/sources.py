"""Checks of what WikiProfile reads (``assets.wikiprofile.sources``, step 1): the source pages,
the page collection the search filters search, and their rejects."""

from __future__ import annotations

import dagster as dg
import polars as pl

from assets.wikiprofile import sources
from assets.wikiprofile.settings import WikiProfileSettings
from checks.factories import flags, rejects_check, rows_check, table_check, unmet
from checks.wikiprofile import wikipedia
from checks.wikiprofile.shared import ins, key

# sources.search_collection's documents.
PAGE_INDEX_SCHEMA = {"doc_id": pl.String, "content": pl.String}


# --- step 1: pages ------------------------------------------------------------------------------

source_pages_schema = table_check(
    key("source_pages"),
    sources.PAGE_SCHEMA,
    unique=["page_id"],
    not_null=["page_id", "title", "summary", "words", "months", "mean_monthly_views"],
)


@dg.asset_check(
    asset=key("source_pages"),
    blocking=True,
    description="Summaries of at least the configured words (the paper's 50), counted right; ids from the titles "
    "(Wikipedia's numeric page ids when drawn from Wikimedia's data); views over at least one month, none negative.",
)
def page_rules(source_pages: pl.DataFrame, wikiprofile_settings: WikiProfileSettings) -> dg.AssetCheckResult:
    least = wikiprofile_settings.min_words
    from_wikipedia = wikiprofile_settings.pages_source == "wikipedia"
    frame = source_pages.with_columns(
        pl.col("page_id").str.contains(r"^[0-9]+$").alias("id_of_title")
        if from_wikipedia
        else flags(source_pages, lambda pid, title: pid == sources.page_id(title), "page_id", "title").alias(
            "id_of_title"
        )
    )
    bad = unmet(
        frame,
        {
            f"at least {least} words": pl.col("words") >= least,
            "words counts the summary's words": pl.col("words") == pl.col("summary").str.count_matches(r"\S+"),
            ("a Wikipedia page id" if from_wikipedia else "page_id made from the title"): pl.col("id_of_title"),
            "views over at least one month, none negative": (pl.col("months") >= 1)
            & (pl.col("mean_monthly_views") >= 0),
        },
        ids=["page_id"],
    )
    return rows_check(bad, "pages as the method samples them")


# from Wikimedia's data the rejects say also which pages had no views and which months were missing
source_rejects_reasons = rejects_check(key("source_rejects"), wikipedia.SOURCE_REASONS, sources.REJECTS.keys)


# --- the page collection the search filters search ---------------------------------------------

page_index_schema = table_check(
    key("page_index"), PAGE_INDEX_SCHEMA, unique=["doc_id"], not_null=list(PAGE_INDEX_SCHEMA)
)


@dg.asset_check(
    asset=key("page_index"),
    blocking=True,
    additional_ins=ins("source_pages"),
    description="Every source page is in the collection as its title and summary: a web search would find it.",
)
def source_pages_indexed(page_index: pl.DataFrame, source_pages: pl.DataFrame) -> dg.AssetCheckResult:
    frame = source_pages.join(page_index, left_on="page_id", right_on="doc_id", how="left")
    bad = unmet(
        frame,
        {"indexed as its title and summary": pl.col("content") == pl.format("{}. {}", "title", "summary")},
        ids=["page_id"],
    )
    return rows_check(bad, "the source pages are searchable")


page_index_rejects_reasons = rejects_check(key("page_index_rejects"), sources.SEARCH_PAGE_REASONS, sources.REJECTS.keys)


source_checks = [
    source_pages_schema,
    page_rules,
    source_rejects_reasons,
    page_index_schema,
    source_pages_indexed,
    page_index_rejects_reasons,
]
