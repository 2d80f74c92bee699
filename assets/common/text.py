"""Text the benchmarks share: answer normalization and matching, the two ways of cutting a text
into words (normalized ``tokens`` for answers, ``words`` as written for wording), sentences."""

from __future__ import annotations

import re
import string
import unicodedata

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans({c: " " for c in string.punctuation + "‘’“”–—"})


def normalize(text: str) -> str:
    """Lowercase, strip accents, punctuation and articles, collapse spaces (SQuAD-style)."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = text.lower().replace("'s ", " ").translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(candidate: str | None, golds: list[str]) -> bool:
    """Normalized exact match of a candidate against any gold answer or alias."""
    if not candidate:
        return False
    c = normalize(candidate)
    return bool(c) and any(c == normalize(g) for g in golds if g)


def contains_phrase(text: str, phrase: str) -> bool:
    """Whether the normalized phrase occurs in the normalized text on word boundaries."""
    p = normalize(phrase)
    if not p:
        return False
    return f" {p} " in f" {normalize(text)} "


def word_count(text: str) -> int:
    return len(text.split())


def tokens(text: str) -> list[str]:
    return normalize(text).split()


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def sentences(passage: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(passage.strip()) if s.strip()]


def words(text: str) -> list[str]:
    """Lowercase words as written (apostrophes and hyphens kept, accents and articles too):
    for rules that compare the wording of two texts rather than their answers."""
    return re.findall(r"[\w'’-]+", text.lower())
