"""Parsing model replies, the same way in every benchmark: yes/no, lists, permutations, and
the one rule for whether a text is a real question."""

from __future__ import annotations

import ast
import re
from typing import Any

from assets.common.text import normalize
from resources.llm import ParseError


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


_ID = re.compile(r"\[?(\d+)\]?")
# More digits than any list's length has: not an item (and too long for int() past 4300).
_MAX_ID_DIGITS = 9


def parse_permutation(text: str, n: int) -> tuple[list[int], bool]:
    """0-based order of ``n`` items from a model answer, and whether it needed repair."""
    seen: list[int] = []
    for m in _ID.finditer(text):
        if len(m.group(1)) > _MAX_ID_DIGITS:
            continue
        i = int(m.group(1)) - 1
        if 0 <= i < n and i not in seen:
            seen.append(i)
    missing = [i for i in range(n) if i not in seen]
    repaired = bool(missing) or len(_ID.findall(text)) != n
    return seen + missing, repaired


# Longer than any list of names or options a step asks for; ``ast.literal_eval`` is not
# fed more (its parser's time and memory grow with the text, and a run of minus signs
# exhausts it).
MAX_LITERAL_CHARS = 10_000


def python_literal(text: str, max_chars: int = MAX_LITERAL_CHARS) -> tuple[Any, str | None]:
    """``(value, None)`` of a Python literal written by a model or a file, or ``(None, why)``
    when it is not one: too long, not literal syntax, nested too deeply, or a set or dict
    key that cannot be hashed (``[{{}: 1}]``). Never evaluated as code."""
    if len(text) > max_chars:
        return None, f"longer than {max_chars} characters"
    try:
        return ast.literal_eval(text), None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as e:
        # MemoryError and RecursionError are the parser's own limits on nesting, raised
        # before anything large is built.
        return None, f"not a Python literal ({type(e).__name__})"


def is_question(text: str) -> bool:
    """A real question: capitalised, at least four words, ending in a question mark."""
    return text[:1].isupper() and len(text.split()) >= 4 and text.endswith("?")
