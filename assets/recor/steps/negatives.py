"""Hard-negative mining for the StackExchange domains (paper section 3.1.2).

The LLM writes search queries on the question's topic about unhelpful aspects; a search
resource returns candidate documents (BM25 over a local pool by default); candidates are cut
into passages of about the positives' length, then duplicates and passages that overlap a
positive heavily (word-set Jaccard above a threshold) are removed -- kept as rejects with the
reason, like everything the pipeline filters."""

from __future__ import annotations

import polars as pl

from assets.common.parsing import parse_list
from assets.common.text import normalize
from assets.recor.rules import segment, word_overlap
from assets.recor.steps.shared import REJECTS, recor_prompt
from resources.llm import CallStats, LLMRequest, Model

# ``select_negatives``'s reasons for a reject, the vocabulary its rejects table is checked against.
DUPLICATE_PASSAGE, OVERLAPS_POSITIVE = "duplicate_passage", "overlaps_positive"
NEGATIVE_REASONS = frozenset({DUPLICATE_PASSAGE, OVERLAPS_POSITIVE})


def mining_queries(questions: pl.DataFrame, model: Model, n: int, stats: CallStats, log=None) -> dict[str, list[str]]:
    prompt = recor_prompt("negative_queries")
    rows = list(questions.iter_rows(named=True))
    reqs = [
        LLMRequest(
            q["question_id"],
            prompt.messages(question=q["query"], answer=q["answer"], n=str(n)),
            params={"max_tokens": 30 * n},
            output=prompt.output,
        )
        for q in rows
    ]
    results = model.run(reqs, parse=lambda s: parse_list(s, n), stats=stats, log=log)
    return {q["question_id"]: (r.value if r.ok else []) for q, r in zip(rows, results)}


def select_negatives(
    questions: pl.DataFrame, positives: pl.DataFrame, hits: dict[str, list[tuple[str, str]]], max_overlap: float
) -> tuple[pl.DataFrame, list[dict]]:
    """Passages from each question's search hits: segmented to the positives' mean length,
    without duplicates (within the domain) or passages too close to any positive."""
    pos_texts = positives["content"].to_list()
    length = max(40, int(sum(len(t.split()) for t in pos_texts) / max(len(pos_texts), 1)))
    seen = {normalize(t) for t in pos_texts}
    rows, rejects = [], []
    for q in questions.iter_rows(named=True):
        for doc_id, text in hits.get(q["question_id"], []):
            for i, passage in enumerate(segment(text, length)):
                pid = f"{doc_id}#{i}"
                key = normalize(passage)
                closest = max((word_overlap(passage, p) for p in pos_texts), default=0.0)
                if key in seen:
                    rejects.append(REJECTS.row(q["domain"], q["question_id"], pid, "negatives", DUPLICATE_PASSAGE))
                elif closest > max_overlap:
                    rejects.append(
                        REJECTS.row(
                            q["domain"],
                            q["question_id"],
                            pid,
                            "negatives",
                            OVERLAPS_POSITIVE,
                            f"word overlap {closest:.2f} > {max_overlap}",
                        )
                    )
                else:
                    seen.add(key)
                    rows.append(
                        {
                            "domain": q["domain"],
                            "doc_id": pid,
                            "content": passage,
                            "role": "negative",
                            "question_id": q["question_id"],
                        }
                    )
    schema = {
        "domain": pl.String,
        "doc_id": pl.String,
        "content": pl.String,
        "role": pl.String,
        "question_id": pl.String,
    }
    return pl.DataFrame(rows, schema=schema), rejects
