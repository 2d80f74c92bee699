"""Reading source files record by record, for loaders that reject bad records by name."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import polars as pl

from resources.storage import read_bytes

ROOT = Path(__file__).resolve().parents[2]


def project_path(path: str) -> str:
    """A source path as configured: URIs and absolute paths as they are, relative paths
    from the project root (so settings work from any working directory)."""
    return path if "://" in path or Path(path).is_absolute() else str(ROOT / path)


def read_records(uri: str) -> list[tuple[str, Any]]:
    """``(where, record)`` pairs from a JSON Lines, JSON list or Parquet file; ``where``
    names the line or row for error messages. A line that is not JSON is returned as a
    string record so that the caller can reject it by name."""
    data = read_bytes(uri)
    if uri.endswith(".parquet"):
        return [(f"{uri} row {i}", r) for i, r in enumerate(pl.read_parquet(io.BytesIO(data)).to_dicts())]
    text = data.decode("utf-8")
    if uri.endswith(".json"):
        return [(f"{uri} record {i}", r) for i, r in enumerate(parse_json_list(text, uri))]
    out: list[tuple[str, Any]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((f"{uri} line {n}", json.loads(line)))
        except json.JSONDecodeError as e:
            out.append((f"{uri} line {n}", f"not JSON ({e.msg}): {line[:200]}"))
    return out


class SourceFormatError(ValueError):
    """The file as a whole cannot be read (not JSON, not a list)."""


def parse_json_list(text: str, name: str) -> list:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SourceFormatError(f"{name}: not valid JSON at line {e.lineno} column {e.colno}: {e.msg}") from e
    if not isinstance(data, list):
        raise SourceFormatError(f"{name}: expected a JSON list of records, found {type(data).__name__}")
    return data
