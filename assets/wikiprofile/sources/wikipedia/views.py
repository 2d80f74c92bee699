"""Page views from Wikimedia's published data, one month at a time: the differentially private
``country_project_page`` daily files (the paper's source: one row per country, project and
page, CSV or TSV, compressed or not), and the per-article page-views API's JSON (the
small-scale alternative). Rows of one project are summed per page over countries and days.

The daily files changed over the eras: the count's column is ``private_count``, ``gbc`` or
``privacy_protected_views``, a Wikidata item column came and went; columns are read by their
header, never by position."""

from __future__ import annotations

import datetime
import json
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from assets.wikiprofile.sources import MALFORMED_RECORD, REJECTS
from assets.wikiprofile.sources.wikipedia.files import WikipediaFileError, compression, open_binary
from assets.wikiprofile.sources.wikipedia.summaries import NOT_UTF8

VIEW_SCHEMA = {"page_id": pl.String, "title": pl.String, "views": pl.Int64}
# The paper's window (notes, step 1): February 2023 to June 2025, 29 months.
WINDOW = ("2023-02", "2025-06")
BAD_VIEWS = "bad_views"
VIEW_REASONS = frozenset({BAD_VIEWS, NOT_UTF8, MALFORMED_RECORD})
COUNT_COLUMNS = ("private_count", "gbc", "privacy_protected_views")
TITLE_COLUMNS = ("page_title", "title", "article")
# country_project_page names its files by day: 2023-2-6.csv (month and day not padded) or padded.
_DAY = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})\.(csv|tsv)(\.gz|\.bz2)?$", re.IGNORECASE)
READERS = 2  # daily files read at once
BLOCK = 1 << 24  # pyarrow's CSV block: 16 MiB of decompressed text


def day_of(path: str) -> datetime.date | None:
    """The day a daily view file holds, from its name; None for a file that is not one."""
    found = _DAY.search(os.path.basename(path))
    if not found:
        return None
    try:
        return datetime.date(int(found[1]), int(found[2]), int(found[3]))
    except ValueError:
        return None


def window_months(first: str, last: str) -> list[str]:
    """The months ``YYYY-MM`` from ``first`` to ``last``, both included."""
    year, month = map(int, first.split("-"))
    end = tuple(map(int, last.split("-")))
    months = []
    while (year, month) <= end:
        months.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return months


def api_months(path: str) -> set[str]:
    """The months (``YYYY-MM``) of a page-views API file's items; a file that cannot be read
    counts for every month, so that each month's read names what is wrong with it."""
    try:
        items = _api_items(path)
    except WikipediaFileError:
        return set(window_months("2001-01", "2099-12"))
    stamps = {str(i.get("timestamp", ""))[:6] for i in items if isinstance(i, dict)}
    return {f"{s[:4]}-{s[4:]}" for s in stamps if len(s) == 6 and s.isdigit()}


def _api_items(path: str) -> list:
    """The ``items`` of a page-views API response, or an error naming the file (and line)."""
    with open_binary(path) as f:
        try:
            data = f.read()
        except (EOFError, OSError) as e:
            raise WikipediaFileError(f"{path}: the compressed data breaks ({e}); download the file again") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise WikipediaFileError(f"{path} line {line}: not UTF-8 (byte {data[e.start]:#04x})") from None
    try:
        items = json.loads(text)["items"]
        if not isinstance(items, list):
            raise TypeError("items is not a list")
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        raise WikipediaFileError(f"{path}: not a page-views API response with items ({e})"[:300]) from None
    return items


def _normalized(column: str) -> pl.Expr:
    """:func:`files.normalize_title` as a polars expression."""
    title = pl.col(column).str.replace_all(r"[\s_]+", " ").str.strip_chars()
    return (title.str.slice(0, 1).str.to_uppercase() + title.str.slice(1)).alias("title")


