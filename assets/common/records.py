"""Reading source files record by record, for loaders that reject bad records by name."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from resources.storage import read_bytes, utf8_text

ROOT = Path(__file__).resolve().parents[2]


def project_path(path: str) -> str:
    """A source path as configured: URIs and absolute paths as they are, relative paths
    from the project root (so settings work from any working directory)."""
    return path if "://" in path or Path(path).is_absolute() else str(ROOT / path)


def read_records(uri: str) -> list[tuple[str, Any]]:
    """``(where, record)`` pairs from a JSON Lines, JSON list or Parquet file; ``where``
    names the line or row for error messages. A line that cannot be read (not UTF-8, not
    JSON, nested too deeply) is returned as a string saying why, so that the caller can
    reject it by name; a whole file that cannot be read is a :class:`SourceFormatError`
    naming it."""
    data = read_bytes(uri)
    if uri.endswith(".parquet"):
        try:
            frame = pl.read_parquet(io.BytesIO(data))
        except pl.exceptions.PolarsError as e:
            raise SourceFormatError(f"{uri}: not a Parquet file polars can read ({e})") from e
        return [(f"{uri} row {i}", r) for i, r in enumerate(frame.to_dicts())]
    if uri.endswith(".json"):
        return [(f"{uri} record {i}", r) for i, r in enumerate(parse_json_list(decode(data, uri), uri))]
    return [
        (f"{uri} line {n}", value if problem is None else f"{problem}: {value}")
        for n, value, problem in json_lines(data)
    ]


def json_lines(data: bytes) -> Iterator[tuple[int, Any, str | None]]:
    r"""``(line number, record, None)`` for each JSON Lines record of ``data``, or ``(line
    number, the line's first 200 characters, why)`` for a line that is not one; blank lines
    are skipped. Lines end at ``\n`` or ``\r`` only: U+2028 and U+0085, which
    ``json.dumps(ensure_ascii=False)`` leaves raw inside strings, are part of their line
    (``str.splitlines`` would cut there)."""
    for n, raw in enumerate(data.splitlines(), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            yield n, repr(raw[:200]), f"not UTF-8 (byte {raw[e.start]:#04x} at column {e.start + 1})"
            continue
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            yield n, line[:200], f"not JSON ({e.msg})"
        except RecursionError:
            yield n, line[:200], "not JSON (nested too deeply)"
        except ValueError as e:  # an integer longer than Python converts (4300 digits)
            yield n, line[:200], f"not JSON ({e})"
        else:
            problem = _unusable(record, line)
            yield (n, record, None) if problem is None else (n, line[:200], problem)


class SourceFormatError(ValueError):
    """The file as a whole cannot be read (not UTF-8, not JSON, not a list)."""


def decode(data: bytes, name: str) -> str:
    """:func:`resources.storage.utf8_text`, its error a :class:`SourceFormatError`."""
    try:
        return utf8_text(data, name)
    except ValueError as e:
        raise SourceFormatError(str(e)) from None


def read_json_list(uri: str) -> list:
    """The records of a file holding one JSON list (TriviaHG, WikiHint)."""
    return parse_json_list(decode(read_bytes(uri), uri), uri)


def parse_json_list(text: str, name: str) -> list:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SourceFormatError(f"{name}: not valid JSON at line {e.lineno} column {e.colno}: {e.msg}") from e
    except (RecursionError, ValueError) as e:
        # Nested deeper than the reader follows, or an integer longer than Python converts:
        # json.loads does not say where, so the records are read one by one to name it.
        line, why = _unreadable_record(text)
        raise SourceFormatError(f"{name} line {line}: a record {why}; fix or remove it") from e
    if not isinstance(data, list):
        raise SourceFormatError(f"{name}: expected a JSON list of records, found {type(data).__name__}")
    if _unusable(data, text) is not None:
        line, why = _unreadable_record(text)
        raise SourceFormatError(f"{name} line {line}: a record {why}; fix or remove it")
    return data


# A JSON escape of half a surrogate pair: ``json.loads`` reads "\ud800" alone into a string
# that no UTF-8 file or table (polars, Parquet) can hold.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _unusable(record: Any, text: str) -> str | None:
    """Why a record read from ``text`` cannot be stored, or None: a string holding half a
    surrogate pair, or nesting that writing it back cannot follow. Only a text that holds
    such an escape is checked (the check writes the record out)."""
    if not _SURROGATE_ESCAPE.search(text):
        return None
    try:
        json.dumps(record, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return "not valid Unicode (half a surrogate pair, escaped alone)"
    except RecursionError:
        return "not JSON (nested too deeply)"
    return None


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def _unreadable_record(text: str) -> tuple[int, str]:
    """The line where the first record of a JSON list that cannot be read or stored starts,
    and why."""
    at = _SPACE.match(text).end() + 1  # past the opening bracket
    while at < len(text):
        at = _SPACE.match(text, at).end()
        line = text.count("\n", 0, at) + 1
        try:
            record, end = _DECODER.raw_decode(text, at)
        except RecursionError:
            return line, "nested too deeply to read"
        except json.JSONDecodeError:
            break
        except ValueError as e:
            return line, f"that cannot be read ({e})"
        problem = _unusable(record, text[at:end])
        if problem is not None:
            return line, f"that is {problem}"
        at = _SPACE.match(text, end).end() + 1  # past the comma
    return text.count("\n", 0, at) + 1, "that cannot be read"
