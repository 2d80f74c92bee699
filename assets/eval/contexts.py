"""Building a reader's context from the top-k passages (QUIT paper, section 5.4, equation 1).

Passages built from overlapping hints repeat sentences, so concatenating the top-k passages
is redundant. Union_norm keeps each distinct sentence once, in order of first appearance;
Union_freq scores each sentence by the ranks of the passages containing it and its positions
within them, then keeps the best ``top_sentences``.
"""

from __future__ import annotations

from assets.common.text import normalize, sentences

ALPHA = 0.6
BETA = 0.4


def union_norm(passages: list[str]) -> str:
    """Order-preserving union of the sentences of the passages, in rank order."""
    seen, out = set(), []
    for p in passages:
        for s in sentences(p):
            key = normalize(s)
            if key not in seen:
                seen.add(key)
                out.append(s)
    return " ".join(out)


def union_freq_scores(passages: list[str], alpha: float = ALPHA, beta: float = BETA) -> list[tuple[str, float]]:
    """score(s) = alpha * sum 1/rank(P_i) + beta * sum 1/pos_i(s) over passages P_i holding s
    (ranks and positions 1-based), sentences in order of first appearance."""
    scores: dict[str, float] = {}
    text: dict[str, str] = {}
    for rank, p in enumerate(passages, start=1):
        for pos, s in enumerate(sentences(p), start=1):
            key = normalize(s)
            text.setdefault(key, s)
            scores[key] = scores.get(key, 0.0) + alpha / rank + beta / pos
    return [(text[k], v) for k, v in scores.items()]


def union_freq(passages: list[str], top_sentences: int = 5, alpha: float = ALPHA, beta: float = BETA) -> str:
    """The ``top_sentences`` highest-scoring sentences, best first (ties: first appearance)."""
    scored = union_freq_scores(passages, alpha, beta)
    order = sorted(range(len(scored)), key=lambda i: (-scored[i][1], i))
    return " ".join(scored[i][0] for i in order[:top_sentences])


STRATEGIES = {"union_norm": lambda ps, k: union_norm(ps), "union_freq": lambda ps, k: union_freq(ps, k)}
