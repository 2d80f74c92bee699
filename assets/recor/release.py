"""RECOR's released files: ``{domain}_benchmark.jsonl`` (one conversation per line, the
fields of the public release), ``{domain}_documents.jsonl`` and TREC qrels per turn.

The text fields follow the published construction code (RECOR-Benchmark/RECOR,
``pipeline/generate_bright.py``): the history a turn sees, the turn ids of the qrels and
the source question's gold count. An export depends only on its data: no wall-clock time
is written, so two exports of the same turns are byte-identical."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import polars as pl

from resources.storage import join, write_bytes

# Split names of the public release where they differ from the partition keys.
RELEASE_NAMES = {"drones": "Drones", "medical_sciences": "medicalsciences"}
VERSION = "benchfoundry_v1"
NO_HISTORY = "No previous conversation."
# Past this many earlier turns the published history names the early questions only and
# gives the last two turns in full.
SUMMARY_AFTER = 5


def release_name(domain: str) -> str:
    return RELEASE_NAMES.get(domain, domain)


def turn_qid(conversation_id: str, turn_id: int) -> str:
    """The published retrieval scripts' query id, ``<conversation>_turn_<n>``."""
    return f"{conversation_id}_turn_{turn_id}"


def history_text(earlier: Sequence[dict], summary_after: int = SUMMARY_AFTER) -> str:
    """The conversation before a turn as the release holds it: ``Q: ...`` / ``A: ...`` per
    earlier turn, ``No previous conversation.`` before the first; with more than
    ``summary_after`` earlier turns, the early questions in one line and the last two
    turns in full."""

    def qa(turns: Sequence[dict]) -> str:
        return "\n".join(f"Q: {t['query']}\nA: {t['answer']}" for t in turns)

    if not earlier:
        return NO_HISTORY
    if len(earlier) <= summary_after:
        return qa(earlier)
    topics = "; ".join(f"Turn {i}: {t['query']}" for i, t in enumerate(earlier[:-2], 1))
    return f"Earlier discussion covered: {topics}\n\nRecent conversation:\n{qa(earlier[-2:])}"


def retrieval_guidance(target: str | None, relevance: Sequence[str] = (), irrelevance: Sequence[str] = ()) -> str:
    """The turn's retrieval guidance (the release's ``subquestion_reasoning``) in one text,
    from the three parts the retrieval-reasoning step stores: what a relevant document
    holds, the signals of relevance and those of a document that only looks related.
    Empty when the step stored nothing."""
    parts = [f"Find documents that contain {target.strip().rstrip('.')}." if target and target.strip() else ""]
    if relevance:
        parts.append(f"Relevant signals: {', '.join(relevance)}.")
    if irrelevance:
        parts.append(f"Irrelevant signals: {', '.join(irrelevance)}.")
    return " ".join(p for p in parts if p)


def with_release_text(turns: pl.DataFrame) -> pl.DataFrame:
    """The turns with the release's ``history`` and ``guidance`` columns (history from the
    conversation's earlier turns, in turn order). Turns read from a published release
    (:mod:`assets.recor.published`) carry the release's own ``subquestion_reasoning`` and
    ``conversation_history``: their guidance and history are those texts as published
    (guidance empty where the release has none)."""
    rows, earlier = [], {}
    published = "subquestion_reasoning" in turns.columns
    for t in turns.sort("conversation_id", "turn_id").iter_rows(named=True):
        before = earlier.setdefault(t["conversation_id"], [])
        guidance = (
            t["subquestion_reasoning"] or ""
            if published
            else retrieval_guidance(t["target"], t["relevance_signals"] or [], t["irrelevance_signals"] or [])
        )
        history = t["conversation_history"] if published and t["conversation_history"] else history_text(before)
        rows.append({**t, "history": history, "guidance": guidance})
        before.append(t)
    return pl.DataFrame(rows, schema={**turns.schema, "history": pl.String, "guidance": pl.String})


