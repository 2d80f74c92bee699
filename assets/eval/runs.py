"""Runs and qrels as tables, TREC files and ranx objects."""

from __future__ import annotations

import polars as pl

from resources.lucene import Hit

RUN_SCHEMA = {"question_id": pl.String, "passage_id": pl.String, "rank": pl.Int32, "score": pl.Float64, "system": pl.String}


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


def trec_run(run: pl.DataFrame) -> str:
    """TREC run format: ``qid Q0 docid rank score system``."""
    lines = [f"{r['question_id']} Q0 {r['passage_id']} {r['rank']} {r['score']:.6f} {r['system']}"
             for r in run.sort("question_id", "rank").iter_rows(named=True)]
    return "\n".join(lines) + ("\n" if lines else "")


def qrels_dict(qrels: pl.DataFrame) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for qid, pid, label in qrels.select("question_id", "passage_id", "label").iter_rows():
        out.setdefault(qid, {})[pid] = int(label)
    return out


def run_dict(run: pl.DataFrame) -> dict[str, dict[str, float]]:
    """Scores made strictly decreasing by rank, so every tool orders documents the same way
    (trec_eval and ranx break score ties differently)."""
    out: dict[str, dict[str, float]] = {}
    for qid, pid, rank in run.select("question_id", "passage_id", "rank").iter_rows():
        out.setdefault(qid, {})[pid] = 1.0 / rank
    return out
