"""Verdicts and ratings read from the answer's log-probabilities, shared by the construction
pipelines' checks and the evaluation's judges: a yes/no verdict from the first answer token,
a rating from the whole number the model writes."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from assets.common.parsing import parse_yes_no
from resources.llm import ParseError

# Verdicts are read from the first answer token's probabilities: a small model that starts
# its reply with anything else still gives its preference, and a served model answers the
# same way.
VERDICT = {"logprobs": True, "top_logprobs": 20, "max_tokens": 1, "temperature": 0.0}

# Ratings need the whole number: tokenizers that write each digit as its own token (Qwen's,
# Llama 2's, SmolLM's) spend two tokens on "10", and a leading space can take one more.
RATING = {"logprobs": True, "top_logprobs": 20, "max_tokens": 4, "temperature": 0.0}


def verdict(result) -> bool | None:
    """yes/no from the answer's first token: P(yes) against P(no), or the text itself."""
    p = yes_probability(result.top_logprobs)
    if p is not None:
        return p > 0.5
    try:
        return parse_yes_no(result.text or "")
    except ParseError:
        return None


def rating(result, low: int = 0, high: int = 10) -> float | None:
    """The judge's rating in an LLM result asked with :data:`RATING`: the mean of
    :func:`number_distribution` over its generated tokens, or None when the model put no
    mass on a number in ``[low, high]``."""
    tokens, alternatives = result.tokens, result.token_logprobs
    if tokens is None or alternatives is None:
        # No per-token log-probabilities: the text and, where given, its first token's.
        tokens, alternatives = first_token_only(result.text or "", result.top_logprobs)
    return mean(number_distribution(tokens, alternatives, low, high))


def mean(distribution: Mapping[int, float]) -> float | None:
    """The probability-weighted mean of a distribution over numbers (G-Eval's score), or
    None when it holds no mass."""
    total = sum(distribution.values())
    return sum(v * p for v, p in distribution.items()) / total if total > 0 else None


# Where the written number starts a token may carry leading whitespace (" 8"); a token that
# continues it starts with a digit. Anything after the digits ends the number ("8.", "0\n").
_STARTS = re.compile(r"\s*([0-9]+)(.*)", re.S)
_GOES_ON = re.compile(r"([0-9]+)(.*)", re.S)
_WRITTEN = re.compile(r"[0-9]+")


def number_distribution(
    tokens: Sequence[str], alternatives: Sequence[Mapping[str, float] | None], low: int = 0, high: int = 10
) -> dict[int, float]:
    """The model's distribution over the whole numbers in ``[low, high]``, from the tokens it
    generated (``tokens``) and each position's most likely alternatives (``alternatives[i]``:
    token -> log-probability, conditional on ``tokens[:i]``, as OpenAI's ``top_logprobs``).
    Not normalised: words and numbers outside the range hold the missing mass.

    The rule. The number the model wrote (the first run of digits in its text) starts at
    some position; the tokens before it are a lead-in ("Score: "), not read.

    - At that position each listed token made of digits (leading whitespace allowed) begins
      a number, with its probability.
    - The beginning the model took is followed along the generated tokens: at each next
      position the listed tokens starting with a digit continue it and the rest of the mass
      ends it, so P(10) = P("1") P("0" | "1") and P(1) = P("1") (1 - P(digit | "1")). Where
      the answer stops inside the number (end of text, ``max_tokens``) the number is whole;
      a position reported without alternatives is taken as certain.
    - A beginning or continuation the model did not take has no reported continuation. A
      token with something after its digits ("8.") is that number. Any other is read as the
      one in-range number it most plausibly grows into: itself when the tokenizer writes
      numbers whole (some number token at the first position has two or more digits: the
      "1" beside "10"), otherwise the in-range number starting with those digits that is
      nearest the written one. With digit-splitting tokenizers on 0-10 the "1" beside a
      written 9 reads 10, beside a written 2 it reads 1.

    Approximated: the continuations of what was not taken (a server reports alternatives
    along the generated path only), resolved by assuming a judge's ratings gather around the
    number it wrote; and the mass outside a position's listed alternatives, which ends the
    number (the top 20 leave little). On the project's scales the one ambiguous beginning is
    "1" on 0-10; a 0-100 scale would be read coarsely. With no number written, the first
    position's number tokens are read each as itself, G-Eval's first-token score."""
    text = "".join(tokens)
    written = _WRITTEN.search(text)
    anchor = _whole(written.group()) if written else None
    start, offset = _token_at(tokens, written.start()) if written else (0, 0)
    mass: dict[int, float] = {}

    def add(digits: str | None, p: float) -> None:
        value = _whole(digits)
        if value is not None and p > 0 and low <= value <= high:
            mass[value] = mass.get(value, 0.0) + p

    def listed_at(i: int) -> dict[str, float]:
        listed = dict(alternatives[i]) if i < len(alternatives) and alternatives[i] else {tokens[i]: 0.0}
        if i == start and offset and tokens[i] in listed:  # the number starts inside the token: "(8"
            listed[tokens[i][offset:]] = listed.pop(tokens[i])
        return listed

    merged = any(len(m.group(1)) > 1 for m in map(_STARTS.match, listed_at(start) if tokens else ()) if m)

    def grown(digits: str) -> str | None:
        completions = [v for v in range(low, high + 1) if str(v).startswith(digits)]
        if not completions:
            return None
        target = int(digits) if merged or anchor is None else anchor
        return str(min(completions, key=lambda v: (abs(v - target), v)))

    prefix, p_path = "", 1.0
    for i in range(start, len(tokens)):
        pattern = _STARTS if i == start else _GOES_ON
        steps = _number_steps(listed_at(i), pattern)
        if i > start:
            add(prefix, p_path * max(0.0, 1.0 - sum(steps.values())))
        m = pattern.match(tokens[i][offset:] if i == start else tokens[i])
        taken = (m.group(1), bool(m.group(2))) if m else None
        for (digits, ends), p in steps.items():
            if (digits, ends) != taken:
                add(prefix + digits if ends else grown(prefix + digits), p_path * p)
        if taken is None:
            return mass
        p_path *= steps.get(taken, 0.0)
        prefix += taken[0]
        if taken[1]:
            break
    add(prefix or None, p_path)
    return mass


