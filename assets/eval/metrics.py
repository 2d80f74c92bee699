"""Retrieval metrics through ranx, with the paper's cut-offs. Graded labels (2 and 1) count
as relevant for hits and recall and as gains for nDCG (linear gains, as trec_eval)."""

from __future__ import annotations

import polars as pl

from assets.eval.runs import qrels_dict, run_dict

RETRIEVAL_METRICS = ["hit_rate@1", "hit_rate@5", "hit_rate@10", "hit_rate@50", "hit_rate@100",
                     "recall@5", "recall@10", "recall@50", "mrr", "ndcg@10", "ndcg@100"]


def evaluate_run(qrels: pl.DataFrame, run: pl.DataFrame, metrics: list[str] = RETRIEVAL_METRICS) -> dict[str, float]:
    """Mean of each metric over the questions that have qrels (a question the run missed
    scores 0)."""
    from ranx import Qrels, Run, evaluate

    q = qrels_dict(qrels)
    r = run_dict(run.filter(pl.col("question_id").is_in(list(q))))
    scores = evaluate(Qrels(q), Run(r), metrics, make_comparable=True)
    return {m: float(scores[m]) for m in metrics} if len(metrics) > 1 else {metrics[0]: float(scores)}


def per_question(qrels: pl.DataFrame, run: pl.DataFrame, metric: str) -> dict[str, float]:
    from ranx import Qrels, Run, evaluate

    q = qrels_dict(qrels)
    run_obj = Run(run_dict(run.filter(pl.col("question_id").is_in(list(q)))))
    evaluate(Qrels(q), run_obj, metric, make_comparable=True)
    return {qid: float(v) for qid, v in run_obj.scores[metric].items()}
