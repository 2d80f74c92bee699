"""Retrieval metrics: ranx against trec_eval (pytrec_eval) and against hand computation, the
nDCG gains, and the errors for input that has no single answer."""

import math
import random

import dagster as dg
import polars as pl
import pytest

from assets.common.metadata import report_slice
from assets.eval import reports
from assets.eval.metrics import (
    RETRIEVAL_METRICS,
    evaluate_run,
    grouped_per_question_metrics,
    metric_label,
    ndcg,
    parse_metric,
    per_question,
)
from assets.eval.runs import RUN_SCHEMA, qrels_dict, run_dict, trec_run
from assets.eval.uncertainty import UncertaintySettings

# ranx compiles its metrics once a session, in the background (tests.background)
pytestmark = pytest.mark.usefixtures("compiled_metrics")

QRELS = pl.DataFrame(
    {
        "question_id": ["q1", "q1", "q1", "q2", "q2", "q3"],
        "passage_id": ["a", "b", "c", "d", "e", "f"],
        "label": [2, 1, 1, 2, 1, 1],
    }
)
RUN = pl.DataFrame(
    {
        "question_id": ["q1"] * 5 + ["q2"] * 4 + ["q3"] * 3,
        "passage_id": ["x", "b", "y", "a", "z", "d", "w", "v", "e", "u", "t", "s"],
        "rank": [1, 2, 3, 4, 5, 1, 2, 3, 4, 1, 2, 3],
        "score": [9.0, 8, 7, 6, 5, 9, 8, 7, 6, 3, 2, 1],
        "system": ["bm25"] * 12,
    }
)


def qrels(rows) -> pl.DataFrame:
    return pl.DataFrame(
        rows, schema={"question_id": pl.String, "passage_id": pl.String, "label": pl.Int64}, orient="row"
    )


def ranked(lists: dict[str, list[str]], scores: dict[str, list[float]] | None = None) -> pl.DataFrame:
    rows = [
        (q, p, rank, (scores or {}).get(q, [1.0 / r for r in range(1, len(ps) + 1)])[rank - 1], "s")
        for q, ps in lists.items()
        for rank, p in enumerate(ps, start=1)
    ]
    return pl.DataFrame(rows, schema=RUN_SCHEMA, orient="row")


def test_ranx_agrees_with_trec_eval():
    import pytrec_eval

    ours = evaluate_run(QRELS, RUN, ["mrr", "ndcg@10", "recall@5", "hit_rate@1", "hit_rate@5"])
    ev = pytrec_eval.RelevanceEvaluator(
        qrels_dict(QRELS), {"recip_rank", "ndcg_cut_10", "recall_5", "success_1", "success_5"}
    )
    per_q = ev.evaluate(run_dict(RUN))
    mean = {
        m: sum(v[m] for v in per_q.values()) / len(per_q)
        for m in ("recip_rank", "ndcg_cut_10", "recall_5", "success_1", "success_5")
    }
    assert ours["mrr"] == pytest.approx(mean["recip_rank"])
    assert ours["ndcg@10"] == pytest.approx(mean["ndcg_cut_10"])
    assert ours["recall@5"] == pytest.approx(mean["recall_5"])
    assert ours["hit_rate@1"] == pytest.approx(mean["success_1"])
    assert ours["hit_rate@5"] == pytest.approx(mean["success_5"])
    # and against values worked by hand: q1 first relevant at rank 2, q2 at 1, q3 none
    assert ours["mrr"] == pytest.approx((1 / 2 + 1 + 0) / 3)
    assert ours["hit_rate@1"] == pytest.approx(1 / 3)


# One question, labels a=2, b=1, c=1 and a judged-irrelevant z=0; the run ranks x, b, a, c.
GRADED = qrels([("q1", "a", 2), ("q1", "b", 1), ("q1", "c", 1), ("q1", "z", 0)])
GRADED_RUN = ranked({"q1": ["x", "b", "a", "c"]})
Q1 = pl.DataFrame({"question_id": ["q1"], "question": ["?"], "split": ["test"]})
LOG3 = math.log2(3)


