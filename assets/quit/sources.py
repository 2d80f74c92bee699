"""Reading TriviaHG and WikiHint into one question table, keeping every rejected record.

Both sources are JSON lists. A file that is not valid JSON is an error naming the file and
position; a record that is malformed (missing field, wrong type, empty or non-string hints)
is rejected with a reason naming the record, never dropped.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from assets.common.records import SourceFormatError, decode, read_records
from assets.common.rejects import Rejects
from assets.common.text import normalize
from resources.storage import exists, read_bytes

MIN_HINTS = 5

QUESTION_SCHEMA = {
    "question_id": pl.String,
    "source": pl.String,
    "source_id": pl.String,
    "question": pl.String,
    "answer": pl.String,
    "aliases": pl.List(pl.String),
    "hints": pl.List(pl.String),
    "hint_convergence": pl.List(pl.Float64),
    "candidate_answers": pl.List(pl.String),
    "major_type": pl.String,
    "minor_type": pl.String,
    "difficulty": pl.String,
    "popularity": pl.Float64,
    "snippet": pl.String,
}


# Rejected source records and questions: the question and its source name the item.
REJECTS = Rejects(("question_id", "source"))
# ``ingest``'s reasons, the vocabulary of the source rejects.
MALFORMED, DUPLICATE_ID, TOO_FEW_HINTS, DUPLICATE_QUESTION = (
    "malformed",
    "duplicate_id",
    "too_few_hints",
    "duplicate_question",
)
SOURCE_REASONS = frozenset({MALFORMED, DUPLICATE_ID, TOO_FEW_HINTS, DUPLICATE_QUESTION})


@dataclass
class Ingested:
    rows: list[dict] = field(default_factory=list)
    rejects: list[dict] = field(default_factory=list)

    def reject(self, qid: str, source: str, reason: str, detail: str, record: Any, step: str = "ingest"):
        self.rejects.append(REJECTS.row(qid, source, step, reason, detail, record))


class RecordError(ValueError):
    pass


def _require(rec: dict, key: str, kind: type | tuple[type, ...]) -> Any:
    if key not in rec:
        raise RecordError(f"missing field {key!r}")
    value = rec[key]
    if not isinstance(value, kind):
        raise RecordError(f"field {key!r} is {type(value).__name__}, expected {_kind_name(kind)}")
    return value


def _kind_name(kind) -> str:
    if isinstance(kind, tuple):
        return " or ".join(k.__name__ for k in kind)
    return kind.__name__


def _hint_texts(hints: list) -> list[str]:
    if not hints:
        raise RecordError("empty hint list")
    for i, h in enumerate(hints):
        if not isinstance(h, str):
            raise RecordError(f"hint {i + 1} is {type(h).__name__}, not a string")
    return [h.strip() for h in hints]


def _string_list(value: Any, key: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise RecordError(f"field {key!r} must be a string or a list of strings")


def _optional(rec: dict, key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
    """An optional field: ``default`` when absent or null, else it must be of ``kind``."""
    value = rec.get(key)
    if value is None:
        return default
    if not isinstance(value, kind) or isinstance(value, bool):
        raise RecordError(f"field {key!r} is {type(value).__name__}, expected {_kind_name(kind)}")
    return value


def _number(value: Any) -> float | None:
    """A finite float from a JSON number, else None (an integer too large for a float too)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _names(values: list) -> list[str]:
    return [str(c) for c in values if isinstance(c, (str, int, float)) and not isinstance(c, bool)]


