"""Text the benchmarks share: answer normalization and matching, the two ways of cutting a text
into words (normalized ``tokens`` for answers, ``words`` as written for wording), sentences."""

from __future__ import annotations

import re
import unicodedata
from functools import cache, lru_cache
from pathlib import Path

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b")
# Dashes and slashes join two words ("Jean-Paul", "Paris/London"): they become a space, so
# each word is still found on its own. Every other mark, and the underscore, is deleted.
_JOINERS = re.compile(r"[-‐‑‒–—―−/\\]")
_MARKS = re.compile(r"[^\w\s]|_")


# Remembered: QUIT's labeling compares each answer with every gold alias, so the same few
# strings are normalized millions of times (8 calls an answer).
@lru_cache(maxsize=1 << 16)
def normalize(text: str) -> str:
    """The normalization every answer comparison uses (EM, the judge's keys, answer pools,
    leakage), SQuAD's with two refinements. In order: accents stripped (NFKD), lowercase,
    a possessive ``'s`` dropped ("Smith's" = "Smith"; a plural's bare apostrophe is deleted,
    "Smiths'" = "Smiths"), dashes and slashes turned into a space ("Jean-Paul" = "Jean Paul"),
    every other punctuation mark or symbol deleted, not spaced ("U.S." = "US", "1,000" =
    "1000", "O'Brien" = "OBrien", "$5" = "5"), the articles a/an/the dropped, whitespace
    collapsed."""
    if not text.isascii():
        text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    text = text.lower()
    text = _JOINERS.sub(" ", _POSSESSIVE.sub("", text))
    text = _ARTICLES.sub(" ", _MARKS.sub("", text))
    return " ".join(text.split())


def normalize_once(text: str) -> str:
    """:func:`normalize` without remembering the text: for texts read once, such as the 2.4M
    passages of QUIT's Table 1, which would fill the cache with one-off entries (about 100 MB)
    and push out the answers it is for."""
    return normalize.__wrapped__(text)


def exact_match(candidate: str | None, golds: list[str]) -> bool:
    """Whether the candidate equals any gold answer or alias after :func:`normalize` (the
    project's EM; the QUIT release's raw, case-sensitive match is ``readers.raw_exact_match``).
    No candidate, or one that normalizes to nothing, matches nothing."""
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


@cache
def english_stopwords() -> frozenset[str]:
    """NLTK's English stopword list (bundled: nltk_data cannot be downloaded offline)."""
    lines = Path(__file__).with_name("stopwords_english.txt").read_text(encoding="utf-8").splitlines()
    return frozenset(ln.strip() for ln in lines if ln.strip() and not ln.startswith("#"))