def test_ndcg_exponential_gain_by_hand():
    # Exponential gains 2^rel-1: a=3, b=1, c=1; discounts log2(rank+1): 1, log2 3, 2, log2 5.
    # DCG@3  = 0/1 + 1/log2 3 + 3/2             = 0.63093 + 1.5       = 2.13093
    # IDCG@3 = 3/1 + 1/log2 3 + 1/2  (a, b, c)  = 3 + 0.63093 + 0.5   = 4.13093
    # nDCG@3 = 2.13093 / 4.13093 = 0.51585
    scores = evaluate_run(GRADED, GRADED_RUN, [ndcg(3), ndcg(3, "linear"), ndcg(10)])
    assert scores["ndcg_burges@3"] == pytest.approx((1 / LOG3 + 3 / 2) / (3 + 1 / LOG3 + 1 / 2))
    assert scores["ndcg_burges@3"] == pytest.approx(0.51585, abs=1e-5)
    # Linear gains (trec_eval): DCG@3 = 1/log2 3 + 2/2 = 1.63093, IDCG@3 = 2 + 0.63093 + 0.5
    # = 3.13093, nDCG@3 = 0.52091: the two gains differ on the same run.
    assert scores["ndcg@3"] == pytest.approx((1 / LOG3 + 1) / (2 + 1 / LOG3 + 1 / 2))
    assert scores["ndcg@3"] == pytest.approx(0.52091, abs=1e-5)
    # @10 adds c at rank 4 (1/log2 5 = 0.43068): DCG 2.56161; IDCG stays 4.13093 (three
    # labelled passages): 0.62011.
    assert scores["ndcg_burges@10"] == pytest.approx((1 / LOG3 + 3 / 2 + 1 / math.log2(5)) / (3 + 1 / LOG3 + 1 / 2))
    assert scores["ndcg_burges@10"] == pytest.approx(0.62011, abs=1e-5)


def test_ideal_ranking_holds_every_labelled_passage_not_only_the_retrieved():
    # d=2 is never retrieved; e=1 is at rank 1. DCG@10 = 1/1 = 1; the ideal puts d then e:
    # IDCG = 3/1 + 1/log2 3 = 3.63093, so nDCG@10 = 0.27541 (linear: 1 / (2 + 0.63093) = 0.38009).
    scores = evaluate_run(
        qrels([("q", "d", 2), ("q", "e", 1)]), ranked({"q": ["e", "y"]}), [ndcg(10), ndcg(10, "linear")]
    )
    assert scores["ndcg_burges@10"] == pytest.approx(1 / (3 + 1 / LOG3))
    assert scores["ndcg@10"] == pytest.approx(1 / (2 + 1 / LOG3))


def release_ndcg(labels: dict[str, int], ranking: list[str], k: int) -> float:
    """The QUIT release's nDCG (results/retriever/retriever.py), written out again: gains
    2^rel-1 at log2(rank+1), the ideal from every positive label, 0 without one."""

    def dcg(gains):
        return sum((2**g - 1) / math.log2(r + 1) for r, g in enumerate(gains, start=1))

    ideal = dcg(sorted((g for g in labels.values() if g > 0), reverse=True)[:k])
    return dcg([labels.get(p, 0) for p in ranking[:k]]) / ideal if ideal else 0.0


@pytest.mark.parametrize("k", [1, 3, 10, 100])
def test_ndcg_burges_is_the_release_formula_on_random_runs(k):
    rng = random.Random(k)
    rows, lists = [], {}
    for q in range(40):
        pool = [f"p{i}" for i in range(30)]
        rows += [(f"q{q}", p, rng.choice([0, 1, 1, 2])) for p in rng.sample(pool, rng.randint(1, 8))]
        lists[f"q{q}"] = rng.sample(pool, rng.randint(1, 20))
    frame = qrels(rows)
    labels = qrels_dict(frame)
    expected = {q: release_ndcg(labels[q], lists[q], k) for q in labels}
    got = per_question(frame, ranked(lists), ndcg(k))
    assert got == pytest.approx(expected)
    assert evaluate_run(frame, ranked(lists), [ndcg(k)])[ndcg(k)] == pytest.approx(
        sum(expected.values()) / len(expected)
    )


