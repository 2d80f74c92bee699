"""A reranker as an entry point: ``examples.rerankers:overlap``.

The contract (see ``resources/rerankers.yaml``): ``f(query, candidates)`` gets the question
and its head as ``[(doc_id, text), ...]`` in retrieved order, and returns
``[(doc_id, score), ...]`` best first; a candidate left out keeps its retrieved place below
the returned ones.
"""

from __future__ import annotations

import re

WORD = re.compile(r"\w+")


def overlap(query: str, candidates: list[tuple[str, str]]) -> list[tuple[str, float]]:
    """The share of the query's distinct words that the passage contains; equal shares keep
    the retrieved order (Python's sort is stable)."""
    words = set(WORD.findall(query.lower()))
    scored = [(doc, len(words & set(WORD.findall(text.lower()))) / (len(words) or 1)) for doc, text in candidates]
    return sorted(scored, key=lambda pair: pair[1], reverse=True)