def triviahg_row(rec: Any) -> dict:
    """One TriviaHG record as a unified row (raises RecordError when malformed)."""
    if not isinstance(rec, dict):
        raise RecordError(f"record is {type(rec).__name__}, not an object")
    qid = str(_require(rec, "Q_ID", (str, int)))
    answers = [a.strip() for a in _string_list(_require(rec, "ExactAnswer", (str, list)), "ExactAnswer") if a.strip()]
    if not answers:
        raise RecordError("ExactAnswer is empty")
    snippet = _optional(rec, "Snippet", (str, list))
    if isinstance(snippet, list):
        snippet = " ".join(str(s) for s in snippet)
    # TriviaHG stores answer popularity as {"Normalized": float, "Category": ...}.
    popularity = _optional(rec, "Exact_Answer_Popularity", (dict, int, float))
    if isinstance(popularity, dict):
        popularity = popularity.get("Normalized")
    candidates = _optional(rec, "Candidates_Answers", list, [])
    return {
        "question_id": f"triviahg:{qid}",
        "source": "triviahg",
        "source_id": qid,
        "question": _require(rec, "Question", str).strip(),
        "answer": answers[0],
        "aliases": answers,
        "hints": _hint_texts(_require(rec, "Hints", list)),
        "hint_convergence": None,
        "candidate_answers": _names(candidates),
        "major_type": _optional(rec, "MajorType", str) or None,
        "minor_type": _optional(rec, "MinorType", str) or None,
        "difficulty": None,
        "popularity": _number(popularity),
        "snippet": snippet,
    }


def wikihint_row(rec: Any) -> dict:
    """One WikiHint record as a unified row (raises RecordError when malformed)."""
    if not isinstance(rec, dict):
        raise RecordError(f"record is {type(rec).__name__}, not an object")
    qid = str(_require(rec, "id", (str, int)))
    q = _require(rec, "question", dict)
    a = _require(rec, "answer", dict)
    hints = _require(rec, "hints", list)
    if not hints:
        raise RecordError("empty hint list")
    texts, convergence = [], []
    for i, h in enumerate(hints):
        if not isinstance(h, dict):
            raise RecordError(f"hint {i + 1} is {type(h).__name__}, not an object")
        text = h.get("hint")
        if not isinstance(text, str):
            raise RecordError(f"hint {i + 1} has no string 'hint' field")
        texts.append(text.strip())
        convergence.append(_number(_optional(h, "metrics", dict, {}).get("convergence")))
    answer = _require(a, "answer", (str, int, float))
    answer = str(answer).strip()
    if not answer:
        raise RecordError("answer is empty")
    aliases = [answer] + [x for x in _string_list(a.get("aliases", []), "aliases") if x.strip()]
    qtype = _optional(q, "question_type", dict, {})
    difficulty = _optional(q, "difficulty", (str, int, float))
    candidates = _optional(q, "candidate_answers", list, [])
    return {
        "question_id": f"wikihint:{qid}",
        "source": "wikihint",
        "source_id": qid,
        "question": _require(q, "question", str).strip(),
        "answer": answer,
        "aliases": aliases,
        "hints": texts,
        "hint_convergence": convergence,
        "candidate_answers": _names(candidates),
        "major_type": _optional(qtype, "major", str) or None,
        "minor_type": _optional(qtype, "minor", str) or None,
        "difficulty": str(difficulty) if difficulty not in (None, "") else None,
        "popularity": None,
        "snippet": None,
    }


_CITATION = re.compile(r"\s*\[\^\d+\^\]")


def usable_hints(hints: list[str], convergence: list | None) -> tuple[list[str], list]:
    """Non-empty hints, citation markers (``[^1^]``) removed, duplicates (after
    normalization) removed, first occurrence kept."""
    seen, out, conv = set(), [], []
    for i, h in enumerate(hints):
        h = _CITATION.sub("", h).strip()
        key = normalize(h)
        if not key or key in seen:
            continue
        seen.add(key)
        out.append(h)
        conv.append(convergence[i] if convergence else None)
    return out, conv


READERS = {"triviahg": triviahg_row, "wikihint": wikihint_row}