def test_hit_recall_and_mrr_count_labels_above_zero():
    # z (label 0) at rank 1 is no hit; b (label 1) at rank 2 is. Relevant: {a, b}.
    scores = evaluate_run(
        GRADED.filter(pl.col("passage_id") != "c"),
        ranked({"q1": ["z", "b"]}),
        ["hit_rate@1", "hit_rate@2", "recall@2", "mrr"],
    )
    assert scores == pytest.approx({"hit_rate@1": 0.0, "hit_rate@2": 1.0, "recall@2": 0.5, "mrr": 0.5})


def test_quit_tables_default_to_the_exponential_gain_and_name_it():
    from assets.eval.quit import assets as quit

    assert {"ndcg_burges@10", "ndcg_burges@100", "ndcg@10", "ndcg@100"} <= set(RETRIEVAL_METRICS)
    assert quit.TABLE_4[-2:] == ["ndcg_burges@10", "ndcg_burges@100"]
    assert quit.TABLE_7 == ["ndcg_burges@5", "ndcg_burges@10", "ndcg_burges@50", "ndcg_burges@100"]
    assert metric_label("ndcg_burges@10") == "ndcg_burges@10 (exp. gain 2^rel-1, as the QUIT release)"
    assert metric_label("ndcg@10") == "ndcg@10 (linear gain rel, as trec_eval)"
    assert metric_label("recall@5") == "recall@5"
    frame = pl.DataFrame({"reranker": ["upr"], **{m: [0.5] for m in quit.TABLE_7}})
    described = [
        c.description for c in reports.share_table(frame, "reranker", quit.TABLE_7, "a reranker").schema.columns
    ]
    assert sum("(exp. gain 2^rel-1, as the QUIT release)" in d for d in described) == 4
    assert described[1].startswith("ndcg_burges@5 (")
    with pytest.raises(ValueError, match="unknown nDCG gain 'log'"):
        ndcg(10, "log")


def test_quit_retrieval_metrics_asset_reports_the_release_ndcg():
    from assets.eval.quit import assets as quit

    questions = pl.DataFrame({"question_id": ["q1"], "question": ["?"], "split": ["test"]})
    run = GRADED_RUN.with_columns(pl.lit("bm25").alias("system"))
    output = quit.quit_retrieval_metrics(
        dg.build_asset_context(),
        config=quit.QuitReport(),
        quit_runs=run,
        benchmark_qrels=GRADED,
        benchmark_questions=questions,
        uncertainty=UncertaintySettings(),
    )
    row = output.value.filter(pl.col("split") == "all").row(0, named=True)
    # the hand example above at @10: exponential 0.62011; linear (1/log2 3 + 1 + 1/log2 5) /
    # (2 + 1/log2 3 + 1/2) = 2.06161 / 3.13093 = 0.65847
    assert row["ndcg_burges@10"] == pytest.approx(0.62011, abs=1e-5)
    assert row["ndcg@10"] == pytest.approx(0.65847, abs=1e-5)
    # Table 4 inline: a share per cell, each header's definition naming the gain or the relevance
    table_4 = output.metadata["table_4"]
    assert isinstance(table_4, dg.TableMetadataValue)
    assert [c.name for c in table_4.schema.columns] == ["retriever", *quit.TABLE_4]
    described = {c.name: c.description for c in table_4.schema.columns}
    assert described["ndcg_burges@10"].startswith("ndcg_burges@10 (exp. gain 2^rel-1, as the QUIT release)")
    assert "label > 0" in described["recall@5"]
    assert [r.data["retriever"] for r in table_4.records] == ["bm25"] and table_4.records[0].data[
        "ndcg_burges@10"
    ] == 0.6201
    assert [r.data for r in output.metadata["table_2"].records] == [
        {"retriever": "bm25", **{m: round(row[m], 4) for m in quit.TABLE_2}}
    ]
    assert "label > 0" in output.metadata["relevance"].value
    assert output.metadata["slice"].value == report_slice(
        "1 QUIT questions (test: 1); 1 retrievers (bm25), the Oracle left out; tables on the test split", None
    )
    assert "why_empty" not in output.metadata
    assert {"figure_4_left", "figure_4_right"} <= set(output.metadata)


