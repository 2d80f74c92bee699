"""The QUIT construction rules as plain functions (paper sections 3.1-3.2)."""

from __future__ import annotations

import difflib
import random
import re

from assets.text import contains_phrase, exact_match, normalize, tokens
from resources.llm import ParseError

NO_ANSWER = "NO ANSWER"
TOP_HINTS = 5

# --- parsing model output ----------------------------------------------------------------

_PREFIX = re.compile(r"^\s*(final\s+)?answer\s*[:\-]\s*", re.I)


def parse_short_answer(text: str) -> str | None:
    """A reader's short answer; None for NO ANSWER. Empty output is unparsable."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        raise ParseError("empty answer")
    answer = _PREFIX.sub("", lines[0]).strip().strip("\"'*`").rstrip(".").strip()
    if not answer:
        raise ParseError(f"no answer text in {text[:80]!r}")
    if "no answer" in answer.lower():
        return None
    return answer


def parse_yes_no(text: str) -> bool:
    """A judge verdict: the first word must be yes or no."""
    words = re.findall(r"[a-z]+", text.lower())
    if words and words[0] in {"yes", "no"}:
        return words[0] == "yes"
    raise ParseError(f"expected Yes or No, got {text[:80]!r}")


def parse_list(text: str, limit: int) -> list[str]:
    """One item per line; numbering and bullets removed, duplicates dropped."""
    items, seen = [], set()
    for line in text.splitlines():
        item = re.sub(r"^\s*(\d+[.)]|[-*•])\s*", "", line).strip().rstrip(".")
        if item and normalize(item) not in seen:
            seen.add(normalize(item))
            items.append(item)
    if not items:
        raise ParseError(f"no list items in {text[:80]!r}")
    return items[:limit]


TAXONOMY = {
    "ABBR": {"abb", "exp"},
    "DESC": {"def", "desc", "manner", "reason"},
    "ENTY": {"animal", "body", "color", "cremat", "currency", "dismed", "event", "food", "instru",
             "lang", "letter", "other", "plant", "product", "religion", "sport", "substance",
             "symbol", "techmeth", "termeq", "veh", "word"},
    "HUM": {"desc", "gr", "ind", "title"},
    "LOC": {"city", "country", "mount", "other", "state"},
    "NUM": {"code", "count", "date", "dist", "money", "ord", "other", "perc", "period", "speed",
            "temp", "volsize", "weight"},
}


def parse_type_label(text: str) -> tuple[str, str]:
    """A COARSE:fine label from the taxonomy."""
    m = re.search(r"\b([A-Za-z]{3,4})\s*:\s*([A-Za-z]+)", text)
    if m:
        coarse, fine = m.group(1).upper(), m.group(2).lower()
        if fine in TAXONOMY.get(coarse, ()):
            return coarse, fine
    raise ParseError(f"no taxonomy label in {text[:80]!r}")


def coarse_type(major: str | None) -> str | None:
    """Source spellings ('HUMAN', 'HUM:HUMAN', 'HUM') reduced to the coarse code."""
    if not major:
        return None
    head = major.split(":")[0].strip().upper()
    aliases = {"HUMAN": "HUM", "LOCATION": "LOC", "ENTITY": "ENTY", "NUMERIC": "NUM",
               "DESCRIPTION": "DESC", "ABBREVIATION": "ABBR"}
    return aliases.get(head, head)


def fine_type(minor: str | None) -> str | None:
    if not minor:
        return None
    return minor.split(":")[0].strip().lower()


# --- answer leakage (3.1.2) ----------------------------------------------------------------


def leaking_alias(hint: str, answers: list[str]) -> str | None:
    """The answer or alias a hint names outright (normalized, on word boundaries)."""
    for a in answers:
        if contains_phrase(hint, a):
            return a
    return None


def leakage_spans(hint: str, answers: list[str], threshold: float = 0.75) -> list[str]:
    """Spans of a hint close enough to an answer to be worth asking the judge about.

    The paper used BEM to test whether any words of a hint are equivalent to the answer.
    Offline, exact alias matches are decided by :func:`leaking_alias`; near misses (a
    misspelling, a plural, a part of a multi-word name) are the candidates sent to the
    LLM judge. A span is a run of 1..n words, n being the longest answer's length.
    """
    words = tokens(hint)
    targets = [normalize(a) for a in answers if normalize(a)]
    longest = max((len(t.split()) for t in targets), default=1)
    spans = []
    for n in range(1, longest + 1):
        for i in range(len(words) - n + 1):
            span = " ".join(words[i : i + n])
            if len(span) < 4 or span in spans:
                continue
            if any(difflib.SequenceMatcher(None, span, t).ratio() >= threshold for t in targets):
                spans.append(span)
    return spans


# --- hint convergence and selection (3.1.2, HintEval) --------------------------------------


def convergence(gold_fits: bool, fits: list[bool]) -> float:
    """HintEval's convergence of one hint over m candidates (m-1 wrong ones plus the gold).

    0 when the hint does not fit the gold answer; otherwise the share of candidates it
    rules out, counting the gold as kept: 1 - (wrong candidates it fits) / m. A hint that
    fits only the gold scores 1; one that fits everything scores 1/m.
    """
    if not gold_fits:
        return 0.0
    m = len(fits) + 1
    return round(1.0 - sum(fits) / m, 4)


def top_hints(hints: list[str], scores: list[float | None], k: int = TOP_HINTS) -> tuple[list[str], list[float]]:
    """The k highest-convergence hints, ties broken by source order (stable)."""
    order = sorted(range(len(hints)), key=lambda i: -(scores[i] if scores[i] is not None else -1.0))
    keep = order[:k]
    return [hints[i] for i in keep], [float(scores[i]) if scores[i] is not None else float("nan") for i in keep]


# --- difficulty (3.1.3) ----------------------------------------------------------------------


def reference_complexity(contains: list[bool], similarities: list[float]) -> float:
    """Reference-based question complexity in [0, 1] (after Gabburo et al., 2024).

    A question is easy when the passages retrieved for it contain the answer and are close
    to it in meaning. Each of the k retrieved passages contributes its similarity when it
    contains the answer; complexity is 1 minus the mean contribution. No passages: 1.
    """
    if not contains:
        return 1.0
    support = sum(max(s, 0.0) for c, s in zip(contains, similarities) if c)
    return round(1.0 - support / len(contains), 4)


def difficulty_bucket(complexity: float) -> str:
    if complexity < 1 / 3:
        return "easy"
    if complexity < 2 / 3:
        return "medium"
    return "hard"


# --- splits (3.1.4) ---------------------------------------------------------------------------


def assign_splits(
    answerable: dict[str, bool], train_size: int, test_size: int, seed: int
) -> dict[str, str]:
    """train: sampled from parametrically answerable questions; test: sampled from the
    non-answerable ones; dev: the rest of the non-answerable. Answerable questions beyond
    ``train_size`` are left out (split ``unused``), as in the paper."""
    rng = random.Random(seed)
    yes = sorted(q for q, a in answerable.items() if a)
    no = sorted(q for q, a in answerable.items() if not a)
    rng.shuffle(yes)
    rng.shuffle(no)
    splits = {q: "train" for q in yes[:train_size]}
    splits.update({q: "unused" for q in yes[train_size:]})
    splits.update({q: "test" for q in no[:test_size]})
    splits.update({q: "dev" for q in no[test_size:]})
    return splits


# --- labels (3.2.2, 3.2.4) ----------------------------------------------------------------------


def is_correct(candidate: str | None, golds: list[str], judged: bool | None) -> bool:
    """Normalized exact match counts without the judge; otherwise the judge's verdict."""
    if candidate is None:
        return False
    if exact_match(candidate, golds):
        return True
    return bool(judged)


def passage_label(correct_by_labeler: list[bool]) -> int:
    """2 when any labeler answered correctly from the passage, else 1."""
    return 2 if any(correct_by_labeler) else 1