class ViewReader:
    """Reads view files of one ``project`` (``en.wikipedia`` by default) a month at a time.
    :attr:`rejects` holds the rows not counted (a negative or non-numeric count, a title not
    UTF-8, a row of the wrong number of fields), :attr:`counts` what was read."""

    def __init__(self, project: str = "en.wikipedia"):
        self.project = project
        self.rejects: list[dict] = []
        self.counts: dict[str, int] = {"files": 0, "rows": 0, "project_rows": 0}
        self._lock = threading.Lock()

    def read_month(self, paths: list[str], month: str) -> pl.DataFrame:
        """``VIEW_SCHEMA``: each page's views in ``month`` summed over the files' rows."""
        parts = []
        # two files at a time: one decompresses while the other is parsed (both release the GIL);
        # a file's table is dropped once summed, so memory holds two days and the partial sums
        with ThreadPoolExecutor(max_workers=READERS) as pool:
            for part in pool.map(lambda path: self._file(path, month), paths):
                parts.append(part)
                if len(parts) > 8:  # fold the partial sums as they come
                    parts = [_summed(parts)]
        frame = _finished(_summed(parts)) if parts else pl.DataFrame(schema=VIEW_SCHEMA)
        self.counts["pages"] = frame.height
        return frame

    def _file(self, path: str, month: str) -> pl.DataFrame:
        self._count("files")
        return self._daily(path) if day_of(path) is not None else self._api(path, month)

    def _count(self, what: str, n: int = 1) -> None:
        with self._lock:
            self.counts[what] = self.counts.get(what, 0) + n

    def _reject(self, key: str, path: str, reason: str, detail: str, record=None) -> None:
        self._count(reason)
        self.rejects.append(
            REJECTS.row(key, os.path.basename(path), "ingest", reason, f"{os.path.basename(path)} {detail}", record)
        )

    # --- country_project_page daily files ---------------------------------------------------------

    def _header(self, path: str) -> tuple[str, dict[str, str]]:
        """The separator and the columns to read (``project``, ``page_id``, ``title``, ``count``)."""
        with open_binary(path) as f:
            try:
                first = f.readline()
            except (EOFError, OSError) as e:
                raise WikipediaFileError(f"{path}: the compressed data breaks in line 1 ({e})") from None
        try:
            header = first.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError:
            raise WikipediaFileError(f"{path} line 1: the header is not UTF-8") from None
        sep = "\t" if "\t" in header else ","
        names = [n.strip().strip('"').lower() for n in header.split(sep)]
        columns = {"project": "project" if "project" in names else None}
        columns["page_id"] = "page_id" if "page_id" in names else None
        columns["title"] = next((c for c in TITLE_COLUMNS if c in names), None)
        columns["count"] = next((c for c in COUNT_COLUMNS if c in names), None)
        missing = [
            what
            for what, needed in (("project", "project"), ("title", "page_title"), ("count", "a count"))
            if not columns[what]
        ]
        if missing:
            wanted = {
                "count": f"count column ({', '.join(COUNT_COLUMNS)})",
                "title": "page_title",
                "project": "project",
            }
            raise WikipediaFileError(
                f"{path} line 1: the header has no {' and no '.join(wanted[m] for m in missing)}; "
                f"it has {', '.join(names) or 'nothing'}"
            )
        return sep, {what: c for what, c in columns.items() if c}

    def _daily(self, path: str) -> pl.DataFrame:
        sep, columns = self._header(path)
        # A day parses straight into numbers and text when every count and id is a number and
        # every title UTF-8 (the published files are); a day that is not is read again as bytes,
        # each row checked (:meth:`_daily_batch`), so the bad rows are named, not the file.
        typed = {columns["project"]: pa.binary(), columns["title"]: pa.string(), columns["count"]: pa.int64()}
        if "page_id" in columns:
            typed[columns["page_id"]] = pa.int64()
        try:
            table, bad_rows = self._read_daily(path, sep, typed)
        except (pa.ArrowInvalid, OSError, EOFError):
            table = None
        if table is None:
            try:
                table, bad_rows = self._read_daily(path, sep, {c: pa.binary() for c in columns.values()})
            except (pa.ArrowInvalid, OSError, EOFError) as e:
                raise WikipediaFileError(f"{path}: cannot be read to its end ({e}); download the file again") from None
        self._count("rows", table.num_rows)
        for text in bad_rows:
            self._reject(text[:80], path, MALFORMED_RECORD, f"row {text[:200]!r}: not as many fields as the header")
        wanted = pa.scalar(self.project.encode(), pa.binary())
        mask = pc.equal(table.column(columns["project"]), wanted)
        rows = pc.indices_nonzero(mask)
        if not len(rows):
            return pl.DataFrame(schema=PARTIAL)
        # line numbers as the file counts them: the header is line 1 (a skipped bad row shifts them)
        lines, batch = rows.to_numpy() + 2, table.filter(mask)
        if batch.schema.field(columns["count"]).type == pa.int64():
            return self._typed_batch(path, batch, columns, lines)
        return self._daily_batch(path, batch, columns, lines)

    def _read_daily(self, path: str, sep: str, types: dict) -> tuple[pa.Table, list[str]]:
        """The day's columns in ``types``, and the rows skipped for their number of fields."""
        bad_rows: list[str] = []

        def invalid(row) -> str:
            bad_rows.append(row.text)
            return "skip"

        kind = compression(path)
        stream = pa.input_stream(path, compression=None if kind == "none" else kind)
        # a day's file read whole by pyarrow's threads (the four columns only, about 60 MB for a
        # day of every project): one day at a time bounds memory, and streaming it block by
        # block took twice as long
        table = pacsv.read_csv(
            stream,
            read_options=pacsv.ReadOptions(block_size=BLOCK),
            # TSV titles hold quote marks as they are ("Weird_Al"_Yankovic): no quoting in TSV
            parse_options=pacsv.ParseOptions(
                delimiter=sep, quote_char=False if sep == "\t" else '"', invalid_row_handler=invalid
            ),
            convert_options=pacsv.ConvertOptions(
                include_columns=list(types),
                column_types=types,
                # only an empty field is missing (an id-less row); "NA" or "null" is no number
                null_values=[""],
                strings_can_be_null=False,
            ),
        )
        return table, bad_rows

    def _typed_batch(self, path: str, batch: pa.Table, columns: dict[str, str], lines) -> pl.DataFrame:
        """One day's rows of the project as parsed to numbers: a missing or negative count rejected."""
        self._count("project_rows", batch.num_rows)
        ids = (
            pl.from_arrow(batch.column(columns["page_id"]))
            if "page_id" in columns
            else pl.Series([None] * batch.num_rows, dtype=pl.Int64)
        )
        frame = pl.DataFrame(
            {
                "line": lines,
                "page_id": ids,
                "raw_title": pl.from_arrow(batch.column(columns["title"])),
                "views": pl.from_arrow(batch.column(columns["count"])),
            }
        )
        bad = pl.col("views").is_null() | (pl.col("views") < 0)
        for r in frame.filter(bad).iter_rows(named=True):
            count = "" if r["views"] is None else str(r["views"])
            self._reject(
                r["raw_title"], path, BAD_VIEWS, f"line {r['line']}: count {count!r} is not a count of at least 0"
            )
        return _partial(frame.filter(~bad).select("page_id", "raw_title", "views"))

    def _daily_batch(self, path: str, batch: pa.Table, columns: dict[str, str], lines) -> pl.DataFrame:
        """One batch of the project's rows: titles decoded, counts parsed, bad rows rejected."""
        self._count("project_rows", batch.num_rows)
        titles = batch.column(columns["title"])
        try:
            titles = pc.cast(titles, pa.string())
            bad_title = None
        except pa.ArrowInvalid:  # a title not UTF-8: find which, reject them, keep the rest
            values = titles.to_pylist()
            bad_title = [_not_utf8(v) for v in values]
            titles = pa.array([None if b else v.decode() for v, b in zip(values, bad_title)], pa.string())
        counts = pl.from_arrow(pc.cast(batch.column(columns["count"]), pa.string(), safe=False))
        ids = (
            pl.from_arrow(pc.cast(batch.column(columns["page_id"]), pa.string(), safe=False))
            if "page_id" in columns
            else pl.Series([""] * batch.num_rows, dtype=pl.String)
        )
        frame = pl.DataFrame(
            {"line": lines, "raw_id": ids, "raw_title": pl.from_arrow(titles), "count": counts}
        ).with_columns(
            views=pl.col("count").cast(pl.Int64, strict=False),
            page_id=pl.col("raw_id").cast(pl.Int64, strict=False),
            bad_title=pl.Series(bad_title, dtype=pl.Boolean) if bad_title is not None else pl.lit(False),
        )
        bad = (
            pl.col("bad_title")
            | pl.col("views").is_null()
            | (pl.col("views") < 0)
            | (pl.col("page_id").is_null() & (pl.col("raw_id") != ""))
        )
        frame = frame.with_columns(bad=bad)
        for r in frame.filter(pl.col("bad")).iter_rows(named=True):
            where = f"line {r['line']}"
            if r["bad_title"]:
                self._reject(where, path, NOT_UTF8, f"{where}: the page title is not UTF-8")
            elif r["page_id"] is None and r["raw_id"] != "":
                self._reject(
                    r["raw_title"], path, MALFORMED_RECORD, f"{where}: page id {r['raw_id'][:40]!r} is not a number"
                )
            else:
                self._reject(
                    r["raw_title"], path, BAD_VIEWS, f"{where}: count {r['count'][:40]!r} is not a count of at least 0"
                )
        return _partial(frame.filter(~pl.col("bad")).select("page_id", "raw_title", "views"))

    # --- the page-views API's JSON ---------------------------------------------------------------

    def _api(self, path: str, month: str) -> pl.DataFrame:
        """``{"items": [{"project", "article", "timestamp", "views"}, ...]}``: the items of
        ``month`` and the project (their timestamps ``YYYYMMDDHH``)."""
        items = _api_items(path)
        stamp, rows = month.replace("-", ""), []
        for i, item in enumerate(items):
            self._count("rows")
            if not isinstance(item, dict) or not isinstance(item.get("article"), str):
                self._reject(f"item {i}", path, MALFORMED_RECORD, f"item {i}: no article", item)
                continue
            if item.get("project", self.project) != self.project:
                continue
            if not str(item.get("timestamp", "")).startswith(stamp):
                continue
            self._count("project_rows")
            views = item.get("views")
            if not isinstance(views, int) or isinstance(views, bool) or views < 0:
                self._reject(
                    item["article"], path, BAD_VIEWS, f"item {i}: views {views!r} is not a count of at least 0", item
                )
                continue
            rows.append({"page_id": None, "raw_title": item["article"], "views": views})
        return _partial(pl.DataFrame(rows, schema=PARTIAL))


