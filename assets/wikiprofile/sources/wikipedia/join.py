"""The join of summaries and views (notes, step 1): each page's mean monthly views over the
months read, the pages with none named, and the draw of the pages the benchmark starts from.
Memory holds ids, titles, word counts and view totals, never a summary's text."""

from __future__ import annotations

import polars as pl

from assets.wikiprofile.sources import REJECTS
from assets.wikiprofile.sources.wikipedia.views import _normalized

NO_VIEWS = "no_views"
ID_TOTALS = {"page_id": pl.Int64, "total_views": pl.Int64, "month_mask": pl.UInt64}
TITLE_TOTALS = {"title": pl.String, "total_views": pl.Int64, "month_mask": pl.UInt64}
ELIGIBLE_SCHEMA = {
    "page_id": pl.String,
    "title": pl.String,
    "words": pl.Int32,
    "months": pl.Int32,
    "mean_monthly_views": pl.Float64,
}


class ViewTotals:
    """Views summed over months, a month at a time (:meth:`add`): per page id where the rows
    have one (the daily files; held as integers), per normalized title where they do not (the
    API's items). Which months a page had views in is a bit per month of ``months`` (the
    window's 29; at most 64), so a page counted by id in one month and by title in another
    has both months. No title of a page with an id is held: the summaries have them."""

    def __init__(self, months: list[str]):
        if len(months) > 64:
            raise ValueError(f"a window of {len(months)} months: at most 64 are counted")
        self.months = list(months)
        self.by_id = pl.DataFrame(schema=ID_TOTALS)
        self.by_title = pl.DataFrame(schema=TITLE_TOTALS)

    def add(self, views: pl.DataFrame, month: str) -> None:
        """One month's ``VIEW_SCHEMA`` table; a page counts one month however many rows it has."""
        bit = pl.lit(1 << self.months.index(month), pl.UInt64)
        with_id = views.filter(pl.col("page_id").is_not_null())
        month_ids = (
            with_id.select(pl.col("page_id").cast(pl.Int64), "views")
            .group_by("page_id")
            .agg(total_views=pl.col("views").sum(), month_mask=bit)
        )
        month_titles = (
            views.filter(pl.col("page_id").is_null())
            .group_by("title")
            .agg(total_views=pl.col("views").sum(), month_mask=bit)
        )
        self.by_id = _fold(self.by_id, month_ids, "page_id", ID_TOTALS)
        self.by_title = _fold(self.by_title, month_titles, "title", TITLE_TOTALS)

    def frame(self) -> pl.DataFrame:
        """Both totals as one table: ``page_id`` (null for title-only rows), ``title`` (null for
        rows with an id), ``total_views``, ``month_mask`` and ``months_seen``."""
        return pl.concat(
            [
                self.by_id.select(
                    pl.col("page_id").cast(pl.String),
                    pl.lit(None, pl.String).alias("title"),
                    "total_views",
                    "month_mask",
                ),
                self.by_title.select(pl.lit(None, pl.String).alias("page_id"), "title", "total_views", "month_mask"),
            ]
        ).with_columns(months_seen=pl.col("month_mask").bitwise_count_ones().cast(pl.Int32))


def _fold(totals: pl.DataFrame, month: pl.DataFrame, key: str, schema: dict) -> pl.DataFrame:
    """``month``'s totals added to ``totals``: a join on the key (a month's keys are unique), a
    third of the time and memory a group-by over both took at English Wikipedia's size."""
    month = month.select(list(schema)).cast(schema)
    if not totals.height:
        return month
    joined = totals.join(month, on=key, how="full", coalesce=True, suffix="_month")
    return joined.select(
        key,
        total_views=pl.col("total_views").fill_null(0) + pl.col("total_views_month").fill_null(0),
        month_mask=pl.col("month_mask").fill_null(0) | pl.col("month_mask_month").fill_null(0),
    ).cast(schema)


def join_pages(ids: pl.DataFrame, totals: ViewTotals, months_read: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The summaries' pages (``page_id``, ``title``, ``words``) joined with the view totals by
    page id, and by normalized title for views that have no id (where a page has both, the
    views add up and so do its months with views). The mean monthly views divide by every
    month read, so a month in which the page had too few views to be published counts as
    none. Returns the eligible pages (``ELIGIBLE_SCHEMA``, views above 0) and the pages with
    no views in the months read as ``no_views`` rejects."""
    joined = ids.with_columns(key=pl.col("page_id").cast(pl.Int64, strict=False)).join(
        totals.by_id.rename({"page_id": "key"}), on="key", how="left"
    )
    if totals.by_title.height:
        titles = totals.by_title.rename({"total_views": "title_views", "month_mask": "title_mask"})
        joined = joined.with_columns(_normalized("title").alias("norm")).join(
            titles, left_on="norm", right_on="title", how="left"
        )
    else:
        joined = joined.with_columns(title_views=pl.lit(None, pl.Int64), title_mask=pl.lit(None, pl.UInt64))
    joined = joined.select(
        "page_id",
        "title",
        "words",
        views=pl.col("total_views").fill_null(0) + pl.col("title_views").fill_null(0),
        months=(pl.col("month_mask").fill_null(0) | pl.col("title_mask").fill_null(0)).bitwise_count_ones(),
    )
    eligible = joined.filter(pl.col("views") > 0).select(
        "page_id",
        "title",
        pl.col("words").cast(pl.Int32),
        pl.col("months").cast(pl.Int32),
        mean_monthly_views=pl.col("views") / max(months_read, 1),
    )
    no_views = joined.filter(pl.col("views") <= 0).select(
        question_id="page_id",
        source=pl.lit("wikipedia"),
        step=pl.lit("ingest"),
        reason=pl.lit(NO_VIEWS),
        detail=pl.concat_str(pl.col("title"), pl.lit(f": no views of the project in the {months_read} months read")),
        record=pl.lit(None, pl.String),
    )
    return eligible.cast(ELIGIBLE_SCHEMA), no_views.cast(REJECTS.schema)


def draw_pages(eligible: pl.DataFrame, n: int | None, seed: int, strata: int = 0) -> pl.DataFrame:
    """``n`` of the eligible pages (all of them when ``n`` is None or not smaller), seeded:
    uniformly (``strata`` 0, the default: the paper does not say how its 10,000 were drawn),
    or the same number from each of ``strata`` popularity quantiles of mean monthly views
    (a quantile with too few pages gives all it has). The draw does not depend on the order
    the shards were read in: pages are ordered by page id first, and the drawn ones stay so.
    The draw picks positions in that order; only the drawn rows are gathered."""
    height = eligible.height
    order = (
        pl.DataFrame({"key": eligible["page_id"].cast(pl.Int64, strict=False), "text": eligible["page_id"]})
        .with_row_index("row")
        .sort("key", "text")["row"]
    )
    if n is None or n >= height:
        return eligible[order]
    positions = pl.int_range(0, height, eager=True, dtype=pl.UInt32)
    if strata <= 0:
        picked = positions.sample(n=n, seed=seed)
    else:
        views = eligible["mean_monthly_views"].gather(order)
        stratum = (views.rank("ordinal") - 1) * strata // height
        share, extra = divmod(n, strata)
        picked = []
        for s in range(strata):
            members = positions.filter(stratum == s)
            picked.append(members.sample(n=min(share + (1 if s < extra else 0), members.len()), seed=seed + s))
        picked = pl.concat(picked)
    return eligible[order.gather(picked.sort())]