def test_an_empty_quit_retrieval_report_says_why():
    from assets.eval.quit import assets as quit

    questions = pl.DataFrame({"question_id": ["q1"], "question": ["?"], "split": ["test"]})
    meta = quit.quit_retrieval_metrics(
        dg.build_asset_context(),
        config=quit.QuitReport(),
        quit_runs=GRADED_RUN.clear().with_columns(pl.lit("bm25").alias("system")),
        benchmark_qrels=GRADED,
        benchmark_questions=questions,
        uncertainty=UncertaintySettings(),
    ).metadata
    assert meta["table_2"].records == [] and [c.name for c in meta["table_2"].schema.columns][0] == "retriever"
    assert meta["why_empty"].value == (
        "table_2: no retriever's run other than the Oracle's is materialized; "
        "table_4: no retriever's run other than the Oracle's is materialized"
    )
    assert meta["slice"].value.endswith(report_slice("", None))


def test_checks_read_the_exponential_gain_columns_as_metrics():
    from checks.eval import shared as es

    assert es.RANX_METRIC.match("ndcg_burges@10") and es.RANX_METRIC.match("ndcg@10")


@pytest.mark.parametrize("name", ["ndcg@ten", "hit@5", "ndcg@0", "ndcg@10-l2", "NDCG@10", ""])
def test_a_metric_that_does_not_parse_is_named_with_the_valid_ones(name):
    with pytest.raises(ValueError, match=rf"metric '{name}' does not parse: use one of hit_rate, .*ndcg_burges"):
        evaluate_run(QRELS, RUN, ["mrr", name])
    with pytest.raises(ValueError, match="does not parse"):
        per_question(QRELS, RUN, name)


def test_metric_names_parse_into_name_and_cutoff():
    assert parse_metric("ndcg_burges@10") == ("ndcg_burges", 10)
    assert parse_metric("mrr") == ("mrr", 0)


def test_empty_qrels_or_a_run_without_their_questions_are_errors():
    with pytest.raises(ValueError, match="the qrels are empty"):
        evaluate_run(QRELS.clear(), RUN)
    with pytest.raises(ValueError, match=r"no passage for any of the 3 questions .*the run is empty"):
        evaluate_run(QRELS, RUN.clear())
    with pytest.raises(ValueError, match=r"no passage for any of the 3 questions .*\['other'\]"):
        per_question(QRELS, RUN.with_columns(pl.lit("other").alias("question_id")), "mrr")


def test_a_question_the_run_missed_scores_zero_and_counts():
    # q1 finds its passage at rank 1 (hit 1), q2 is absent from the run (0): mean 1/2.
    labels = qrels([("q1", "a", 1), ("q2", "b", 2)])
    run = ranked({"q1": ["a"]})
    assert evaluate_run(labels, run, ["hit_rate@1"]) == {"hit_rate@1": 0.5}
    assert per_question(labels, run, "hit_rate@1") == {"q1": 1.0, "q2": 0.0}


def test_two_passages_at_one_rank_are_an_error_naming_them():
    tied = ranked({"q1": ["a", "b", "c"]}).with_columns(pl.Series("rank", [1, 1, 2], dtype=pl.Int32))
    with pytest.raises(ValueError, match=r"1 question/rank pairs holding several passages \(q1/1: a, b\)"):
        evaluate_run(QRELS, tied)


def test_a_passage_ranked_twice_for_one_question_is_an_error_naming_it():
    twice = ranked({"q1": ["a", "b", "a"]})
    with pytest.raises(ValueError, match=r"question/passage pairs ranked more than once \(q1/a: 1, 3\)"):
        per_question(QRELS, twice, "mrr")
    with pytest.raises(ValueError, match=r"rank below 1 or missing \(e.g. question q1, passage a, rank 0\)"):
        run_dict(ranked({"q1": ["a"]}).with_columns(pl.lit(0, dtype=pl.Int32).alias("rank")))


