"""Hard-negative mining for the StackExchange domains (paper section 3.1.2).

The LLM writes search queries on the question's topic about unhelpful aspects; a search
resource returns candidate documents (BM25 over a local pool by default); candidates are cut
into passages of about the positives' length, then duplicates and passages that overlap a
positive heavily (word-set Jaccard above a threshold) are removed -- kept as rejects with the
reason, like everything the pipeline filters.
"""

from __future__ import annotations

import polars as pl

from assets.eval.contexts import sentences
from assets.prompts import load_prompt
from assets.quit.method import parse_list
from assets.recor.method import word_overlap
from assets.recor.steps import reject
from assets.text import normalize
from resources.llm import CallStats, LLMRequest


def segment(text: str, words: int) -> list[str]:
    """Consecutive sentences grouped into passages of about ``words`` words (a passage ends
    at the sentence that reaches the length; a long last remainder is its own passage)."""
    out, current = [], []
    for s in sentences(text) or [text]:
        current.append(s)
        if sum(len(c.split()) for c in current) >= words:
            out.append(" ".join(current))
            current = []
    if current:
        tail = " ".join(current)
        if out and len(tail.split()) < words // 2:
            out[-1] = f"{out[-1]} {tail}"
        else:
            out.append(tail)
    return out


def mining_queries(questions: pl.DataFrame, llm, alias: str, n: int, stats: CallStats, log=None) -> dict[str, list[str]]:
    prompt = load_prompt("recor", "negative_queries")
    rows = list(questions.iter_rows(named=True))
    reqs = [LLMRequest(q["question_id"], prompt.messages(question=q["query"], answer=q["answer"], n=str(n)),
                       params={"max_tokens": 30 * n}) for q in rows]
    results = llm.run(alias, reqs, parse=lambda s: parse_list(s, n), stats=stats, log=log)
    return {q["question_id"]: (r.value if r.ok else []) for q, r in zip(rows, results)}


def select_negatives(questions: pl.DataFrame, positives: pl.DataFrame, hits: dict[str, list[tuple[str, str]]],
                     max_overlap: float) -> tuple[pl.DataFrame, list[dict]]:
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
                    rejects.append(reject(q["domain"], q["question_id"], pid, "negatives", "duplicate_passage"))
                elif closest > max_overlap:
                    rejects.append(reject(q["domain"], q["question_id"], pid, "negatives", "overlaps_positive",
                                          f"word overlap {closest:.2f} > {max_overlap}"))
                else:
                    seen.add(key)
                    rows.append({"domain": q["domain"], "doc_id": pid, "content": passage, "role": "negative",
                                 "question_id": q["question_id"]})
    schema = {"domain": pl.String, "doc_id": pl.String, "content": pl.String, "role": pl.String, "question_id": pl.String}
    return pl.DataFrame(rows, schema=schema), rejects
