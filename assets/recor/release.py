"""RECOR's released files: ``{domain}_benchmark.jsonl`` (one conversation per line, the
fields of the public release), ``{domain}_documents.jsonl`` and TREC qrels per turn."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import polars as pl

# Split names of the public release where they differ from the partition keys.
RELEASE_NAMES = {"drones": "Drones", "medical_sciences": "medicalsciences"}
VERSION = "benchfoundry_v1"


def release_name(domain: str) -> str:
    return RELEASE_NAMES.get(domain, domain)


def turn_qid(conversation_id: str, turn_id: int) -> str:
    return f"{conversation_id}_turn{turn_id}"


def conversation_records(turns: pl.DataFrame, questions: pl.DataFrame, sources: dict[str, str],
                         created_at: str | None = None) -> list[dict]:
    """One release record per conversation, turns in order."""
    created_at = created_at or datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    originals = {q["question_id"]: q for q in questions.iter_rows(named=True)}
    records = []
    for (cid,), group in turns.sort("conversation_id", "turn_id").group_by("conversation_id", maintain_order=True):
        q = originals[cid]
        rows = list(group.iter_rows(named=True))
        records.append({
            "id": cid,
            "task": release_name(q["domain"]),
            "original_query": q["query"],
            "original_answer": q["answer"],
            "turns": [{
                "turn_id": t["turn_id"],
                "query": t["query"],
                "answer": t["answer"],
                "gold_doc_ids": list(t["gold_doc_ids"]),
                "conversation_history": t["conversation_history"],
                "subquestion_reasoning": t["target"],
                "subquestion_reasoning_metadata": {
                    "target_information": t["target"],
                    "relevance_signals": list(t["relevance_signals"]),
                    "irrelevance_signals": list(t["irrelevance_signals"]),
                },
            } for t in rows],
            "metadata": {
                "num_turns": len(rows),
                "gold_doc_count": len({d for t in rows for d in t["gold_doc_ids"]}),
                "version": VERSION,
                "created_at": created_at,
                "source": sources.get(cid, q["source"]),
                "method": "decomposition_and_verification",
            },
        })
    return records


def jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def qrels_lines(turns: pl.DataFrame) -> str:
    """TREC qrels: ``<conversation>_turn<n> 0 <doc_id> 1`` for every selected document."""
    lines = [f"{turn_qid(t['conversation_id'], t['turn_id'])} 0 {d} 1"
             for t in turns.sort("conversation_id", "turn_id").iter_rows(named=True) for d in t["gold_doc_ids"]]
    return "\n".join(lines) + ("\n" if lines else "")
