"""Building a reader's context from the top-k passages (QUIT paper, section 5.4, equation 1).

A QUIT passage is some of its question's hints in some order, so the top-k passages repeat
hints. The units ranked here are those hints, read from the passage id
(``<question_id>_<mask>_<order>``, see ``assets.quit.rules.ORDER_CODES``) and the question's
hint list, as the release's ``experiments/vanilla/rag/make_rag_inputs.py`` does: a hint such
as "Born in the U.S. in 1961" or one without a final period stays one unit. Only a passage
whose id does not encode hints (another corpus), or whose text is not those hints, is cut
into regex sentences instead; :func:`passage_units` names them.

Union_norm keeps each distinct unit once, in order of first appearance. Union_freq scores
each unit by the ranks of the passages holding it and its positions within them and keeps
them all, best first, as the release does. Scores are exact fractions, so units whose sums
are equal tie (float sums of 1/rank and 1/pos differ in the last bit often enough to reorder
them), and ties keep the order of first appearance.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from fractions import Fraction

import polars as pl

from assets.common.text import sentences

ALPHA = Fraction(3, 5)
BETA = Fraction(2, 5)

_HINT_ID = re.compile(r"^(?P<question>.+)_(?P<mask>[01]+)_(?P<order>\d+)$")


def hint_units(passage_id: str, text: str, hints: Mapping[str, Sequence[str]]) -> list[str] | None:
    """The hints a passage is made of, in passage order; None when its id does not encode
    hints of a known question or its text is not those hints joined by spaces."""
    m = _HINT_ID.match(passage_id)
    if m is None or m["question"] not in hints:
        return None
    own, mask, order = hints[m["question"]], m["mask"], [int(c) for c in m["order"]]
    marked = {i for i, c in enumerate(mask) if c == "1"}
    if len(mask) != len(own) or len(set(order)) != len(order) or set(order) != marked:
        return None
    units = [own[i] for i in order]
    return units if " ".join(units).strip() == text.strip() else None


def passage_units(corpus: pl.DataFrame, questions: pl.DataFrame | None) -> tuple[dict[str, list[str]], list[str]]:
    """Every corpus passage's units (its hints; regex sentences where its id does not encode
    them) and the ids of the passages cut into sentences. ``questions`` holds
    ``question_id`` and ``hints`` (the benchmark's ranked hints); without it every passage
    is cut into sentences."""
    hints = dict(questions.select("question_id", "hints").iter_rows()) if questions is not None else {}
    units, split = {}, []
    for pid, text in corpus.select("passage_id", "text").iter_rows():
        from_hints = hint_units(pid, text, hints)
        if from_hints is None:
            split.append(pid)
        units[pid] = from_hints if from_hints is not None else sentences(text)
    return units, split


def union_norm(passages: list[list[str]]) -> str:
    """The distinct units of the ranked passages (lists of units), in order of first
    appearance, joined by spaces."""
    return " ".join(dict.fromkeys(u for units in passages for u in units))


def union_freq_scores(
    passages: list[list[str]], alpha: Fraction = ALPHA, beta: Fraction = BETA
) -> list[tuple[str, Fraction]]:
    """score(u) = alpha * sum 1/rank(P_i) + beta * sum 1/pos_i(u) over the passages P_i
    holding u (ranks and positions 1-based), exactly; units in order of first appearance."""
    scores: dict[str, Fraction] = {}
    for rank, units in enumerate(passages, start=1):
        for pos, unit in enumerate(units, start=1):
            scores[unit] = scores.get(unit, Fraction(0)) + alpha / rank + beta / pos
    return list(scores.items())


def union_freq(
    passages: list[list[str]], top: int | None = None, alpha: Fraction = ALPHA, beta: Fraction = BETA
) -> str:
    """Every unit, highest score first (ties: first appearance), joined by spaces; ``top``
    keeps only the best ``top`` (None, the release's choice: all of them)."""
    scored = union_freq_scores(passages, alpha, beta)
    order = sorted(range(len(scored)), key=lambda i: (-scored[i][1], i))
    return " ".join(scored[i][0] for i in order[:top])


STRATEGIES = {"union_norm": lambda ps, top: union_norm(ps), "union_freq": lambda ps, top: union_freq(ps, top)}
