"""Page summaries (a page's lead) from the files researchers download, streamed a batch at a
time: Wikipedia's CirrusSearch content dumps, the Hugging Face ``wikimedia/wikipedia`` Parquet
shards, and JSON Lines of the REST API's page summaries. Every record read is kept or
rejected with its reason and line; :attr:`SummaryReader.counts` says how many of each."""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterator

import polars as pl
import pyarrow.parquet as pq

from assets.wikiprofile.sources import DUPLICATE_PAGE, MALFORMED_RECORD, MIN_WORDS, REJECTS, TOO_SHORT
from assets.wikiprofile.sources.wikipedia.files import WikipediaFileError, numbered_lines

SUMMARY_SCHEMA = {"page_id": pl.String, "title": pl.String, "summary": pl.String, "words": pl.Int32}
NOT_UTF8, MISSING_DOCUMENT, NOT_ARTICLE = "not_utf8", "missing_document", "not_article"
NO_LEAD, DISAMBIGUATION = "no_lead", "disambiguation"
SUMMARY_REASONS = frozenset(
    {MALFORMED_RECORD, NOT_UTF8, MISSING_DOCUMENT, NOT_ARTICLE, NO_LEAD, DISAMBIGUATION, TOO_SHORT, DUPLICATE_PAGE}
)
BATCH_ROWS = 50_000
BATCH_BYTES = 1 << 25  # a batch of page documents holds at most 32 MiB of them (real ones are ~20 KB)
_ACTION_ID = re.compile(rb'"_id"\s*:\s*"?([0-9]+)"?\s*[,}]')
JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
# The fields of a CirrusSearch page document the lead needs; the dump's others (the full text,
# the wikitext, links, templates) are skipped by the JSON reader, never converted.
CIRRUS_FIELDS = {"namespace": pl.Int64, "title": pl.String, "opening_text": pl.String, "category": pl.List(pl.String)}
# The frame every format is judged from: one row per record read.
READ_SCHEMA = {
    "line": pl.Int64,
    "page_id": pl.String,
    "title": pl.String,
    "lead": pl.String,
    "namespace": pl.Int64,
    "disambiguation": pl.Boolean,
    "malformed": pl.String,
}
_HEADING_MARKUP = re.compile(r"={2,}[^=].*?={2,}")
_SENTENCE_END = tuple(".!?:;,\"'”’)]…")


def summary_format(path: str) -> str | None:
    """``cirrus``, ``hf`` or ``rest`` for a summary file (by name, then by its first line),
    or None for a file that is none of them."""
    name = os.path.basename(path).lower()
    for compressed in (".gz", ".bz2"):
        name = name.removesuffix(compressed)
    if name.endswith(".parquet"):
        return "hf"
    if not name.endswith(JSON_SUFFIXES):
        return None
    try:
        first = next((line for _, line in numbered_lines(path) if line.strip()), b"")
    except WikipediaFileError:
        first = b""  # the reader names the damage; the file is still a summary file by its name
    return "cirrus" if first.lstrip().startswith(b'{"index"') or "cirrussearch" in name else "rest"


def is_heading(line: str) -> bool:
    """Whether a line of a ``wikimedia/wikipedia`` text is a section heading. The dataset's
    text keeps headings as lines of their own without their ``==`` markup: a heading is a
    line in ``==`` markup (left in by some extractions), or a short line (at most 10 words and
    100 characters) that does not end as a sentence ends (``.``, ``!``, ``?``, ``:``, ``;``,
    ``,``, a quote or a closing bracket). A paragraph of a lead is a sentence or more, so
    ends as one."""
    line = line.strip()
    if _HEADING_MARKUP.fullmatch(line):
        return True
    return bool(line) and len(line) <= 100 and len(line.split()) <= 10 and not line.endswith(_SENTENCE_END)


def hf_lead(text: str, title: str = "") -> str:
    """The lead of a ``wikimedia/wikipedia`` text: its lines before the first heading
    (:func:`is_heading`), joined by spaces. A first line that repeats the title is not a
    heading. Only the lines up to the heading are looked at."""
    lines, start = [], 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line, start = text[start:end].strip(), end + 1
        if not line or (not lines and line == title.strip()):
            continue
        if is_heading(line):
            break
        lines.append(line)
    return " ".join(lines)


