"""Runs and qrels as tables, TREC files and ranx objects."""

from __future__ import annotations

import polars as pl

from resources.lucene import Hit

RUN_SCHEMA = {
    "question_id": pl.String,
    "passage_id": pl.String,
    "rank": pl.Int32,
    "score": pl.Float64,
    "system": pl.String,
}


def run_frame(hits: dict[str, list[Hit]], system: str) -> pl.DataFrame:
    rows = [(qid, h.docid, h.rank, h.score, system) for qid, hs in hits.items() for h in hs]
    return pl.DataFrame(rows, schema=RUN_SCHEMA, orient="row")


def oracle_run(qrels: pl.DataFrame, system: str, seed: int = 0) -> pl.DataFrame:
    """Every passage labeled 1 or 2, per question, in a shuffle seeded by the question id:
    the set is perfect and the order carries no signal, which is what a reranker is handed
    in the paper's Oracle setting."""
    import random

    rows = []
    relevant = qrels.filter(pl.col("label") > 0).sort("question_id", "passage_id")
    for (qid,), group in relevant.group_by("question_id", maintain_order=True):
        ids = group["passage_id"].to_list()
        random.Random(f"{seed}:{qid}").shuffle(ids)
        rows.extend((qid, pid, rank, 1.0 / rank, system) for rank, pid in enumerate(ids, start=1))
    return pl.DataFrame(rows, schema=RUN_SCHEMA, orient="row")


def reranked_run(ranked: dict[str, list[str]], lists: dict[str, list[str]], depth: int, system: str) -> pl.DataFrame:
    """A reranked run: each question's head as the reranker ordered it (``lists``), then the
    retrieved passages below ``depth`` in their retrieved order (``ranked``); scores 1/rank."""
    rows = [
        (q, pid, rank, 1.0 / rank, system)
        for q, ids in ranked.items()
        for rank, pid in enumerate(lists[q] + ids[depth:], start=1)
    ]
    return pl.DataFrame(rows, schema=RUN_SCHEMA, orient="row")


def trec_run(run: pl.DataFrame) -> str:
    """TREC run format: ``qid Q0 docid rank score system``."""
    lines = [
        f"{r['question_id']} Q0 {r['passage_id']} {r['rank']} {r['score']:.6f} {r['system']}"
        for r in run.sort("question_id", "rank").iter_rows(named=True)
    ]
    return "\n".join(lines) + ("\n" if lines else "")


def _repeats(frame: pl.DataFrame, key: list[str], what: str, shown: str) -> None:
    """A ValueError naming the first questions whose ``key`` repeats, with their ``shown``."""
    repeated = (
        frame.group_by(key)
        .agg(pl.col(shown).sort().alias("shown"), pl.len().alias("n"))
        .filter(pl.col("n") > 1)
        .sort(key)
    )
    if repeated.height:
        examples = "; ".join(
            f"{'/'.join(str(row[c]) for c in key)}: {', '.join(map(str, row['shown']))}"
            for row in repeated.head(5).iter_rows(named=True)
        )
        raise ValueError(f"{repeated.height} {what} ({examples})")


def qrels_dict(qrels: pl.DataFrame) -> dict[str, dict[str, int]]:
    """``{question: {passage: label}}``; a passage given two different labels for one
    question is an error (which one counts would depend on row order); a repeated identical
    row is the same judgement."""
    _repeats(
        qrels.unique(["question_id", "passage_id", "label"]),
        ["question_id", "passage_id"],
        "question/passage pairs with conflicting labels",
        "label",
    )
    out: dict[str, dict[str, int]] = {}
    for qid, pid, label in qrels.select("question_id", "passage_id", "label").iter_rows():
        out.setdefault(qid, {})[pid] = int(label)
    return out


def run_dict(run: pl.DataFrame) -> dict[str, dict[str, float]]:
    """``{question: {passage: 1/rank}}``: the ranking is the ``rank`` column, the order the
    searcher or reranker returned, never a re-sort by ``score``. Equal scores are ordered
    differently by each tool (trec_eval: by docid descending; ranx: an unstable argsort), so
    scores made strictly decreasing by rank give every tool the project's order. A rank below
    1 or missing, two passages at one rank of a question, or one passage twice in a question's
    list leave no single order and are errors naming the question and passages. (The TREC
    file from ``trec_run`` keeps the searcher's scores: trec_eval on it reorders tied scores.)"""
    bad = run.filter(pl.col("rank").is_null() | (pl.col("rank") < 1))
    if bad.height:
        row = bad.row(0, named=True)
        raise ValueError(
            f"{bad.height} run rows with a rank below 1 or missing "
            f"(e.g. question {row['question_id']}, passage {row['passage_id']}, rank {row['rank']})"
        )
    _repeats(run, ["question_id", "rank"], "question/rank pairs holding several passages", "passage_id")
    _repeats(run, ["question_id", "passage_id"], "question/passage pairs ranked more than once", "rank")
    out: dict[str, dict[str, float]] = {}
    for qid, pid, rank in run.select("question_id", "passage_id", "rank").iter_rows():
        out.setdefault(qid, {})[pid] = 1.0 / rank
    return out