def _number_steps(listed: Mapping[str, float], pattern: re.Pattern) -> dict[tuple[str, bool], float]:
    """The probability of each way the listed tokens begin or continue the number (``pattern``
    matching): by the digits, and whether the token ends the number."""
    steps: dict[tuple[str, bool], float] = {}
    for token, lp in listed.items():
        if m := pattern.match(token):
            key = (m.group(1), bool(m.group(2)))
            steps[key] = steps.get(key, 0.0) + probability(lp)
    return steps


# A rating has a few digits; a longer run is no rating (and int() refuses past 4300 digits).
_MAX_DIGITS = 18


def _whole(digits: str | None) -> int | None:
    return int(digits) if digits and len(digits) <= _MAX_DIGITS else None


def probability(logprob: float) -> float:
    """A log-probability as reported, as a probability: a value above 0 (a server's rounding,
    or a broken cache entry) counts as certain, and one that is not a number as impossible,
    so that no reply overflows or poisons a verdict or a rating."""
    return 0.0 if math.isnan(logprob) else math.exp(min(logprob, 0.0))


def _token_at(tokens: Sequence[str], char: int) -> tuple[int, int]:
    """The index of the token holding character ``char`` of the joined text, and the
    character's offset in it."""
    seen = 0
    for i, t in enumerate(tokens):
        if char < seen + len(t):
            return i, char - seen
        seen += len(t)
    raise ValueError(f"character {char} is past the text's end")


def first_token_only(text: str, top: Mapping[str, float] | None) -> tuple[list[str], list[Mapping[str, float] | None]]:
    """Tokens and alternatives for :func:`number_distribution` when only the first token's
    alternatives are known: the most likely listed token the text starts with, then the
    rest of the text as one token taken as certain."""
    if not top:
        return [text], [None]
    starts = [t for t in top if t and text.startswith(t)]
    first = max(starts or top, key=lambda t: top[t])
    rest = text[len(first) :] if text.startswith(first) else ""
    if not rest:
        return [first], [top]
    return [first, rest], [top, None]


YES = {"yes", "true"}

NO = {"no", "false"}


def yes_probability(top: dict[str, float] | None) -> float | None:
    """P(yes) / (P(yes) + P(no)) over the first answer token's alternatives, grouping case
    and spacing variants (``Yes``, `` yes``, ``TRUE``). A side absent from the list is given
    the smallest listed probability, an upper bound on its true value. ``None`` when neither
    side is listed, or neither has any probability."""
    if not top:
        return None
    yes = [lp for t, lp in top.items() if t.strip().lower() in YES]
    no = [lp for t, lp in top.items() if t.strip().lower() in NO]
    if not yes and not no:
        return None
    floor = min(probability(lp) for lp in top.values())
    p_yes = sum(probability(lp) for lp in yes) if yes else floor
    p_no = sum(probability(lp) for lp in no) if no else floor
    return p_yes / (p_yes + p_no) if p_yes + p_no > 0 else None
