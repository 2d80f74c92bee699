"""RECOR as its authors published it (Hugging Face ``RECOR-Benchmark/RECOR``), read into the
tables this project builds, so that the evaluation reads a release as it reads its own
``recor/benchmark`` and ``recor/corpus``.

Per domain the release holds ``data/benchmark/{Name}_benchmark.jsonl`` (one conversation per
line: ``id``, ``turns[]`` with ``turn_id``, ``query``, ``answer``, ``gold_doc_ids``,
``conversation_history``, ``subquestion_reasoning`` and ``subquestion_reasoning_metadata``)
and ``data/corpus/{Name}_documents.jsonl`` (``doc_id``, ``content``); ``Name`` is the
published split name (``Drones``, ``medicalsciences``: :data:`assets.recor.release.RELEASE_NAMES`),
read in any case, or the partition key; :func:`release_contents` names the files it leaves unread.
The fields are those the published scripts read (``experiments/retrieval/run_retrieval.py``,
``ablation_eval.py``, ``evaluate_last_turn.py``, ``experiments/generation/generate_and_evaluate.py``),
including their fallback to ``supporting_doc_ids`` when a turn has no ``gold_doc_ids``.

What the release does not hold is null in the frames: a turn's aspect, document scores,
verified facts, the LLM's verdicts and the origin of its question and answer. The
release's free-text ``subquestion_reasoning`` has no column in the built table (the project
composes its guidance from the three metadata parts); it is kept as one extra column,
``subquestion_reasoning``, after the built columns, and
:func:`assets.recor.release.with_release_text` takes it as the turn's guidance, so the
evaluation's reasoning strategies use the published text."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import polars as pl
import pyarrow.fs as pafs

from assets.common.records import project_path, read_records
from assets.common.rejects import Rejects
from assets.partitions import DOMAINS
from assets.recor.release import history_text, release_name, turn_qid
from assets.recor.sources import DOCUMENT_SCHEMA
from assets.recor.steps import TURN_SCHEMA
from resources.storage import filesystem, join

# The built benchmark's columns (``recor/benchmark``: the turns and their query id), then the
# release's own reasoning text.
BENCHMARK_SCHEMA = {**TURN_SCHEMA, "qid": pl.String}
RELEASE_SCHEMA = {**BENCHMARK_SCHEMA, "subquestion_reasoning": pl.String}
CORPUS_SCHEMA = DOCUMENT_SCHEMA

# Where the two files of a domain lie under a release root, tried in order: the dataset
# repository (``data/benchmark``, ``data/corpus``), its ``data`` folder (what the published
# retrieval scripts take), and one flat folder (what this project's export writes).
LAYOUTS = (("data/benchmark", "data/corpus"), ("benchmark", "corpus"), ("", ""))

# A release record that cannot be used: the domain, the conversation (null for a document)
# and the item (the line, the turn's query id or the document id).
REJECTS = Rejects(("domain", "conversation_id", "item"))
STEP = "release"
REASONS = frozenset(
    {
        "malformed_record",
        "missing_field",
        "duplicate_id",
        "duplicate_document",
        "turn_numbering",
        "gold_not_in_corpus",
        "no_gold",
        "empty_file",
    }
)

# The published field names this loader reads, and the column each one fills.
CONVERSATION_FIELDS = ("id", "turns")
TURN_FIELDS = {
    "turn_id": "turn_id",
    "query": "query",
    "answer": "answer",
    "gold_doc_ids": "gold_doc_ids",
    "conversation_history": "conversation_history",
    "subquestion_reasoning": "subquestion_reasoning",
}
GOLD_FALLBACK = "supporting_doc_ids"
METADATA = "subquestion_reasoning_metadata"
METADATA_FIELDS = {
    "target_information": "target",
    "relevance_signals": "relevance_signals",
    "irrelevance_signals": "irrelevance_signals",
}
DOCUMENT_FIELDS = ("doc_id", "content")


@dataclasses.dataclass(frozen=True)
class Release:
    """One domain of a release in the built tables' shapes, with its rejects. Unpacks as
    ``benchmark, corpus, rejects``; the counts say where the loader filled in for the file:
    turns whose gold came from ``supporting_doc_ids``, and turns without a
    ``conversation_history`` (given the published construction's text of the turns before).
    ``gold_turns`` counts the turns of the file that name a gold document, rejected ones
    included: the target turns the task's qrels hold, of which the table may score fewer."""

    benchmark: pl.DataFrame
    corpus: pl.DataFrame
    rejects: pl.DataFrame
    gold_from_supporting: int = 0
    history_derived: int = 0
    gold_turns: int = 0

    def __iter__(self):
        return iter((self.benchmark, self.corpus, self.rejects))


class _Bad(ValueError):
    """A record that cannot be used, with its reason."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


# A domain's file names: ``<domain>`` then these, the domain spelled as its partition key or
# its published split name, in any case (``Drones``, ``drones``, ``medical_sciences``).
SUFFIXES = ("_benchmark.jsonl", "_documents.jsonl")
SPELLINGS = {spelled.lower(): key for key in DOMAINS for spelled in (key, release_name(key))}


@dataclasses.dataclass(frozen=True)
class Contents:
    """What a release holds: each domain's benchmark and documents files (by partition key,
    in :data:`DOMAINS` order), and each file named like a release file that no domain
    reads, with why."""

    files: dict[str, tuple[str, str]]
    unread: dict[str, str]


def partition_key(name: str) -> str:
    """The project's domain key of a published split name in any case (``Drones``,
    ``drones`` -> ``drones``); a name that is no domain is its own."""
    return SPELLINGS.get(name.lower(), name)


def release_contents(root: str) -> Contents:
    """The files of ``root`` (a folder or ``s3://`` prefix; relative from the project root)
    in the layouts of :data:`LAYOUTS`: a domain's two files are read from the first layout
    that has both. A file of the release's name pattern that spells no domain, a second
    spelling of a domain beside the one read, a file without its pair, a copy in a later
    layout and any other JSON Lines file of those folders are ``unread``."""
    base = project_path(root)
    files: dict[str, tuple[str, str]] = {}
    unread: dict[str, str] = {}
    for folders in LAYOUTS:
        bench, docs = (_named(join(base, f) if f else base, s, unread) for f, s in zip(folders, SUFFIXES))
        for key in DOMAINS:
            if key in files:
                unread.update(
                    {f: f"a copy: {key} is read from {files[key][0]}" for f in (bench.get(key), docs.get(key)) if f}
                )
            elif key in bench and key in docs:
                files[key] = (bench[key], docs[key])
            elif key in bench or key in docs:
                alone, kind = (bench[key], "documents") if key in bench else (docs[key], "benchmark")
                unread[alone] = f"{key} has no {kind} file in its layout ({' + '.join(folders) or 'one folder'})"
    for folder in dict.fromkeys(f for folders in LAYOUTS for f in folders):
        where = join(base, folder) if folder else base
        unread.update(
            {
                join(where, n): f"named neither <domain>{SUFFIXES[0]} nor <domain>{SUFFIXES[1]}"
                for n in _file_names(where)
                if n.lower().endswith(".jsonl") and not n.lower().endswith(SUFFIXES)
            }
        )
    return Contents(files, unread)


def _named(folder: str, suffix: str, unread: dict[str, str]) -> dict[str, str]:
    """The files of ``folder`` named ``<domain><suffix>``, by partition key. A name that
    spells no domain, or a second spelling of one, is added to ``unread``; of two spellings
    the published split name is read, then the partition key."""
    spelled: dict[str, list[str]] = {}
    for name in _file_names(folder):
        if not name.lower().endswith(suffix):
            continue
        stem = name[: -len(suffix)]
        if stem.lower() in SPELLINGS:
            spelled.setdefault(SPELLINGS[stem.lower()], []).append(name)
        else:
            unread[join(folder, name)] = f"{stem!r} is no RECOR domain"
    chosen = {}
    for key, names in spelled.items():
        first, *others = sorted(names, key=lambda n: (n != release_name(key) + suffix, n != key + suffix, n))
        chosen[key] = join(folder, first)
        unread.update({join(folder, n): f"a second spelling of {key}: {first} is read" for n in others})
    return chosen


def _file_names(folder: str) -> list[str]:
    fs, path = filesystem(folder)
    if fs.get_file_info(path).type != pafs.FileType.Directory:
        return []
    return sorted(i.base_name for i in fs.get_file_info(pafs.FileSelector(path)) if i.type == pafs.FileType.File)


def release_files(root: str, domain: str) -> tuple[str, str]:
    """The benchmark and documents files of ``domain`` (a partition key or a published split
    name) under ``root`` (:func:`release_contents`)."""
    key = partition_key(domain)
    held = release_contents(root).files
    if key in held:
        return held[key]
    base, name = project_path(root), release_name(key)
    tried = [f"{join(base, b, name + SUFFIXES[0])} + {join(base, d, name + SUFFIXES[1])}" for b, d in LAYOUTS]
    raise FileNotFoundError(f"no RECOR release of {name!r} under {base}; looked for (in any case) " + "; ".join(tried))


def release_domains(root: str, domains: Sequence[str] = DOMAINS) -> list[str]:
    """The domains of ``domains`` whose two files are under ``root`` (a release may hold some)."""
    held = release_contents(root).files
    return [d for d in domains if partition_key(d) in held]


def load_release(root: str, domain: str) -> Release:
    """One domain of a RECOR release at ``root`` (a local folder or an ``s3://`` prefix). A
    file that holds no record at all is an error naming it."""
    return read_release(partition_key(domain), *release_files(root, domain))


def read_release(domain: str, bench: str, docs: str) -> Release:
    """One domain's release from its benchmark and documents files. A file that holds no
    record at all is named by an ``empty_file`` reject."""
    conversations, documents = read_records(bench), read_records(docs)
    release = parse_release(domain, conversations, documents)
    empty = [
        REJECTS.row(domain, None, path, STEP, "empty_file", f"{path} holds no {what}: the file is empty")
        for path, what, records in ((bench, "conversation", conversations), (docs, "document", documents))
        if not records
    ]
    if not empty:
        return release
    return dataclasses.replace(release, rejects=pl.concat([REJECTS.frame(empty), release.rejects]))


def parse_release(
    domain: str, conversations: Sequence[tuple[str, Any]], documents: Sequence[tuple[str, Any]]
) -> Release:
    """The tables from ``(where, record)`` pairs of the two files. A bad document line is
    rejected alone; a bad conversation (a malformed line, a missing field, a repeated id,
    turns not numbered 1..n) is rejected whole, since its turns' history and numbering go
    together; a gold id that is not a document is rejected as a reference, and the turn
    keeps its other gold documents. A turn left with no gold document stays in its
    conversation and is named by a ``no_gold`` reject: no metric can score it."""
    rejects: list[dict] = []
    texts = _document_texts(domain, documents, rejects)
    rows: list[dict] = []
    seen: set[str] = set()
    fallbacks = derived = gold_turns = 0
    for where, rec in conversations:
        gold_turns += _gold_turns(rec)
        try:
            cid, turns = _conversation(rec)
        except _Bad as e:
            cid = str(rec.get("id")) if isinstance(rec, dict) and isinstance(rec.get("id"), (str, int)) else None
            rejects.append(REJECTS.row(domain, cid, where, STEP, e.reason, f"{where}: {e}", rec))
            continue
        if cid in seen:
            rejects.append(
                REJECTS.row(
                    domain, cid, where, STEP, "duplicate_id", f"{where}: conversation id {cid!r} seen before", rec
                )
            )
            continue
        seen.add(cid)
        for n, t in enumerate(turns):
            fallbacks += t.pop("from_supporting")
            if t["conversation_history"] is None:
                t["conversation_history"] = history_text(turns[:n])
                derived += 1
            rows.append(_turn_row(domain, cid, where, t, texts, rejects))
    benchmark = pl.DataFrame(rows, schema=RELEASE_SCHEMA).sort("conversation_id", "turn_id")
    return Release(
        benchmark, corpus_frame(domain, texts, benchmark), REJECTS.frame(rejects), fallbacks, derived, gold_turns
    )


def _gold_turns(rec: Any) -> int:
    """The turns of a conversation record, usable or not, that name a gold document."""
    turns = rec.get("turns") if isinstance(rec, dict) else None
    if not isinstance(turns, list):
        return 0
    return sum(isinstance(t, dict) and bool(t.get("gold_doc_ids") or t.get(GOLD_FALLBACK)) for t in turns)


def _document_texts(domain: str, documents: Sequence[tuple[str, Any]], rejects: list[dict]) -> dict[str, str]:
    """Each usable document's text by its id; a bad or repeated document is added to ``rejects``."""
    texts: dict[str, str] = {}
    for where, rec in documents:
        try:
            doc_id, content = _document(rec)
        except _Bad as e:
            rejects.append(REJECTS.row(domain, None, where, STEP, e.reason, f"{where}: {e}", rec))
            continue
        if doc_id in texts:
            rejects.append(
                REJECTS.row(
                    domain, None, doc_id, STEP, "duplicate_document", f"{where}: doc_id {doc_id!r} seen before", rec
                )
            )
        else:
            texts[doc_id] = content
    return texts


def _turn_row(domain: str, cid: str, where: str, t: dict, texts: dict[str, str], rejects: list[dict]) -> dict:
    """The turn's row of the benchmark, its gold ids those in the documents; a gold id outside
    them, and a turn left with no gold, are added to ``rejects``."""
    qid = turn_qid(cid, t["turn_id"])
    outside = [d for d in t["gold_doc_ids"] if d not in texts]
    for d in outside:
        rejects.append(
            REJECTS.row(
                domain,
                cid,
                qid,
                STEP,
                "gold_not_in_corpus",
                f"{where}: gold document {d!r} of turn {t['turn_id']} is not in the documents file",
            )
        )
    gold = [d for d in t["gold_doc_ids"] if d not in outside]
    if not gold:
        # Kept, since the later turns' history reads it, but no metric can score it:
        # named here rather than left to drop out of the means unseen.
        why = (
            "its gold documents are all outside the documents file"
            if outside
            else f"its 'gold_doc_ids' and {GOLD_FALLBACK!r} are empty or absent"
        )
        rejects.append(
            REJECTS.row(
                domain,
                cid,
                qid,
                STEP,
                "no_gold",
                f"{where}: turn {t['turn_id']} has no gold document ({why}); no metric scores it",
            )
        )
    return {**t, "domain": domain, "conversation_id": cid, "qid": qid, "gold_doc_ids": gold}


def corpus_frame(domain: str, texts: dict[str, str], benchmark: pl.DataFrame) -> pl.DataFrame:
    """The documents as the built corpus: ``positive`` when some turn cites it (its
    ``question_id`` the first such conversation in id order), else ``negative`` (the release
    ties a negative to no question)."""
    cited: dict[str, str] = {}
    for cid, gold in benchmark.select("conversation_id", "gold_doc_ids").iter_rows():
        for d in gold:
            cited.setdefault(d, cid)
    return pl.DataFrame(
        [
            {
                "domain": domain,
                "doc_id": d,
                "content": c,
                "role": "positive" if d in cited else "negative",
                "question_id": cited.get(d),
            }
            for d, c in texts.items()
        ],
        schema=CORPUS_SCHEMA,
    )


def _document(rec: Any) -> tuple[str, str]:
    if not isinstance(rec, dict):
        raise _Bad(
            "malformed_record",
            str(rec) if isinstance(rec, str) else f"a document is an object, not {type(rec).__name__}",
        )
    doc_id, content = _id(rec, "doc_id"), rec.get("content")
    if content is None or (isinstance(content, str) and not content.strip()):
        raise _Bad("missing_field", f"document {doc_id!r} has no 'content'")
    if not isinstance(content, str):
        raise _Bad("malformed_record", f"document {doc_id!r}: 'content' is {type(content).__name__}, not text")
    return doc_id, content


def _id(rec: dict, name: str) -> str:
    value = rec.get(name)
    if value is None or value == "":
        raise _Bad("missing_field", f"no {name!r}")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _Bad("malformed_record", f"{name!r} is {type(value).__name__}, not text")
    return str(value)


def _conversation(rec: Any) -> tuple[str, list[dict]]:
    """The conversation's id and its turns in turn order, as turn columns."""
    if not isinstance(rec, dict):
        raise _Bad(
            "malformed_record",
            str(rec) if isinstance(rec, str) else f"a conversation is an object, not {type(rec).__name__}",
        )
    cid = _id(rec, "id")
    turns = rec.get("turns")
    if not turns:
        raise _Bad("missing_field", f"conversation {cid!r} has no 'turns'")
    if not isinstance(turns, list):
        raise _Bad("malformed_record", f"conversation {cid!r}: 'turns' is {type(turns).__name__}, not a list")
    parsed = [_turn(t, i) for i, t in enumerate(turns, start=1)]
    ids = [t["turn_id"] for t in parsed]
    if sorted(ids) != list(range(1, len(ids) + 1)):
        raise _Bad("turn_numbering", f"conversation {cid!r}: turn ids {ids}, expected 1..{len(ids)}")
    return cid, sorted(parsed, key=lambda t: t["turn_id"])


def _turn(t: Any, position: int) -> dict:
    where = f"turn {position}"
    if not isinstance(t, dict):
        raise _Bad("malformed_record", f"{where} is not an object")
    for name in ("turn_id", "query", "answer"):
        if t.get(name) is None or t.get(name) == "":
            raise _Bad("missing_field", f"{where} has no {name!r}")
    if isinstance(t["turn_id"], bool) or not isinstance(t["turn_id"], int):
        raise _Bad("malformed_record", f"{where}: 'turn_id' {t['turn_id']!r} is not a whole number")
    for name in ("query", "answer"):
        if not isinstance(t[name], str):
            raise _Bad("malformed_record", f"{where}: {name!r} is {type(t[name]).__name__}, not text")
    # As the published scripts: an empty or absent gold list falls back to supporting_doc_ids.
    gold, from_supporting = t.get("gold_doc_ids"), False
    if not gold and t.get(GOLD_FALLBACK) is not None:
        gold, from_supporting = t[GOLD_FALLBACK], True
    if gold is None:
        raise _Bad("missing_field", f"{where} has neither 'gold_doc_ids' nor {GOLD_FALLBACK!r}")
    meta = t.get(METADATA)
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise _Bad("malformed_record", f"{where}: {METADATA!r} is {type(meta).__name__}, not an object")
    target = meta.get("target_information")
    return {
        "turn_id": t["turn_id"],
        "query": t["query"],
        "answer": t["answer"],
        "gold_doc_ids": _strings(gold, f"{where}: gold documents"),
        "conversation_history": _text_or_none(t.get("conversation_history"), f"{where}: 'conversation_history'"),
        "subquestion_reasoning": _text_or_none(t.get("subquestion_reasoning"), f"{where}: 'subquestion_reasoning'"),
        "target": _text_or_none(target, f"{where}: 'target_information'"),
        "relevance_signals": _strings(meta.get("relevance_signals") or [], f"{where}: 'relevance_signals'"),
        "irrelevance_signals": _strings(meta.get("irrelevance_signals") or [], f"{where}: 'irrelevance_signals'"),
        "from_supporting": from_supporting,
    }


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
        raise _Bad("malformed_record", f"{what} are not a list of ids or texts: {value!r}")
    return [str(v) for v in value]


def _text_or_none(value: Any, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _Bad("malformed_record", f"{what} is {type(value).__name__}, not text")
    return value
