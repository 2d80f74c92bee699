"""WikiProfile's pages from Wikimedia's own data (notes, step 1), as Dagster assets in the UI
group ``wikipedia``: the page summaries one dump shard at a time, the page views one month at
a time, each with its rejects. ``wikiprofile/source_pages`` joins what is materialized of
them when ``wikiprofile_settings.pages_source`` is ``wikipedia`` (:func:`wikipedia_pages`).

The files are the deployment's: ``wikiprofile_settings.wikipedia_path`` names the folder,
``summaries/`` and ``views/`` under it. A run chooses the source, the project and the draw."""

import os
from collections.abc import Iterator

import dagster as dg
import polars as pl

from assets.common.metadata import counts_md, table_metadata
from assets.common.wiring import Wiring
from assets.partitions import wikipedia_month_partitions, wikipedia_shard_partitions
from assets.wikiprofile import sources
from assets.wikiprofile.settings import WikiProfileSettings
from assets.wikiprofile.sources.wikipedia import (
    SUMMARY_SCHEMA,
    WINDOW,
    SummaryReader,
    ViewReader,
    ViewTotals,
    api_months,
    day_of,
    draw_pages,
    join_pages,
    summary_format,
    window_months,
)
from resources.storage import Batches, StorageResource, StoredTable, exists, read_parquet, table_uri

PREFIX, GROUP = "wikiprofile", "wikipedia"
wiring = Wiring(PREFIX, GROUP)
STEP = dict(code_version="1")
SUMMARIES, VIEWS = ("wikiprofile", "wikipedia_summaries"), ("wikiprofile", "wikipedia_views")
MISSING_MONTH = "missing_month"
NO_SHARD = "no_shard"


def shard_files(folder: str) -> tuple[dict[str, str], list[str]]:
    """The summary files of ``folder`` by partition key (the file name), and the files that
    are not one (named, never skipped without a word)."""
    files, unread = {}, []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and summary_format(path):
            files[name] = path
        else:
            unread.append(name)
    return files, unread


def view_files(folder: str, month: str) -> tuple[list[str], list[str]]:
    """The view files of ``folder`` one month reads: the daily files of that month and the
    page-views API files with items of that month; and the files that are neither, named."""
    month_files, unread = [], []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        day = day_of(path)
        if day is not None:
            if day.strftime("%Y-%m") == month:
                month_files.append(path)
        elif name.endswith((".json", ".json.gz", ".json.bz2")):
            if month in api_months(path):
                month_files.append(path)
        else:
            unread.append(name)
    return month_files, unread


def _at_least_one(batches: Iterator[pl.DataFrame], schema: dict) -> Iterator[pl.DataFrame]:
    """The batches, or one empty frame: a shard with no kept summary is still a table."""
    empty = True
    for batch in batches:
        empty = False
        yield batch
    if empty:
        yield pl.DataFrame(schema=schema)


@dg.multi_asset(
    name="wikiprofile_wikipedia_summaries",
    outs={
        "wikipedia_summaries": wiring.out(
            "One summary file's page leads of at least the configured words (a CirrusSearch content dump, a "
            "wikimedia/wikipedia Parquet shard or REST page summaries; partition = file name).",
            {"polars"},
        ),
        "wikipedia_summary_rejects": wiring.out(
            "The file's records not kept, with the reason (not an article, no lead, too short, ...) and line.",
            {"polars"},
        ),
    },
    partitions_def=wikipedia_shard_partitions,
    **STEP,
)
def wikipedia_summaries(context: dg.AssetExecutionContext, wikiprofile_settings: WikiProfileSettings):
    """One shard streamed a batch at a time into its table; the rejects and counts after it."""
    folder = wikiprofile_settings.wikipedia_folder("summaries")
    files, _ = shard_files(folder)
    if context.partition_key not in files:
        raise dg.Failure(f"no summary file {context.partition_key!r} under {folder} (it holds {sorted(files)})")
    reader = SummaryReader(files[context.partition_key], wikiprofile_settings.min_words)
    yield dg.Output(
        Batches(_at_least_one(reader.batches(), SUMMARY_SCHEMA)),
        output_name="wikipedia_summaries",
        metadata={"file": files[context.partition_key], "format": summary_format(files[context.partition_key])},
    )
    context.log.info(f"{context.partition_key}: {reader.counts}")
    rejects = reader.rejects()
    yield dg.Output(
        rejects,
        output_name="wikipedia_summary_rejects",
        metadata={
            **table_metadata(rejects.select("question_id", "reason", "detail")),
            "counts": counts_md(reader.counts, "what"),
            "records": reader.counts.get("records", 0),
            "kept": reader.counts.get("kept", 0),
        },
    )


