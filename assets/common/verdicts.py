"""Verdicts and ratings read from the first answer token's log-probabilities, shared by the
construction pipelines' checks and the evaluation's judges."""

from __future__ import annotations

import math

import numpy as np

from assets.common.parsing import parse_yes_no
from resources.llm import ParseError

# Verdicts and ratings are read from the first answer token's probabilities: a small model
# that starts its reply with anything else still gives its preference, and a served model
# answers the same way.
VERDICT = {"logprobs": True, "top_logprobs": 20, "max_tokens": 1, "temperature": 0.0}


def verdict(result) -> bool | None:
    """yes/no from the answer's first token: P(yes) against P(no), or the text itself."""
    p = yes_probability(result.top_logprobs)
    if p is not None:
        return p > 0.5
    try:
        return parse_yes_no(result.text or "")
    except ParseError:
        return None


def rating(top: dict[str, float] | None, low: int = 0, high: int = 10) -> float | None:
    """The probability-weighted mean of the number tokens among the first token's
    alternatives (G-Eval's scoring), or None when the model put no mass on a number."""
    mass = {}
    for token, lp in (top or {}).items():
        t = token.strip()
        if t.isdigit() and low <= int(t) <= high:
            mass[int(t)] = mass.get(int(t), 0.0) + float(np.exp(lp))
    total = sum(mass.values())
    return sum(v * p for v, p in mass.items()) / total if total else None


YES = {"yes", "true"}

NO = {"no", "false"}


def yes_probability(top: dict[str, float] | None) -> float | None:
    """P(yes) / (P(yes) + P(no)) over the first answer token's alternatives, grouping case
    and spacing variants (``Yes``, `` yes``, ``TRUE``). A side absent from the list is given
    the smallest listed probability, an upper bound on its true value. ``None`` when neither
    side is listed."""
    if not top:
        return None
    yes = [lp for t, lp in top.items() if t.strip().lower() in YES]
    no = [lp for t, lp in top.items() if t.strip().lower() in NO]
    if not yes and not no:
        return None
    floor = min(top.values())
    p_yes = sum(math.exp(lp) for lp in yes) if yes else math.exp(floor)
    p_no = sum(math.exp(lp) for lp in no) if no else math.exp(floor)
    return p_yes / (p_yes + p_no)
