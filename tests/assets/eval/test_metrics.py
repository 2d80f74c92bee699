"""ranx against trec_eval (pytrec_eval) on the same run and qrels."""

import polars as pl
import pytest

from assets.eval.metrics import evaluate_run
from assets.eval.runs import qrels_dict, run_dict, trec_run

QRELS = pl.DataFrame({
    "question_id": ["q1", "q1", "q1", "q2", "q2", "q3"],
    "passage_id": ["a", "b", "c", "d", "e", "f"],
    "label": [2, 1, 1, 2, 1, 1],
})
RUN = pl.DataFrame({
    "question_id": ["q1"] * 5 + ["q2"] * 4 + ["q3"] * 3,
    "passage_id": ["x", "b", "y", "a", "z", "d", "w", "v", "e", "u", "t", "s"],
    "rank": [1, 2, 3, 4, 5, 1, 2, 3, 4, 1, 2, 3],
    "score": [9.0, 8, 7, 6, 5, 9, 8, 7, 6, 3, 2, 1],
    "system": ["bm25"] * 12,
})


def test_ranx_agrees_with_trec_eval():
    import pytrec_eval

    ours = evaluate_run(QRELS, RUN, ["mrr", "ndcg@10", "recall@5", "hit_rate@1", "hit_rate@5"])
    ev = pytrec_eval.RelevanceEvaluator(qrels_dict(QRELS), {"recip_rank", "ndcg_cut_10", "recall_5", "success_1", "success_5"})
    per_q = ev.evaluate(run_dict(RUN))
    mean = {m: sum(v[m] for v in per_q.values()) / len(per_q) for m in ("recip_rank", "ndcg_cut_10", "recall_5", "success_1", "success_5")}
    assert ours["mrr"] == pytest.approx(mean["recip_rank"])
    assert ours["ndcg@10"] == pytest.approx(mean["ndcg_cut_10"])
    assert ours["recall@5"] == pytest.approx(mean["recall_5"])
    assert ours["hit_rate@1"] == pytest.approx(mean["success_1"])
    assert ours["hit_rate@5"] == pytest.approx(mean["success_5"])
    # and against values worked by hand: q1 first relevant at rank 2, q2 at 1, q3 none
    assert ours["mrr"] == pytest.approx((1 / 2 + 1 + 0) / 3)
    assert ours["hit_rate@1"] == pytest.approx(1 / 3)


def test_trec_run_format():
    text = trec_run(RUN.head(2))
    assert text.splitlines() == ["q1 Q0 x 1 9.000000 bm25", "q1 Q0 b 2 8.000000 bm25"]