@dg.multi_asset(
    name="wikiprofile_wikipedia_views",
    outs={
        "wikipedia_views": wiring.out(
            "One month's page views of the project, summed over countries and days (country_project_page daily "
            "files or page-views API JSON; partition = month).",
            {"polars"},
        ),
        "wikipedia_view_rejects": wiring.out(
            "The month's view rows not counted (negative or non-numeric count, not UTF-8), with file and row.",
            {"polars"},
        ),
    },
    partitions_def=wikipedia_month_partitions,
    **STEP,
)
def wikipedia_views(context: dg.AssetExecutionContext, wikiprofile_settings: WikiProfileSettings):
    """One month of the window: its daily files (and the API files' items of that month). A
    month with no file fails, so a backfill shows which months are still to download."""
    folder, month = wikiprofile_settings.wikipedia_folder("views"), context.partition_key[:7]
    files, unread = view_files(folder, month)
    if not files:
        raise dg.Failure(f"no page-view file of {month} under {folder}")
    reader = ViewReader(wikiprofile_settings.wikipedia_project)
    frame = reader.read_month(files, month)
    if frame.is_empty():
        raise dg.Failure(f"{month}: no page view of {wikiprofile_settings.wikipedia_project} in {len(files)} files")
    yield dg.Output(
        frame,
        output_name="wikipedia_views",
        metadata={
            **table_metadata(frame.sort("views", descending=True).select("page_id", "title", "views")),
            "project": wikiprofile_settings.wikipedia_project,
            "counts": counts_md(reader.counts, "what"),
            "files_read": len(files),
            "unread_files": ", ".join(unread) or "none",
        },
    )
    yield wiring.rejects("wikipedia_view_rejects", sources.REJECTS, reader.rejects)


def wikipedia_pages(
    instance: dg.DagsterInstance, storage: StorageResource, settings: WikiProfileSettings, log=None
) -> tuple[pl.DataFrame, pl.DataFrame, dict]:
    """The pages drawn from the materialized shards and months: eligible pages (a summary
    of at least ``min_words`` words and views in the window), ``max_pages`` of them drawn
    (seeded; uniform, or over ``draw_strata`` popularity quantiles), their texts read back
    from the shards. Returns PAGE_SCHEMA pages, the rejects (no views, duplicate page,
    missing month or shard, each named) and the counts for the metadata.

    Memory holds ids, titles, word counts and view totals, never the texts of pages not drawn."""
    rejects: list[dict] = []
    shards = {k: table_uri(storage.root, SUMMARIES, k) for k in instance.get_dynamic_partitions("wikipedia_shards")}
    for key in [k for k, uri in shards.items() if not exists(uri)]:
        del shards[key]
        rejects.append(sources.REJECTS.row(key, "wikipedia", "ingest", NO_SHARD, f"{key}: shard not materialized"))
    if not shards:
        raise dg.Failure("no shard of wikiprofile/wikipedia_summaries is materialized: materialize one first")
    months = window_months(*WINDOW)
    read = [m for m in months if exists(table_uri(storage.root, VIEWS, f"{m}-01"))]
    for m in months:
        if m not in read:
            rejects.append(sources.REJECTS.row(m, "wikipedia", "ingest", MISSING_MONTH, f"{m}: views not materialized"))
    if not read:
        raise dg.Failure("no month of wikiprofile/wikipedia_views is materialized: materialize one first")
    if log and len(read) < len(months):
        log(f"wikipedia views: {len(read)} of {len(months)} months of the window read; the mean is over those")
    totals = ViewTotals(months)
    for m in read:
        totals.add(read_parquet(table_uri(storage.root, VIEWS, f"{m}-01")), m)
    keys = list(shards)
    # the shard of each page as its index in ``keys``: a small integer, not 7M copies of a name
    ids = pl.concat(
        [
            read_parquet(shards[k], ["page_id", "title", "words"]).with_columns(shard=pl.lit(i, pl.UInt16))
            for i, k in enumerate(keys)
        ]
    )
    dup = ids.filter(~pl.col("page_id").is_first_distinct())
    rejects += [
        sources.REJECTS.row(
            r["page_id"],
            "wikipedia",
            "ingest",
            sources.DUPLICATE_PAGE,
            f"{keys[r['shard']]}: page seen in a shard before",
        )
        for r in dup.iter_rows(named=True)
    ]
    ids = ids.filter(pl.col("page_id").is_first_distinct())
    eligible, no_views = join_pages(ids.drop("shard"), totals, len(read))
    drawn = draw_pages(eligible, settings.max_pages, settings.seed, settings.draw_strata)
    wanted = drawn.select("page_id").join(ids.select("page_id", "shard"), on="page_id")
    texts = [
        pl.concat(
            batch.filter(pl.col("page_id").is_in(part["page_id"].implode()))
            for batch in StoredTable((shards[keys[part["shard"][0]]],)).batches("page_id", "summary")
        )
        for part in wanted.partition_by("shard")
    ]
    texts = pl.concat(texts) if texts else pl.DataFrame(schema={"page_id": pl.String, "summary": pl.String})
    pages = drawn.join(texts, on="page_id", how="left").select(
        "page_id",
        "title",
        "summary",
        pl.col("words").cast(pl.Int32),
        pl.col("months").cast(pl.Int32),
        pl.col("mean_monthly_views").cast(pl.Float64),
        reference_category=pl.lit(None, pl.String),
    )
    counts = {
        "shards": len(shards),
        "months_read": len(read),
        "months_missing": len(months) - len(read),
        "summaries": ids.height,
        "eligible": eligible.height,
        "no_views": no_views.height,
        "drawn": pages.height,
    }
    return pages, pl.concat([sources.REJECTS.frame(rejects), no_views.select(list(sources.REJECTS.schema))]), counts


wikipedia_assets = [wikipedia_summaries, wikipedia_views]
