"""Reading RECOR's two kinds of source into one question table and one document table per
domain, keeping every rejected record with its reason.

- BRIGHT (six domains): per domain, queries with ``id``, ``query``, ``reasoning``,
  ``gold_ids``, ``gold_answer``, ``excluded_ids`` and documents with ``id``, ``content``, as
  JSON Lines or as the Parquet files of the public release.
- StackExchange (five domains): a JSON list of question records as the site API returns
  them (``question_id``, ``title``, HTML ``body``, ``tags``, ``answers`` with
  ``is_accepted``) with the ``positive_passages`` found for each; hard negatives are mined
  later from a document pool (JSON Lines of ``id``, ``content``).

Paths may be local or ``s3://`` URIs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from assets.common.records import read_records
from assets.common.rejects import Rejects

QUESTION_SCHEMA = {
    "domain": pl.String,
    "source": pl.String,
    "question_id": pl.String,
    "query": pl.String,
    "answer": pl.String,
    "reasoning": pl.String,
    "gold_ids": pl.List(pl.String),
    "excluded_ids": pl.List(pl.String),
}

DOCUMENT_SCHEMA = {
    "domain": pl.String,
    "doc_id": pl.String,
    "content": pl.String,
    # positive (a gold document of some question), negative (in the corpus, gold for none),
    # pool (a StackExchange mining candidate, not yet in the corpus)
    "role": pl.String,
    "question_id": pl.String,
}

# Rejected source records: the domain, the question (or document) and the source name the item.
REJECTS = Rejects(("domain", "question_id", "source"))
# The reasons of ``load_bright`` and ``load_stackexchange``, the vocabulary of the source rejects.
MALFORMED_DOCUMENT, DUPLICATE_DOCUMENT = "malformed_document", "duplicate_document"
MALFORMED_RECORD, DUPLICATE_ID, GOLD_NOT_IN_CORPUS = "malformed_record", "duplicate_id", "gold_not_in_corpus"
NO_ACCEPTED_ANSWER, NO_POSITIVE_PASSAGES = "no_accepted_answer", "no_positive_passages"
SOURCE_REASONS = frozenset(
    {
        MALFORMED_DOCUMENT,
        DUPLICATE_DOCUMENT,
        MALFORMED_RECORD,
        DUPLICATE_ID,
        GOLD_NOT_IN_CORPUS,
        NO_ACCEPTED_ANSWER,
        NO_POSITIVE_PASSAGES,
    }
)


@dataclass
class Loaded:
    domain: str
    questions: list[dict] = field(default_factory=list)
    documents: list[dict] = field(default_factory=list)
    rejects: list[dict] = field(default_factory=list)

    def reject(self, qid: str, source: str, reason: str, detail: str, record: Any) -> None:
        self.rejects.append(REJECTS.row(self.domain, qid, source, "ingest", reason, detail, record))

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        return (
            pl.DataFrame(self.questions, schema=QUESTION_SCHEMA),
            pl.DataFrame(self.documents, schema=DOCUMENT_SCHEMA),
            REJECTS.frame(self.rejects),
        )


# Characters XML does not allow, which lxml refuses to parse; HTML gives them no meaning.
_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def html_text(body: str) -> str:
    """Plain text of a StackExchange HTML body: one line per block element."""
    import lxml.html

    if not body or not body.strip():
        return ""
    root = lxml.html.fromstring(f"<div>{_NOT_XML.sub(' ', body)}</div>")
    for el in root.iter("p", "li", "br", "pre", "blockquote", "h1", "h2", "h3", "h4", "tr"):
        el.tail = "\n" + (el.tail or "")
    lines = (" ".join(line.split()) for line in root.text_content().splitlines())
    return "\n".join(line for line in lines if line)


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _id(value: Any) -> str | None:
    """An id as the files write it, a string or a whole number; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    return str(value) or None


def _ids(value: Any) -> list[str] | None:
    if isinstance(value, (list, tuple)) and all(_id(v) is not None for v in value):
        return [_id(v) for v in value]
    return None


def _html(value: Any) -> str:
    """The text of an HTML field; empty when it is absent or not a string."""
    return html_text(value) if isinstance(value, str) else ""


