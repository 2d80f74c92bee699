"""Loading Wikipedia page summaries with their monthly page views (JSON Lines, JSON list or
Parquet; local path or s3 URI), and the popularity tiers of the analyses."""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from assets.common.records import read_records
from assets.common.rejects import Rejects

# The paper keeps documents of at least 50 words (notes, step 1).
MIN_WORDS = 50

PAGE_SCHEMA = {
    "page_id": pl.String,
    "title": pl.String,
    "summary": pl.String,
    "words": pl.Int32,
    "months": pl.Int32,
    "mean_monthly_views": pl.Float64,
    "reference_category": pl.String,
}
# Rejected page records: the page and the file it came from name the item.
REJECTS = Rejects(("question_id", "source"))
# The reasons of ``load_pages`` and of ``load_search_pages``, the vocabularies of their rejects.
MALFORMED_RECORD, DUPLICATE_PAGE, TOO_SHORT = "malformed_record", "duplicate_page", "too_short"
SOURCE_REASONS = frozenset({MALFORMED_RECORD, DUPLICATE_PAGE, TOO_SHORT})
SEARCH_PAGE_REASONS = frozenset({MALFORMED_RECORD, DUPLICATE_PAGE})


def page_id(title: str) -> str:
    """A stable id from the title: lower case, runs of anything but letters and digits as ``_``."""
    return re.sub(r"[^0-9a-z]+", "_", title.lower()).strip("_")


def _views(value: Any) -> tuple[int, float] | None:
    """(months, mean monthly views) from ``{"2025-04": 1200, ...}``, a list of
    ``{"month": ..., "views": ...}`` items or a single number; None when malformed."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        counts = [value]
    elif isinstance(value, dict) and value:
        counts = list(value.values())
    elif isinstance(value, list) and value and all(isinstance(v, dict) and "views" in v for v in value):
        counts = [v["views"] for v in value]
    else:
        return None
    if not all(isinstance(c, (int, float)) and not isinstance(c, bool) and c >= 0 for c in counts):
        return None
    return len(counts), float(sum(counts)) / len(counts)


def load_pages(uri: str, min_words: int = MIN_WORDS) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The pages and the rejected records. A record needs ``title``, ``summary`` and
    ``monthly_views``; duplicate titles and summaries under ``min_words`` words are rejected
    with the reason, as are records that are not JSON objects."""
    pages, rejects, seen = [], [], set()
    for where, rec in read_records(uri):
        if not isinstance(rec, dict):
            rejects.append(REJECTS.row(where, "wikipedia", "ingest", MALFORMED_RECORD, f"{where}: {rec}"[:300], rec))
            continue
        title = rec.get("title") if isinstance(rec.get("title"), str) else ""
        summary = " ".join(rec["summary"].split()) if isinstance(rec.get("summary"), str) else ""
        views = _views(rec.get("monthly_views"))
        pid = page_id(title) if title.strip() else where
        if not title.strip() or not summary or views is None:
            missing = [
                k for k, ok in (("title", title.strip()), ("summary", summary), ("monthly_views", views)) if not ok
            ]
            rejects.append(
                REJECTS.row(
                    pid,
                    "wikipedia",
                    "ingest",
                    MALFORMED_RECORD,
                    f"{where}: missing or malformed {', '.join(missing)}",
                    rec,
                )
            )
        elif pid in seen:
            rejects.append(
                REJECTS.row(pid, "wikipedia", "ingest", DUPLICATE_PAGE, f"{where}: title {title!r} seen before", rec)
            )
        elif len(summary.split()) < min_words:
            rejects.append(
                REJECTS.row(
                    pid,
                    "wikipedia",
                    "ingest",
                    TOO_SHORT,
                    f"{where}: {len(summary.split())} words (needs {min_words})",
                    rec,
                )
            )
        else:
            seen.add(pid)
            category = rec.get("category") if isinstance(rec.get("category"), str) else None
            pages.append(
                {
                    "page_id": pid,
                    "title": title.strip(),
                    "summary": summary,
                    "words": len(summary.split()),
                    "months": views[0],
                    "mean_monthly_views": views[1],
                    "reference_category": category,
                }
            )
    return pl.DataFrame(pages, schema=PAGE_SCHEMA), REJECTS.frame(rejects)


def popularity_tiers(pages: pl.DataFrame, share: float = 0.2, key: str = "page_id") -> pl.DataFrame:
    """``key`` -> ``tier``: ``top`` for the most viewed ``share`` of rows, ``bottom`` for the
    least viewed, ``middle`` otherwise (ties broken by the key, so tiers are stable). The
    analyses rank facts (``key="fact_id"``) by their page's views."""
    n = pages.height
    k = int(n * share)
    ranked = pages.sort(["mean_monthly_views", key], descending=[True, False]).with_row_index("rank")
    return ranked.select(
        key,
        pl.when(pl.col("rank") < k)
        .then(pl.lit("top"))
        .when(pl.col("rank") >= n - k)
        .then(pl.lit("bottom"))
        .otherwise(pl.lit("middle"))
        .alias("tier"),
    )


def load_search_pages(uri: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The local page collection the search-grounded filter searches: ``id``, ``title`` and
    ``contents`` per record (pyserini's JsonCollection fields, plus the title), as
    ``doc_id`` and ``content`` (title and text). Malformed and duplicate records are rejected."""
    docs, rejects, seen = [], [], set()
    for where, rec in read_records(uri):
        ok = isinstance(rec, dict) and all(
            isinstance(rec.get(k), str) and rec[k].strip() for k in ("id", "title", "contents")
        )
        if not ok:
            rejects.append(
                REJECTS.row(
                    where, "search_pages", "ingest", MALFORMED_RECORD, f"{where}: needs id, title and contents", rec
                )
            )
        elif rec["id"] in seen:
            rejects.append(
                REJECTS.row(rec["id"], "search_pages", "ingest", DUPLICATE_PAGE, f"{where}: id seen before", rec)
            )
        else:
            seen.add(rec["id"])
            docs.append(
                {"doc_id": rec["id"], "content": f"{rec['title'].strip()}. {' '.join(rec['contents'].split())}"}
            )
    return (pl.DataFrame(docs, schema={"doc_id": pl.String, "content": pl.String}), REJECTS.frame(rejects))


def search_collection(pages: pl.DataFrame, search_pages: pl.DataFrame) -> pl.DataFrame:
    """The collection the search-grounded filter searches: the source pages themselves (a web
    search would find them too) and the local page collection."""
    own = pages.select(
        pl.col("page_id").alias("doc_id"), pl.concat_str("title", pl.lit(". "), "summary").alias("content")
    )
    return pl.concat([own, search_pages.filter(~pl.col("doc_id").is_in(own["doc_id"].implode()))])
