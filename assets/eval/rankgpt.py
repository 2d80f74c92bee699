"""RankGPT: listwise reranking by an LLM over a sliding window (Sun et al., 2023).

The window moves from the bottom of the ranked list to the top, so strong passages found
low in the list can climb. The model answers with a permutation such as ``[2] > [1] > [3]``;
answers that repeat, skip or invent identifiers are repaired rather than rejected: unknown
ids are dropped, repeats keep their first place, and passages the model left out keep their
previous relative order after the ones it ranked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assets.common.parsing import parse_permutation
from assets.common.prompts import load_prompt

if TYPE_CHECKING:
    from resources.llm import Model


def windows(n: int, window: int, step: int) -> list[tuple[int, int]]:
    """(start, end) spans from the bottom of a list of n items to the top."""
    if n <= window:
        return [(0, n)]
    spans, end = [], n
    while True:
        start = max(0, end - window)
        spans.append((start, end))
        if start == 0:
            return spans
        end -= step


def prompt_messages(query: str, passages: list[str], max_words: int = 100) -> list[dict]:
    """The window's prompt (``prompts/rankgpt.yaml``), each passage cut to ``max_words``."""
    listing = "\n".join(f"[{i + 1}] {' '.join(p.split()[:max_words])}" for i, p in enumerate(passages))
    return load_prompt("eval", "rankgpt").messages(question=query, listing=listing, count=str(len(passages)))


def rerank(
    model: Model,
    queries: dict[str, str],
    ranked: dict[str, list[str]],
    texts: dict[str, str],
    window: int,
    step: int,
    stats,
    log=None,
) -> tuple[dict[str, list[str]], int]:
    """Rerank every question's list; windows at the same depth are sent together (they are
    independent across questions), deeper ones after. Returns the new lists and how many
    model answers needed repair."""
    from resources.llm import LLMRequest

    lists = {q: list(ids) for q, ids in ranked.items()}
    plans = {q: windows(len(ids), window, step) for q, ids in lists.items()}
    depth = max((len(p) for p in plans.values()), default=0)
    repaired = 0
    for level in range(depth):
        todo = [(q, plans[q][level]) for q in sorted(lists) if level < len(plans[q])]
        output = load_prompt("eval", "rankgpt").output
        reqs = [
            LLMRequest(
                f"{q} window {s}-{e}", prompt_messages(queries[q], [texts[d] for d in lists[q][s:e]]), output=output
            )
            for q, (s, e) in todo
        ]
        results = model.run(reqs, stats=stats, log=log)
        for (q, (s, e)), r in zip(todo, results):
            span = lists[q][s:e]
            order, fixed = parse_permutation(r.text or "", len(span))
            repaired += int(fixed)
            lists[q][s:e] = [span[i] for i in order]
    return lists, repaired
