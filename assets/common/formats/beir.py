"""BEIR's folder layout, written and read: ``corpus.jsonl`` (``_id``, ``title``, ``text``,
optional ``metadata``), ``queries.jsonl`` (``_id``, ``text``, optional ``metadata``) and
``qrels/<split>.tsv`` (a ``query-id``, ``corpus-id``, ``score`` header, then one judgment a
line), the layout BEIR's ``GenericDataLoader``, MTEB and pyserini read.

:func:`read_beir` reads any dataset in the layout, local or on S3, defensively: every line
that cannot be used becomes a named reject (file, line, reason, detail, the record), counted
by reason, and nothing is dropped without one. A file with no usable line at all is an error
naming the file and its first bad line."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import NamedTuple

import orjson
import polars as pl
import pyarrow.fs as pafs

from assets.common.formats._files import Frames, read_lines, write_chunks
from assets.common.records import SourceFormatError, json_lines
from assets.common.rejects import Rejects
from resources.storage import exists, filesystem, join

CORPUS, QUERIES, QRELS = "corpus.jsonl", "queries.jsonl", "qrels"
QRELS_COLUMNS = ("query-id", "corpus-id", "score")
# What read_beir returns; ``metadata`` is each record's JSON object as text (records differ in it).
CORPUS_SCHEMA = {"_id": pl.String, "title": pl.String, "text": pl.String, "metadata": pl.String}
QUERIES_SCHEMA = {"_id": pl.String, "text": pl.String, "metadata": pl.String}
QRELS_SCHEMA = {"query-id": pl.String, "corpus-id": pl.String, "score": pl.Int64}
# The columns of each file as BEIR defines them, for describing the files in Croissant
# (``croissant.TableFile.schema``): ids are text even where they look like numbers, and the
# free-form ``metadata`` is left out.
SCHEMAS = {
    CORPUS: {"_id": pl.String, "title": pl.String, "text": pl.String},
    QUERIES: {"_id": pl.String, "text": pl.String},
    QRELS: QRELS_SCHEMA,
}

REJECTS = Rejects(("file", "line"))
STEP = "beir"
REASONS = frozenset(
    {
        "malformed_line",  # not UTF-8, not JSON, not a JSON object, or a qrels line of more than 3 fields
        "missing_field",  # a record without _id or text; a qrels line without an id or score
        "bad_field",  # _id not text or a number; text, title not text; metadata not an object
        "duplicate_id",  # a second record with an _id already read (the first is kept)
        "bad_score",  # a score that is not an integer
        "unknown_query",  # a qrel naming a query not in queries.jsonl
        "unknown_document",  # a qrel naming a document not in corpus.jsonl
        "duplicate_qrel",  # a second judgment of the same query and document (the first is kept)
        "query_without_qrels",  # a query the split does not judge: kept out of scoring
    }
)
_INTEGER = re.compile(r"^[+-]?\d+$")
# Characters an id may not hold in a TSV qrels file: they would end its field or its line.
_TSV_BREAKS = "[\t\n\r]"


class BeirData(NamedTuple):
    """A BEIR dataset as read for one split: the documents, the queries the split judges,
    the judgments, what was rejected and why, and counts (by reason as ``rejects/<reason>``)."""

    corpus: pl.DataFrame
    queries: pl.DataFrame
    qrels: pl.DataFrame
    rejects: pl.DataFrame
    counts: dict[str, int]


def write_beir(folder: str, corpus: Frames, queries: Frames, qrels: Mapping[str, Frames]) -> dict[str, int]:
    """Write a BEIR folder under ``folder`` (a local path or ``s3://`` URI) from frames, or
    frames streamed batch by batch: ``corpus`` with ``_id``, ``text`` and optionally ``title``
    (a missing title is written as "", as BEIR's datasets have it) and ``metadata`` (a struct,
    or a string holding a JSON object); ``queries`` with ``_id``, ``text`` and optionally
    ``metadata``; ``qrels`` as split -> frame of ``query-id``, ``corpus-id`` and an integer
    ``score``. Returns the rows written per file."""
    if not qrels:
        raise ValueError(f"no qrels split to write to {folder}")
    written = {CORPUS: 0, QUERIES: 0}
    for name, table, fields in ((CORPUS, corpus, ("_id", "title", "text")), (QUERIES, queries, ("_id", "text"))):
        write_chunks(
            join(folder, name), _counted(written, name, (_json_lines(f, fields, name) for f in _frames(table)))
        )
    for split, table in qrels.items():
        if not re.fullmatch(r"[\w.-]+", split):
            raise ValueError(f"qrels split name {split!r}: letters, digits, '_', '-' and '.' only")
        name = f"{QRELS}/{split}.tsv"
        written[name] = 0
        chunks = (_tsv_lines(f, name, first=i == 0) for i, f in enumerate(_frames(table, empty_ok=QRELS_SCHEMA)))
        write_chunks(join(folder, QRELS, f"{split}.tsv"), _counted(written, name, chunks))
    return written


def _frames(table: Frames, empty_ok: dict | None = None) -> Iterator[pl.DataFrame]:
    frames = iter([table] if isinstance(table, pl.DataFrame) else table)
    first = next(frames, None)
    if first is None:
        # A split with no judgment still gets its header; a corpus or queries file needs rows.
        if empty_ok is None:
            raise ValueError("no frames to write")
        first = pl.DataFrame(schema=empty_ok)
    yield first
    yield from frames


def _counted(written: dict[str, int], name: str, chunks: Iterable[tuple[bytes, int]]) -> Iterator[bytes]:
    for data, rows in chunks:
        written[name] += rows
        yield data


def _json_lines(frame: pl.DataFrame, fields: tuple[str, ...], name: str) -> tuple[bytes, int]:
    """One batch of records as JSON Lines, the fields in BEIR's order, then ``metadata``."""
    unknown = set(frame.columns) - {*fields, "metadata"}
    missing = {"_id", "text"} - set(frame.columns)
    if unknown or missing:
        raise ValueError(f"{name}: columns {frame.columns}; needs _id and text, may have {fields} and metadata")
    frame = frame.with_columns(pl.col("_id").cast(pl.String))
    if "title" in fields:
        title = pl.col("title").cast(pl.String) if "title" in frame.columns else pl.lit(None, pl.String)
        frame = frame.with_columns(title.fill_null("").alias("title"))
    bad = frame.filter(pl.col("_id").is_null() | pl.col("text").is_null())
    if bad.height:
        raise ValueError(f"{name}: {bad.height} records without an _id or text, the first {bad.row(0, named=True)}")
    base = pl.struct(*fields).struct.json_encode().str.head(-1)
    meta = _metadata_json(frame, name)
    line = pl.when(meta.is_null()).then(base + "}").otherwise(base + ',"metadata":' + meta + "}")
    lines = frame.select(line.alias("line")).get_column("line")
    return ("\n".join(lines) + "\n").encode("utf-8") if lines.len() else b"", frame.height


def _metadata_json(frame: pl.DataFrame, name: str) -> pl.Expr:
    if "metadata" not in frame.columns:
        return pl.lit(None, pl.String)
    dtype = frame.schema["metadata"]
    if isinstance(dtype, pl.Struct):
        return pl.when(pl.col("metadata").is_null()).then(None).otherwise(pl.col("metadata").struct.json_encode())
    if dtype == pl.String:
        for text in frame.get_column("metadata").drop_nulls():
            if not isinstance(_json_or_none(text), dict):
                raise ValueError(f"{name}: metadata {text[:200]!r} is not a JSON object")
        return pl.col("metadata")
    raise ValueError(f"{name}: metadata is {dtype}; a struct or a string holding a JSON object")


def _json_or_none(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def _tsv_lines(frame: pl.DataFrame, name: str, first: bool) -> tuple[bytes, int]:
    """One batch of judgments as TSV lines, the header before the first."""
    if set(frame.columns) != set(QRELS_COLUMNS):
        raise ValueError(f"{name}: columns {frame.columns}; needs exactly {list(QRELS_COLUMNS)}")
    if not frame.schema["score"].is_integer():
        raise ValueError(f"{name}: score is {frame.schema['score']}; BEIR's judgments are integers")
    frame = frame.select(pl.col("query-id", "corpus-id").cast(pl.String), pl.col("score").cast(pl.Int64))
    bad = frame.filter(
        pl.any_horizontal(pl.all().is_null())
        | pl.col("query-id").str.contains(_TSV_BREAKS)
        | pl.col("corpus-id").str.contains(_TSV_BREAKS)
    )
    if bad.height:
        raise ValueError(
            f"{name}: {bad.height} judgments with an empty field or an id holding a tab or line break, "
            f"the first {bad.row(0, named=True)}"
        )
    return frame.write_csv(separator="\t", include_header=first).encode("utf-8"), frame.height


def read_beir(folder: str, split: str = "test") -> BeirData:
    """Read the BEIR dataset under ``folder`` (a local path or ``s3://`` URI) for ``split``.

    ``corpus`` (``_id``, ``title``, ``text``, ``metadata`` as JSON text) holds every usable
    document, ``queries`` (``_id``, ``text``, ``metadata``) the usable queries the split
    judges, ``qrels`` (``query-id``, ``corpus-id``, ``score``) the judgments naming a known
    query and document. The first line of the qrels file is its header when its score field
    is not an integer (BEIR's loader skips it unread); otherwise it is read as a judgment."""
    qrels_uri = join(folder, QRELS, f"{split}.tsv")
    if not exists(qrels_uri):
        raise FileNotFoundError(f"{qrels_uri}: no judgments for split {split!r} (splits found: {_splits(folder)})")
    rejects: list[dict] = []
    corpus, _ = _read_records(join(folder, CORPUS), CORPUS, ("_id", "title", "text"), rejects)
    queries, query_lines = _read_records(join(folder, QUERIES), QUERIES, ("_id", "text"), rejects)
    qrels_name = f"{QRELS}/{split}.tsv"
    qrels = _read_qrels(qrels_uri, qrels_name, set(query_lines), set(corpus["_id"]), rejects)
    judged = set(qrels["query-id"])
    for qid, line in query_lines.items():
        if qid not in judged:
            detail = f"query {qid!r} has no judgment in {qrels_name}: kept out of scoring"
            rejects.append(REJECTS.row(QUERIES, line, STEP, "query_without_qrels", detail, None))
    queries = queries.filter(pl.col("_id").is_in(list(judged)))
    rejected = REJECTS.frame(rejects)
    by_reason = dict(rejected.group_by("reason").len().iter_rows()) if rejected.height else {}
    counts = {
        "documents": corpus.height,
        "queries": queries.height,
        "queries_read": len(query_lines),
        "qrels": qrels.height,
        "rejects": rejected.height,
        **{f"rejects/{reason}": by_reason.get(reason, 0) for reason in sorted(REASONS)},
    }
    return BeirData(corpus, queries, qrels, rejected, counts)


def _splits(folder: str) -> list[str]:
    fs, path = filesystem(join(folder, QRELS))
    try:
        infos = fs.get_file_info(pafs.FileSelector(path))
    except (FileNotFoundError, OSError):
        return []
    return sorted(i.base_name.removesuffix(".tsv") for i in infos if i.base_name.endswith(".tsv"))


def _read_records(
    uri: str, name: str, fields: tuple[str, ...], rejects: list[dict]
) -> tuple[pl.DataFrame, dict[str, int]]:
    """The usable records of a JSON Lines file as a frame, and the line of each kept ``_id``.
    The columns go into a frame every ``_BLOCK`` records, so the Python strings of at most
    one block are held beside the frame's."""
    schema = CORPUS_SCHEMA if "title" in fields else QUERIES_SCHEMA
    blocks: list[pl.DataFrame] = []
    columns: dict[str, list] = {f: [] for f in schema}
    lines: dict[str, int] = {}
    first_bad, readable = None, 0
    for n, value, problem in _json_records(uri):
        if problem is None and not isinstance(value, dict):
            problem = f"a JSON {type(value).__name__}, not an object"
        if problem is not None:
            first_bad = first_bad or (n, problem)
            rejects.append(REJECTS.row(name, n, STEP, "malformed_line", problem, value))
            continue
        readable += 1
        reason, detail = _record_problem(value, fields, lines)
        if reason:
            rejects.append(REJECTS.row(name, n, STEP, reason, detail, value))
            continue
        record_id = _id_text(value["_id"])
        lines[record_id] = n
        columns["_id"].append(record_id)
        for field in fields[1:]:
            columns[field].append(value.get(field) or "")
        meta = value.get("metadata")
        columns["metadata"].append(None if meta is None else json.dumps(meta, ensure_ascii=False))
        if len(columns["_id"]) == _BLOCK:
            blocks.append(pl.DataFrame(columns, schema=schema))
            columns = {f: [] for f in schema}
    if not readable:
        where = f" line {first_bad[0]}: {first_bad[1]}" if first_bad else ": empty"
        raise SourceFormatError(f"{uri}{where}; no line of the file is a JSON record")
    blocks.append(pl.DataFrame(columns, schema=schema))
    return pl.concat(blocks), lines


# Records a block of a frame holds while a file is read.
_BLOCK = 100_000
_LONG_NUMBER = re.compile(rb"\d{19}")


def _json_records(uri: str) -> Iterator[tuple[int, object, str | None]]:
    """``(line, value, None)`` for each line of a JSON Lines file that is JSON, or ``(line,
    the line's start, why)`` for one that is not; blank lines are skipped. orjson reads a
    line (a reader of BEIR's largest corpora spends most of its time here); one it refuses
    (not UTF-8, half a surrogate pair, NaN, deep nesting, not JSON), or one with a run of 19
    digits (an integer past 64 bits, which orjson reads as a float), is read by
    :func:`assets.common.records.json_lines` instead, which keeps what Python's JSON keeps and
    says why it refuses the rest, as every reader of the project does."""
    for n, raw in enumerate(read_lines(uri), start=1):
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            # only a float, a metadata object or a value that is no record can hold a long integer
            if not (_may_hold_floats(value) and _LONG_NUMBER.search(raw)):
                yield n, value, None
                continue
        for _, value, problem in json_lines(raw):
            yield n, value, problem


def _may_hold_floats(value) -> bool:
    return not isinstance(value, dict) or "metadata" in value or any(type(v) is float for v in value.values())


def _id_text(value) -> str:
    return value if isinstance(value, str) else str(value)


def _record_problem(record: dict, fields: tuple[str, ...], seen: dict[str, int]) -> tuple[str | None, str | None]:
    """Why a corpus or queries record cannot be kept, as ``(reason, detail)``, or Nones."""
    record_id, meta = record.get("_id"), record.get("metadata")
    # the usual record first: a text id, text fields, an object or no metadata, an id not seen
    if (
        type(record_id) is str
        and record_id
        and all(type(record.get(f)) is str or (f != "text" and record.get(f) is None) for f in fields[1:])
        and (meta is None or type(meta) is dict)
        and record_id not in seen
    ):
        return None, None
    if record_id is None or record_id == "":
        return "missing_field", "no _id"
    if record.get("text") is None:  # an empty text is a document (BEIR's corpora hold titles alone)
        return "missing_field", "no text"
    if isinstance(record_id, bool) or not isinstance(record_id, str | int):
        return "bad_field", f"_id is a {type(record_id).__name__}, not text"
    for field in fields[1:]:
        if record.get(field) is not None and not isinstance(record[field], str):
            return "bad_field", f"{field} is a {type(record[field]).__name__}, not text"
    if meta is not None and not isinstance(meta, dict):
        return "bad_field", f"metadata is a {type(meta).__name__}, not an object"
    record_id = _id_text(record_id)
    if record_id in seen:
        return "duplicate_id", f"_id {record_id!r} was read first at line {seen[record_id]}; that one is kept"
    return None, None


def _read_qrels(uri: str, name: str, queries: set[str], documents: set[str], rejects: list[dict]) -> pl.DataFrame:
    """The usable judgments of a qrels TSV file."""
    kept: dict[tuple[str, str], tuple[int, int]] = {}
    first_bad, readable, header_seen = None, 0, False
    for n, raw in enumerate(read_lines(uri), start=1):
        if not raw.strip():
            continue
        row, problem = _tsv_row(raw)
        if not header_seen:
            header_seen = True
            if row is not None and len(row) >= 3 and not _INTEGER.match(row[2].strip()):
                continue
        if problem is not None:
            first_bad = first_bad or (n, problem)
            rejects.append(REJECTS.row(name, n, STEP, "malformed_line", problem, raw[:200].decode("utf-8", "replace")))
            continue
        readable += 1
        reason, detail = _qrel_problem(row, queries, documents, kept)
        if reason:
            rejects.append(REJECTS.row(name, n, STEP, reason, detail, row))
            continue
        kept[(row[0], row[1])] = (int(row[2].strip()), n)
    if not readable:
        where = f" line {first_bad[0]}: {first_bad[1]}" if first_bad else ": no judgment after the header"
        raise SourceFormatError(f"{uri}{where}; no line of the file is a judgment")
    return pl.DataFrame([(q, d, score) for (q, d), (score, _) in kept.items()], schema=QRELS_SCHEMA, orient="row")


def _tsv_row(raw: bytes) -> tuple[list[str] | None, str | None]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"not UTF-8 (byte {raw[e.start]:#04x} at column {e.start + 1})"
    row = next(csv.reader([text], delimiter="\t"))
    while len(row) > 3 and row[-1] == "":  # tabs left at the end of a line
        row.pop()
    if len(row) > 3:
        return row, f"{len(row)} tab-separated fields; a judgment has 3 ({', '.join(QRELS_COLUMNS)})"
    return row, None


def _qrel_problem(
    row: list[str], queries: set[str], documents: set[str], kept: dict[tuple[str, str], tuple[int, int]]
) -> tuple[str | None, str | None]:
    """Why a judgment cannot be kept, as ``(reason, detail)``, or Nones."""
    if len(row) < 3 or not all(row):
        present = dict(zip(QRELS_COLUMNS, row))
        return "missing_field", f"no {', '.join(c for c in QRELS_COLUMNS if not present.get(c))}"
    qid, did, score = row
    if not _INTEGER.match(score.strip()):
        return "bad_score", f"score {score!r} is not an integer"
    if qid not in queries:
        also = "" if did in documents else f"; document {did!r} is not in {CORPUS} either"
        return "unknown_query", f"query {qid!r} is not in {QUERIES}{also}"
    if did not in documents:
        return "unknown_document", f"document {did!r} is not in {CORPUS}"
    if (qid, did) in kept:
        score_kept, line = kept[(qid, did)]
        return "duplicate_qrel", f"({qid!r}, {did!r}) was judged {score_kept} at line {line}; that one is kept"
    return None, None