def test_a_passage_labelled_twice_differently_is_an_error_naming_it():
    with pytest.raises(ValueError, match=r"conflicting labels \(q1/a: 1, 2\)"):
        evaluate_run(qrels([("q1", "a", 2), ("q1", "a", 1)]), RUN)
    # the same judgement twice is one judgement: q1's a (label 1) at rank 4 of RUN, MRR 1/4
    assert evaluate_run(qrels([("q1", "a", 1), ("q1", "a", 1)]), RUN, ["mrr"]) == {"mrr": 0.25}


def test_equal_scores_keep_the_run_order_where_trec_eval_would_sort_by_docid():
    import pytrec_eval

    # n (irrelevant) and r (relevant) share score 5.0 at ranks 1 and 2. The project scores the
    # rank order: r at rank 2, MRR 1/2. trec_eval re-sorts the raw scores and breaks the tie by
    # docid descending, "r" before "n": MRR 1.
    labels = qrels([("q1", "r", 1)])
    run = ranked({"q1": ["n", "r"]}, scores={"q1": [5.0, 5.0]})
    assert evaluate_run(labels, run, ["mrr"]) == {"mrr": 0.5}
    raw = {"q1": {"n": 5.0, "r": 5.0}}
    assert pytrec_eval.RelevanceEvaluator(qrels_dict(labels), {"recip_rank"}).evaluate(raw)["q1"]["recip_rank"] == 1.0
    # and a score order that contradicts the ranks (a reranked list keeps retrieval scores) is
    # still read by rank
    contradicting = ranked({"q1": ["n", "r"]}, scores={"q1": [1.0, 9.0]})
    assert evaluate_run(labels, contradicting, ["mrr"]) == {"mrr": 0.5}


def test_trec_run_format():
    text = trec_run(RUN.head(2))
    assert text.splitlines() == ["q1 Q0 x 1 9.000000 bm25", "q1 Q0 b 2 8.000000 bm25"]


def test_many_runs_in_one_evaluation_score_as_each_run_alone():
    qrels = pl.DataFrame(
        {"question_id": ["q1", "q1", "q2", "q3"], "passage_id": ["a", "b", "c", "d"], "label": [1, 1, 1, 1]}
    )
    rows = [
        ("bm25", "s1", "q1", "a", 1),
        ("bm25", "s1", "q1", "x", 2),
        ("bm25", "s1", "q2", "c", 1),
        ("bm25", "s2", "q1", "x", 1),
        ("bm25", "s2", "q1", "b", 2),  # the same question ids, other rankings
        ("dense", "s1", "q3", "d", 3),
        ("dense", "s1", "q3", "y", 1),
        ("dense", "s1", "q3", "z", 2),
    ]
    run = pl.DataFrame(rows, schema=["system", "strategy", "question_id", "passage_id", "rank"], orient="row")
    metrics = ["ndcg@10", "mrr"]
    together = grouped_per_question_metrics(qrels, run, ["system", "strategy"], metrics)
    assert together.columns == ["system", "strategy", "question_id", *metrics] and together.height == 3 * 3
    for (system, strategy), alone in run.group_by(["system", "strategy"]):
        mine = together.filter((pl.col("system") == system) & (pl.col("strategy") == strategy))
        for m in metrics:
            expected = per_question(qrels, alone.drop("system", "strategy"), m)
            assert dict(mine.select("question_id", m).iter_rows()) == pytest.approx(
                {q: expected.get(q, 0.0) for q in ("q1", "q2", "q3")}
            )
    row = together.filter((pl.col("strategy") == "s2") & (pl.col("question_id") == "q1")).row(0, named=True)
    assert row["mrr"] == 0.5 and row["ndcg@10"] == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    # evaluations of at most 2 lines (a group a time here) give the same table, and so do
    # groups longer than an evaluation holds (3 lines, 1 per evaluation: batches 0, 3 and 5)
    for lines in (2, 1):
        assert grouped_per_question_metrics(
            qrels, run, ["system", "strategy"], metrics, lines_per_evaluation=lines
        ).equals(together)
    # each group's own qrels: dense's q3 has no relevant passage of its own, so dense scores no question
    own = qrels.with_columns(pl.lit("bm25").alias("system")).join(
        run.select("system", "strategy").unique(), on="system"
    )
    mine = grouped_per_question_metrics(own, run, ["system", "strategy"], metrics)
    assert (
        mine.height == 6
        and set(mine["system"]) == {"bm25"}
        and mine.equals(together.filter(pl.col("system") == "bm25"))
    )