def _objects(rec: dict, key: str) -> list[dict]:
    """The objects of a list field; none when it is absent or not a list."""
    value = rec.get(key)
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def load_bright(domain: str, examples_uri: str, documents_uri: str) -> Loaded:
    """One BRIGHT domain. A query whose gold documents are missing from the corpus, or that
    lacks a query, answer or gold ids, is rejected; documents are the corpus as given."""
    out = Loaded(domain)
    seen_docs: set[str] = set()
    for where, rec in read_records(documents_uri):
        doc_id = _id(rec.get("id")) if isinstance(rec, dict) else None
        content = _text(rec.get("content")) if isinstance(rec, dict) else None
        if not doc_id or content is None:
            out.reject(doc_id or where, "bright", MALFORMED_DOCUMENT, f"{where}: needs id and non-empty content", rec)
        elif doc_id in seen_docs:
            out.reject(doc_id, "bright", DUPLICATE_DOCUMENT, f"{where}: id {doc_id!r} seen before", rec)
        else:
            seen_docs.add(doc_id)
            out.documents.append(
                {"domain": domain, "doc_id": doc_id, "content": content, "role": "negative", "question_id": None}
            )
    gold_all: set[str] = set()
    seen_questions: set[str] = set()
    for where, rec in read_records(examples_uri):
        if not isinstance(rec, dict):
            out.reject(where, "bright", MALFORMED_RECORD, f"{where}: {rec}", rec)
            continue
        raw_id = _id(rec.get("id"))
        qid = where if raw_id is None else raw_id if raw_id.startswith(f"{domain}_") else f"{domain}_{raw_id}"
        query, answer, gold = _text(rec.get("query")), _text(rec.get("gold_answer")), _ids(rec.get("gold_ids"))
        if raw_id is None or query is None or answer is None or not gold:
            missing = [
                k for k, v in (("id", raw_id), ("query", query), ("gold_answer", answer), ("gold_ids", gold)) if not v
            ]
            out.reject(qid, "bright", MALFORMED_RECORD, f"{where}: missing or empty {', '.join(missing)}", rec)
        elif qid in seen_questions:
            out.reject(qid, "bright", DUPLICATE_ID, f"{where}: id seen before", rec)
        elif absent := [g for g in gold if g not in seen_docs]:
            out.reject(
                qid, "bright", GOLD_NOT_IN_CORPUS, f"{where}: gold ids {absent} are not among the documents", rec
            )
        else:
            seen_questions.add(qid)
            gold_all.update(gold)
            excluded = [e for e in (_ids(rec.get("excluded_ids")) or []) if e != "N/A"]
            out.questions.append(
                {
                    "domain": domain,
                    "source": "bright",
                    "question_id": qid,
                    "query": query,
                    "answer": answer,
                    "reasoning": _text(rec.get("reasoning")),
                    "gold_ids": gold,
                    "excluded_ids": excluded,
                }
            )
    for doc in out.documents:
        if doc["doc_id"] in gold_all:
            doc["role"] = "positive"
    return out


def load_stackexchange(domain: str, questions_uri: str, pool_uri: str | None = None) -> Loaded:
    """One StackExchange domain: the accepted answer is the gold answer and the positive
    passages its gold documents (ids ``<domain>_<question_id>_p<passage_index>``); records
    without an accepted answer, a body or positives are rejected. The pool's documents are
    kept with role ``pool`` for hard-negative mining."""
    out = Loaded(domain)
    seen: set[str] = set()
    for where, rec in read_records(questions_uri):
        if not isinstance(rec, dict) or _id(rec.get("question_id")) is None:
            out.reject(where, "stackexchange", MALFORMED_RECORD, f"{where}: needs a question_id", rec)
            continue
        qid = f"{domain}_{_id(rec['question_id'])}"
        title, body = _text(rec.get("title")), _html(rec.get("body"))
        accepted = [a for a in _objects(rec, "answers") if a.get("is_accepted")]
        answer = _html(accepted[0].get("body")) if accepted else ""
        passages = [p for p in _objects(rec, "positive_passages") if _text(p.get("passage"))]
        if qid in seen:
            out.reject(qid, "stackexchange", DUPLICATE_ID, f"{where}: question_id seen before", rec)
        elif title is None or not body:
            out.reject(qid, "stackexchange", MALFORMED_RECORD, f"{where}: needs a title and a body", rec)
        elif not answer:
            out.reject(qid, "stackexchange", NO_ACCEPTED_ANSWER, f"{where}: no accepted answer with text", rec)
        elif not passages:
            out.reject(qid, "stackexchange", NO_POSITIVE_PASSAGES, f"{where}: no positive passages", rec)
        else:
            seen.add(qid)
            gold = []
            for p in passages:
                index = _id(p.get("passage_index"))
                doc_id = f"{qid}_p{len(gold) if index is None else index}"
                gold.append(doc_id)
                out.documents.append(
                    {
                        "domain": domain,
                        "doc_id": doc_id,
                        "content": p["passage"].strip(),
                        "role": "positive",
                        "question_id": qid,
                    }
                )
            out.questions.append(
                {
                    "domain": domain,
                    "source": "stackexchange",
                    "question_id": qid,
                    "query": f"{title}\n{body}",
                    "answer": answer,
                    "reasoning": None,
                    "gold_ids": gold,
                    "excluded_ids": [],
                }
            )
    if pool_uri:
        for where, rec in read_records(pool_uri):
            doc_id = _id(rec.get("id")) if isinstance(rec, dict) else None
            content = _text(rec.get("content")) if isinstance(rec, dict) else None
            if not doc_id or content is None:
                out.reject(
                    doc_id or where,
                    "stackexchange",
                    MALFORMED_DOCUMENT,
                    f"{where}: needs id and non-empty content",
                    rec,
                )
            else:
                out.documents.append(
                    {"domain": domain, "doc_id": doc_id, "content": content, "role": "pool", "question_id": None}
                )
    return out