def _not_utf8(value: bytes | None) -> bool:
    try:
        value is None or value.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


# A file's views before the titles are normalized: page ids as integers, the titles as written.
PARTIAL = {"page_id": pl.Int64, "raw_title": pl.String, "views": pl.Int64}


def _partial(frame: pl.DataFrame) -> pl.DataFrame:
    """Views summed per page id (a page's title as the first of its rows has it: within a day
    and project an id has one title), and per title for rows without an id."""
    by_id = frame.filter(pl.col("page_id").is_not_null()) if frame["page_id"].null_count() else frame
    parts = [by_id.group_by("page_id").agg(pl.col("raw_title").first(), pl.col("views").sum())]
    if frame["page_id"].null_count():
        by_title = frame.filter(pl.col("page_id").is_null()).group_by("raw_title").agg(pl.col("views").sum())
        parts.append(by_title.select(pl.lit(None, pl.Int64).alias("page_id"), "raw_title", "views"))
    return pl.concat([p.select(list(PARTIAL)).cast(PARTIAL) for p in parts])


def _summed(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """The partial sums folded into one (per page id and title as written)."""
    return _partial(pl.concat(parts))


def _finished(partial: pl.DataFrame) -> pl.DataFrame:
    """``VIEW_SCHEMA``: titles normalized once per page (not per country row), ids as text."""
    return (
        partial.with_columns(_normalized("raw_title"))
        .group_by("page_id", "title")
        .agg(pl.col("views").sum())
        .select(pl.col("page_id").cast(pl.String), "title", "views")
        .cast(VIEW_SCHEMA)
    )