class SummaryReader:
    """One summary file read in batches of kept summaries (:meth:`batches`, ``SUMMARY_SCHEMA``);
    after them, :meth:`rejects` (a REJECTS frame: page id or line, the file, the reason) and
    :attr:`counts` (``records``, ``kept`` and one count per reason).

    Memory holds one batch of records and the page ids seen (to reject a page twice in a file)."""

    def __init__(self, path: str, min_words: int = MIN_WORDS, batch_rows: int = BATCH_ROWS):
        self.path, self.min_words, self.batch_rows = path, min_words, batch_rows
        self.name = os.path.basename(path)
        self.format = summary_format(path)
        if self.format is None:
            raise WikipediaFileError(f"{path}: not a summary file (.parquet, or .json/.jsonl/.ndjson, gzipped or not)")
        self.counts: dict[str, int] = {"records": 0, "kept": 0}
        self._rejects: list[pl.DataFrame] = []
        self._seen: set[str] = set()

    def batches(self) -> Iterator[pl.DataFrame]:
        read = {"cirrus": self._cirrus, "hf": self._hf, "rest": self._rest}[self.format]
        for frame in read():
            kept = self._judge(frame)
            if kept.height:
                yield kept

    def rejects(self) -> pl.DataFrame:
        return pl.concat(self._rejects) if self._rejects else REJECTS.empty()

    # --- the formats, each into READ_SCHEMA frames ------------------------------------------------

    def _cirrus(self) -> Iterator[pl.DataFrame]:
        """Elasticsearch bulk pairs: an action line naming the page id, then its document."""
        pending, ids, lines, docs, size = None, [], [], [], 0
        for n, line in numbered_lines(self.path):
            if not line.strip():
                continue
            if line.lstrip().startswith(b'{"index"'):
                if pending is not None:
                    yield self._problem(pending[0], pending[1], MISSING_DOCUMENT, "an action line with no document")
                pending = (n, _action_id(line))
                continue
            if pending is None:
                yield self._problem(n, None, MALFORMED_RECORD, "a document with no action line before it")
                continue
            ids.append(pending[1])
            lines.append(n)
            docs.append(line)
            size += len(line)
            pending = None
            if len(docs) >= self.batch_rows or size >= BATCH_BYTES:
                yield _cirrus_frame(ids, lines, docs)
                ids, lines, docs, size = [], [], [], 0
        if docs:
            yield _cirrus_frame(ids, lines, docs)
        if pending is not None:
            yield self._problem(pending[0], pending[1], MISSING_DOCUMENT, "the file ends after an action line")

    def _hf(self) -> Iterator[pl.DataFrame]:
        """``wikimedia/wikipedia`` rows (``id``, ``url``, ``title``, ``text``), a row group at a time."""
        try:
            parquet = pq.ParquetFile(self.path)
        except Exception as e:  # pyarrow raises several kinds for a file that is not Parquet
            raise WikipediaFileError(f"{self.path}: not a Parquet file ({e})") from None
        missing = {"id", "title", "text"} - set(parquet.schema_arrow.names)
        if missing:
            raise WikipediaFileError(
                f"{self.path}: no column {', '.join(sorted(missing))} (wikimedia/wikipedia has id, url, title, text; "
                f"this file has {', '.join(parquet.schema_arrow.names)})"
            )
        row = 0
        for batch in parquet.iter_batches(batch_size=self.batch_rows, columns=["id", "title", "text"]):
            ids, titles, texts = (batch.column(c).to_pylist() for c in ("id", "title", "text"))
            rows = []
            for i, (pid, title, text) in enumerate(zip(ids, titles, texts), start=row + 1):
                ok = isinstance(title, str) and isinstance(text, str) and pid is not None
                rows.append(
                    {
                        "line": i,
                        "page_id": None if pid is None else str(pid),
                        "title": title,
                        "lead": hf_lead(text, title) if ok else None,
                        "namespace": 0,
                        "disambiguation": False,
                        "malformed": None if ok else "a row without id, title or text",
                    }
                )
            row += len(rows)
            yield pl.DataFrame(rows, schema=READ_SCHEMA)

    def _rest(self) -> Iterator[pl.DataFrame]:
        """REST page summaries, one JSON object a line (``pageid``, ``title``, ``extract``, ``type``)."""
        rows = []
        for n, line in numbered_lines(self.path):
            if not line.strip():
                continue
            rows.append(_rest_row(n, line))
            if len(rows) >= self.batch_rows:
                yield pl.DataFrame(rows, schema=READ_SCHEMA)
                rows = []
        if rows:
            yield pl.DataFrame(rows, schema=READ_SCHEMA)

    def _problem(self, line: int, pid: str | None, reason: str, detail: str) -> pl.DataFrame:
        """A record that is not one, as a READ_SCHEMA row that :meth:`_judge` rejects with ``reason``."""
        return pl.DataFrame([{"line": line, "page_id": pid, "malformed": f"{reason}|{detail}"}], schema=READ_SCHEMA)

    # --- one rule for all formats -----------------------------------------------------------------

    def _judge(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The kept summaries of ``frame``; its other rows become rejects, each with one reason
        (the first of: malformed, not an article, disambiguation, no lead, too short, seen before)."""
        least = self.min_words
        frame = frame.with_columns(summary=pl.col("lead").str.replace_all(r"\s+", " ").str.strip_chars()).with_columns(
            # one space between words now: the words are the spaces and one
            words=pl.when(pl.col("summary").fill_null("") == "")
            .then(0)
            .otherwise(pl.col("summary").str.count_matches(" ", literal=True) + 1)
        )
        numeric = pl.col("page_id").str.contains(r"^[0-9]+$").fill_null(False)
        reason = (
            pl.when(pl.col("malformed").is_not_null())
            .then(pl.col("malformed").str.extract(r"^(\w+)\|", 1).fill_null(MALFORMED_RECORD))
            .when(~numeric | pl.col("title").is_null() | (pl.col("title").str.strip_chars() == ""))
            .then(pl.lit(MALFORMED_RECORD))
            .when(pl.col("namespace").fill_null(0) != 0)
            .then(pl.lit(NOT_ARTICLE))
            .when(pl.col("disambiguation").fill_null(False))
            .then(pl.lit(DISAMBIGUATION))
            .when(pl.col("summary").fill_null("") == "")
            .then(pl.lit(NO_LEAD))
            .when(pl.col("words") < least)
            .then(pl.lit(TOO_SHORT))
        )
        frame = frame.with_columns(reason=reason).with_row_index("row")
        # a page twice in the file (in this batch or an earlier one): the first kept, the others rejected
        again = []
        for row, pid in frame.filter(pl.col("reason").is_null()).select("row", "page_id").iter_rows():
            if pid in self._seen:
                again.append(row)
            else:
                self._seen.add(pid)
        if again:
            frame = frame.with_columns(
                reason=pl.when(pl.col("row").is_in(again)).then(pl.lit(DUPLICATE_PAGE)).otherwise(pl.col("reason"))
            )
        self.counts["records"] += frame.height
        rejected = frame.filter(pl.col("reason").is_not_null())
        for what, n in rejected.group_by("reason").len().iter_rows():
            self.counts[what] = self.counts.get(what, 0) + n
        if rejected.height:
            self._rejects.append(self._reject_frame(rejected))
        kept = frame.filter(pl.col("reason").is_null()).select(
            "page_id", pl.col("title").str.strip_chars(), "summary", pl.col("words").cast(pl.Int32)
        )
        self.counts["kept"] += kept.height
        return kept

    def _reject_frame(self, rejected: pl.DataFrame) -> pl.DataFrame:
        where = pl.concat_str(pl.lit(f"{self.name} line "), pl.col("line").cast(pl.String))
        words = pl.col("words").cast(pl.String)
        detail = (
            pl.when(pl.col("malformed").is_not_null())
            .then(pl.col("malformed").str.replace(r"^\w+\|", ""))
            .when(pl.col("reason") == TOO_SHORT)
            .then(pl.concat_str(words, pl.lit(f" words (needs {self.min_words})")))
            .when(pl.col("reason") == NOT_ARTICLE)
            .then(pl.concat_str(pl.lit("namespace "), pl.col("namespace").cast(pl.String)))
            .when(pl.col("reason") == MALFORMED_RECORD)
            .then(pl.lit("no numeric page id or no title"))
            .when(pl.col("reason") == DUPLICATE_PAGE)
            .then(pl.lit("page id seen before in the file"))
            .otherwise(pl.col("reason").str.replace_all("_", " "))
        )
        return rejected.select(
            question_id=pl.coalesce(pl.col("page_id"), where),
            source=pl.lit(self.name),
            step=pl.lit("ingest"),
            reason=pl.col("reason"),
            detail=pl.concat_str(where, pl.lit(": "), detail),
            record=pl.struct(pl.col("title"), pl.col("words")).struct.json_encode(),
        ).cast(REJECTS.schema)


def _action_id(line: bytes) -> str | None:
    """The page id of a bulk action line (``{"index": {"_id": "12", ...}}``), None if it has none."""
    found = _ACTION_ID.search(line)
    if found:
        return found[1].decode()
    try:
        action = json.loads(line)
        pid = action["index"]["_id"]
    except (ValueError, TypeError, KeyError):
        return None
    return str(pid) if isinstance(pid, (str, int)) and not isinstance(pid, bool) else None


def _cirrus_frame(ids: list, lines: list[int], docs: list[bytes]) -> pl.DataFrame:
    """A batch of page documents read by polars' JSON reader (only the fields the lead needs);
    a batch it cannot read (a line not JSON, not UTF-8, a field of the wrong type) is read line by
    line so that only the bad lines are rejected."""
    try:
        read = pl.read_ndjson(io.BytesIO(b"\n".join(docs)), schema=CIRRUS_FIELDS)
        if read.height != len(docs):
            raise ValueError("line count")
    except Exception:  # polars raises ComputeError, SchemaError and others for one bad line
        return pl.DataFrame([_cirrus_row(pid, n, doc) for pid, n, doc in zip(ids, lines, docs)], schema=READ_SCHEMA)
    return read.select(
        line=pl.Series(lines, dtype=pl.Int64),
        page_id=pl.Series(ids, dtype=pl.String),
        title="title",
        lead="opening_text",
        namespace="namespace",
        disambiguation=pl.col("category")
        .list.eval(pl.element().str.to_lowercase().str.contains("disambiguation pages"))
        .list.any()
        .fill_null(False),
        malformed=pl.lit(None, pl.String),
    )


def _cirrus_row(pid: str | None, n: int, doc: bytes) -> dict:
    row = {"line": n, "page_id": pid}
    try:
        text = doc.decode("utf-8")
    except UnicodeDecodeError as e:
        return {**row, "malformed": f"{NOT_UTF8}|byte {doc[e.start]:#04x} at column {e.start + 1}"}
    try:
        rec = json.loads(text)
    except (ValueError, RecursionError) as e:
        return {**row, "malformed": f"{MALFORMED_RECORD}|not JSON ({e})"[:300]}
    if not isinstance(rec, dict):
        return {**row, "malformed": f"{MALFORMED_RECORD}|not a JSON object"}
    namespace, title, lead = rec.get("namespace"), rec.get("title"), rec.get("opening_text")
    categories = rec.get("category") if isinstance(rec.get("category"), list) else []
    if not isinstance(namespace, int) or isinstance(namespace, bool) or not isinstance(title, str):
        return {
            **row,
            "title": title if isinstance(title, str) else None,
            "malformed": f"{MALFORMED_RECORD}|no namespace number or no title",
        }
    return {
        **row,
        "title": title,
        "lead": lead if isinstance(lead, str) else None,
        "namespace": namespace,
        "disambiguation": any(isinstance(c, str) and "disambiguation pages" in c.lower() for c in categories),
    }


def _rest_row(n: int, line: bytes) -> dict:
    row = {"line": n}
    try:
        rec = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as e:
        return {**row, "malformed": f"{NOT_UTF8}|byte {line[e.start]:#04x} at column {e.start + 1}"}
    except (ValueError, RecursionError) as e:
        return {**row, "malformed": f"{MALFORMED_RECORD}|not JSON ({e})"[:300]}
    if not isinstance(rec, dict):
        return {**row, "malformed": f"{MALFORMED_RECORD}|not a JSON object"}
    pid, title, kind = rec.get("pageid"), rec.get("title"), rec.get("type")
    namespace = rec.get("namespace", {}).get("id", 0) if isinstance(rec.get("namespace"), dict) else 0
    extract = rec.get("extract")
    ok = isinstance(pid, int) and not isinstance(pid, bool) and isinstance(title, str)
    return {
        **row,
        "page_id": str(pid) if ok else None,
        "title": title if isinstance(title, str) else None,
        "lead": extract if isinstance(extract, str) and kind != "no-extract" else None,
        "namespace": namespace if isinstance(namespace, int) else None,
        "disambiguation": kind == "disambiguation",
        "malformed": None if ok else f"{MALFORMED_RECORD}|no integer pageid or no title",
    }
