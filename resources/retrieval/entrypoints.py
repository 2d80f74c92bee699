"""Entry points: a team's own system called as a Python function the project imports, its
rankings checked before they count."""

from __future__ import annotations

import importlib
import math
import numbers
from collections.abc import Callable, Mapping

from resources.lucene import Hit
from resources.retrieval.registry import RetrieverSpec


class EntryPointError(RuntimeError):
    """An entry point raised: the message names the system and its function, the cause is
    the function's own error."""


def load_function(owner: str, target: str) -> Callable:
    """The callable ``package.module:function`` names (the function part may be dotted, as
    ``module:Class.method``); errors name ``owner`` and what failed to resolve. Called, it
    raises :class:`EntryPointError` for whatever the function raises, so a bare ``KeyError``
    from a team's code still says which system and function it came from."""
    module_name, _, name = target.partition(":")
    try:
        value = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"{owner}: cannot import module {module_name!r} of entry point {target!r}: {e}") from e
    for attribute in name.split("."):
        if not hasattr(value, attribute):
            raise ValueError(f"{owner}: entry point {target!r}: {module_name} has no attribute {name!r}")
        value = getattr(value, attribute)
    if not callable(value):
        raise ValueError(f"{owner}: entry point {target!r} is not callable")

    def call(*args, **kwargs):
        try:
            return value(*args, **kwargs)
        except Exception as e:
            raise EntryPointError(f"{owner}: entry point {target!r} raised {type(e).__name__}: {e}") from e

    return call


def checked_ranking(
    owner: str, qid: str, ranked, known: Mapping | set, limit: int | None = None
) -> list[tuple[str, float]]:
    """An entry point's ranking for one query, validated: a list of ``(doc_id, score)``
    best first, each id known and listed once, scores finite and never rising down the
    list (the order is the ranking; a TREC file of it must not reorder), at most ``limit``."""
    where = f"{owner}: query {qid!r}"
    if isinstance(ranked, (str, bytes, Mapping)) or not hasattr(ranked, "__iter__"):
        raise ValueError(f"{where}: expected a list of (doc_id, score) pairs, got {type(ranked).__name__}")
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    for position, pair in enumerate(ranked, start=1):
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(f"{where}: item {position} is {pair!r}, not a (doc_id, score) pair")
        doc, score = pair
        if not isinstance(doc, str):
            raise ValueError(f"{where}: item {position}: doc id {doc!r} is not a string")
        if isinstance(score, bool) or not isinstance(score, numbers.Real) or not math.isfinite(float(score)):
            raise ValueError(f"{where}: document {doc!r}: score {score!r} is not a finite number")
        if doc not in known:
            raise ValueError(f"{where}: unknown document {doc!r}")
        if doc in seen:
            raise ValueError(f"{where}: document {doc!r} is ranked twice")
        if out and float(score) > out[-1][1]:
            raise ValueError(
                f"{where}: document {doc!r} (rank {position}) scores {float(score)}, above the "
                f"{out[-1][1]} of rank {position - 1}: return the list best first"
            )
        seen.add(doc)
        out.append((doc, float(score)))
    if limit is not None and len(out) > limit:
        raise ValueError(f"{where}: {len(out)} documents returned, more than the k={limit} asked for")
    return out


def entrypoint_search(
    spec: RetrieverSpec, queries: Mapping[str, str], corpus: Mapping[str, str], k: int
) -> dict[str, list[Hit]]:
    """Call the retriever's function ``f(queries, corpus, k)`` (``{qid: text}``,
    ``{doc_id: text}``, the depth) and turn its ``{qid: [(doc_id, score), ...]}``, best
    first, into hits. Every call hands over the whole corpus, so a function that indexes
    should cache its index (e.g. keyed by the corpus ids). A query it returns nothing for
    gets no hits (it scores 0); a query id it invents is an error."""
    owner = f"retriever {spec.alias!r}"
    result = load_function(owner, spec.function)(dict(queries), corpus, k)
    if not isinstance(result, Mapping):
        raise ValueError(
            f"{owner}: {spec.function} returned {type(result).__name__}, expected {{qid: [(doc_id, score), ...]}}"
        )
    unknown = sorted(str(q) for q in result if q not in queries)
    if unknown:
        raise ValueError(
            f"{owner}: {spec.function} returned {len(unknown)} query ids it was not given (e.g. {', '.join(unknown[:3])})"
        )
    return {
        qid: [
            Hit(doc, score, rank)
            for rank, (doc, score) in enumerate(checked_ranking(owner, qid, result[qid], corpus, k), start=1)
        ]
        for qid in queries
        if qid in result
    }