def ingest(sources: list[tuple[str, list]]) -> Ingested:
    """Unify ``[(source_name, records), ...]`` into rows and rejects.

    Checks, in order: well-formed record, duplicate id (later copy rejected), at least
    ``MIN_HINTS`` usable hints, duplicate question text across all sources.
    """
    out = Ingested()
    seen_ids: dict[str, int] = {}
    seen_questions: dict[str, str] = {}
    for source, records in sources:
        read = READERS[source]
        for index, rec in enumerate(records):
            raw_id = rec.get("Q_ID" if source == "triviahg" else "id") if isinstance(rec, dict) else None
            fallback = f"{source}:#{index}" if raw_id is None else f"{source}:{raw_id}"
            try:
                row = read(rec)
            except RecordError as e:
                out.reject(fallback, source, MALFORMED, f"record #{index} ({fallback}): {e}", rec)
                continue
            qid = row["question_id"]
            if qid in seen_ids:
                out.reject(qid, source, DUPLICATE_ID, f"record #{index} repeats the id of record #{seen_ids[qid]}", rec)
                continue
            seen_ids[qid] = index
            hints, conv = usable_hints(row["hints"], row["hint_convergence"])
            if len(hints) < MIN_HINTS:
                out.reject(qid, source, TOO_FEW_HINTS, f"{len(hints)} usable hints (need {MIN_HINTS})", rec)
                continue
            row["hints"] = hints
            row["hint_convergence"] = conv if any(c is not None for c in conv) else None
            qkey = normalize(row["question"])
            if qkey in seen_questions:
                out.reject(qid, source, DUPLICATE_QUESTION, f"same question text as {seen_questions[qkey]}", rec)
                continue
            seen_questions[qkey] = qid
            out.rows.append(row)
    return out


def questions_frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=QUESTION_SCHEMA)


# The human verification decisions, a file the verification page writes.
def decisions_path(settings, storage) -> str:
    """Where the verification page saves decisions: the settings' path, else under the storage root."""
    return settings.decisions_path or storage.path("quit", "human_verification", "decisions.json")


def load_decisions(path: str) -> dict[str, dict]:
    """``{question_id: {"accepted": [...], "rejected": [...]}}``; empty when no file."""
    if not exists(path):
        return {}
    try:
        raw = json.loads(decode(read_bytes(path), path))
    except SourceFormatError:
        raise
    except (ValueError, RecursionError) as e:  # not JSON, nested too deeply, an integer too long to read
        raise ValueError(f"{path}: decisions file is not valid JSON ({e})") from e
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: decisions file must map question ids to decisions, not {type(raw).__name__}")
    for qid, d in raw.items():
        if not isinstance(d, dict) or not all(isinstance(d.get(k, []), list) for k in ("accepted", "rejected")):
            raise ValueError(f"{path}: decision for {qid!r} needs 'accepted' and 'rejected' lists")
    return raw


# Reference passages of reference-based difficulty (3.1.5).
REFERENCE_SCHEMA = {"id": pl.String, "contents": pl.String}


def reference_passages(path: str, questions: pl.DataFrame) -> pl.DataFrame:
    """The passages at ``path`` (JSON Lines with ``id`` and ``contents`` or ``text``), else
    the questions' own snippets. A record without an id or a text is an error naming it:
    difficulty computed over a silently shortened collection would not be the method's."""
    if not path:
        return pl.DataFrame(
            [
                {"id": f"snippet:{r['question_id']}", "contents": r["snippet"]}
                for r in questions.select("question_id", "snippet").iter_rows(named=True)
                if r["snippet"]
            ],
            schema=REFERENCE_SCHEMA,
        )
    rows = []
    for where, rec in read_records(path):
        text = (rec.get("contents") or rec.get("text")) if isinstance(rec, dict) else None
        if not isinstance(rec, dict) or rec.get("id") in (None, "") or not isinstance(text, str) or not text.strip():
            raise SourceFormatError(
                f"{where}: a reference passage needs an id and a non-empty contents (or text): {str(rec)[:200]}"
            )
        rows.append({"id": str(rec["id"]), "contents": text})
    return pl.DataFrame(rows, schema=REFERENCE_SCHEMA)