def test_quit_rerank_metrics_tables_5_and_7_render_inline_with_the_oracle_apart():
    from assets.eval.quit import assets as quit

    # "a" ranked first of the three relevant: Hit@1 1, MRR 1; the Oracle row goes to Table 7 only
    reranked = pl.concat(
        [
            ranked({"q1": ["a", "x", "b", "c"]}).with_columns(pl.lit("bm25+upr").alias("system")),
            GRADED_RUN.with_columns(pl.lit("oracle+upr").alias("system")),
        ]
    )
    meta = quit.quit_rerank_metrics(
        dg.build_asset_context(),
        config=quit.QuitReport(),
        quit_reranked_runs=reranked,
        benchmark_qrels=GRADED,
        benchmark_questions=Q1,
        uncertainty=UncertaintySettings(),
    ).metadata
    table_5, table_7 = meta["table_5"], meta["table_7"]
    assert isinstance(table_5, dg.TableMetadataValue) and isinstance(table_7, dg.TableMetadataValue)
    assert [r.data for r in table_5.records] == [
        {"system": "bm25+upr", "hit_rate@1": 1.0, "hit_rate@10": 1.0, "hit_rate@50": 1.0, "mrr": 1.0}
    ]
    assert [r.data["reranker"] for r in table_7.records] == ["upr"]
    assert table_7.records[0].data["ndcg_burges@10"] == 0.6201  # GRADED_RUN's hand value above
    assert all("exp. gain 2^rel-1" in c.description for c in table_7.schema.columns[1:])
    assert [r.data["system"] for r in meta["table_6"].records] == ["bm25+upr"]
    assert meta["slice"].value == report_slice(
        "1 QUIT questions reranked; 2 retriever+reranker runs (bm25+upr, oracle+upr); tables on the test split", None
    )
    # no Oracle run reranked: Table 7 empty, and why_empty says so
    alone = quit.quit_rerank_metrics(
        dg.build_asset_context(),
        config=quit.QuitReport(),
        quit_reranked_runs=reranked.filter(pl.col("system") == "bm25+upr"),
        benchmark_qrels=GRADED,
        benchmark_questions=Q1,
        uncertainty=UncertaintySettings(),
    ).metadata
    assert (
        alone["table_7"].records == []
        and alone["why_empty"].value == "table_7: no reranked run of the Oracle retriever is materialized"
    )


def test_table_8_is_inline_with_one_share_column_per_reader():
    from assets.eval import reports
    from assets.eval.quit import steps as readers

    answers = pl.DataFrame(
        {
            "question_id": ["q", "r", "q"],
            "reader": ["smollm2", "smollm2", "qwen"],
            "system": ["bm25"] * 3,
            "k": pl.Series([1, 1, 1], dtype=pl.Int32),
            "strategy": ["union_norm"] * 3,
            "em": [True, False, True],
            "em_raw": [False, False, True],
            "correct": [True, True, True],
        }
    )
    best = pl.DataFrame(
        {
            "question_id": ["q"],
            "reader": ["smollm2"],
            "system": ["optimal"],
            "em": [True],
            "em_raw": [True],
            "correct": [True],
        }
    )
    wide = reports.table_8(readers.em_table(answers, best), "em")
    from assets.common.metadata import report_table

    table = report_table(wide, reports.table_8_definitions(wide, "EM (normalized)"))
    assert isinstance(table, dg.TableMetadataValue)
    assert [r.data for r in table.records] == [
        {"retriever": "Optimal", "k": None, "strategy": "oracle", "smollm2": 1.0, "qwen": None},
        {"retriever": "bm25", "k": 1, "strategy": "union_norm", "smollm2": 0.5, "qwen": 1.0},
    ]
    assert {c.name: c.description for c in table.schema.columns}[
        "qwen"
    ] == "reader qwen: EM (normalized); a share of questions in [0, 1]"