def with_context(query: str, history: str | None = None, reasoning: str | None = None) -> str:
    """The question, then the labelled history and reasoning, each left out when empty
    (and the history before a first turn)."""
    parts = [query]
    if history and history != NO_HISTORY:
        parts.append(f"Conversation History:\n{history}")
    if reasoning:
        parts.append(f"Reasoning:\n{reasoning}")
    return "\n\n".join(parts)


def last_turn_query(query: str, previous: Mapping | None) -> str:
    """The published last-turn variant: a first turn is its question; a later one is the
    previous turn's question and answer, then the current question."""
    if previous is None:
        return query
    return f"Previous Question: {previous['query']}\nPrevious Answer: {previous['answer']}\nCurrent Question: {query}"


def conversation_records(
    turns: pl.DataFrame, questions: pl.DataFrame, sources: dict[str, str], created_at: str = ""
) -> list[dict]:
    """One release record per conversation, turns in order. ``gold_doc_count`` is the
    source question's gold documents (as published), not the turns' union; ``created_at``
    is whatever the caller names (empty by default) so that the export is reproducible."""
    originals = {q["question_id"]: q for q in questions.iter_rows(named=True)}
    records = []
    for (cid,), group in with_release_text(turns).group_by("conversation_id", maintain_order=True):
        q = originals[cid]
        rows = list(group.iter_rows(named=True))
        records.append(
            {
                "id": cid,
                "task": release_name(q["domain"]),
                "original_query": q["query"],
                "original_answer": q["answer"],
                "turns": [
                    {
                        "turn_id": t["turn_id"],
                        "query": t["query"],
                        "answer": t["answer"],
                        "gold_doc_ids": list(t["gold_doc_ids"]),
                        "conversation_history": t["history"],
                        "subquestion_reasoning": t["guidance"],
                        "subquestion_reasoning_metadata": {
                            "target_information": t["target"],
                            "relevance_signals": list(t["relevance_signals"]),
                            "irrelevance_signals": list(t["irrelevance_signals"]),
                        },
                    }
                    for t in rows
                ],
                "metadata": {
                    "num_turns": len(rows),
                    "gold_doc_count": len(q["gold_ids"] or []),
                    "version": VERSION,
                    "created_at": created_at,
                    "source": sources.get(cid, q["source"]),
                    "method": "decomposition_and_verification",
                },
            }
        )
    return records


def jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def qrels_lines(turns: pl.DataFrame) -> str:
    """TREC qrels: ``<conversation>_turn_<n> 0 <doc_id> 1`` for every selected document."""
    lines = [
        f"{turn_qid(t['conversation_id'], t['turn_id'])} 0 {d} 1"
        for t in turns.sort("conversation_id", "turn_id").iter_rows(named=True)
        for d in t["gold_doc_ids"]
    ]
    return "\n".join(lines) + ("\n" if lines else "")


def export(
    turns: pl.DataFrame, questions: pl.DataFrame, corpus: pl.DataFrame, folder: str, domain: str
) -> tuple[int, int]:
    """Writes the domain's release files into ``folder``: ``{name}_benchmark.jsonl`` (the
    conversations of ``turns``), ``{name}_documents.jsonl`` (the corpus) and
    ``{name}_qrels.txt``; returns how many conversations and documents were written."""
    name = release_name(domain)
    sources_of = dict(questions.select("question_id", "source").iter_rows())
    records = conversation_records(turns, questions, sources_of)
    write_bytes(join(folder, f"{name}_benchmark.jsonl"), jsonl(records).encode())
    docs = [{"doc_id": d, "content": c} for d, c in corpus.select("doc_id", "content").iter_rows()]
    write_bytes(join(folder, f"{name}_documents.jsonl"), jsonl(docs).encode())
    write_bytes(join(folder, f"{name}_qrels.txt"), qrels_lines(turns).encode())
    return len(records), len(docs)
