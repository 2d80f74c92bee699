"""QUIT's fine-tuning report (Tables 10-12) against hand-computed values, and its checks
against broken tables."""

import dagster as dg
import polars as pl
import pytest

from assets.eval.quit.finetune import report as fr
from assets.eval.quit.steps import ANSWER_SCHEMA
from assets.eval.runs import RUN_SCHEMA
from checks.eval.finetune import quit_finetune_report_held_out

# ranx's metrics are compiled once, in the background (tests.background)
pytestmark = pytest.mark.usefixtures("compiled_metrics")

QUESTIONS = pl.DataFrame({"question_id": ["q1", "q2", "q3"], "split": ["train", "dev", "test"]})
QRELS = pl.DataFrame(
    {"question_id": ["q1", "q2", "q2", "q3"], "passage_id": ["p1", "p2a", "p2b", "p3a"], "label": [2, 2, 1, 2]},
    schema={"question_id": pl.String, "passage_id": pl.String, "label": pl.Int64},
)


def run(system: str, lists: dict[str, list[str]]) -> pl.DataFrame:
    rows = [(q, p, i + 1, float(10 - i), system) for q, ps in lists.items() for i, p in enumerate(ps)]
    return pl.DataFrame(rows, schema=RUN_SCHEMA, orient="row")


RUNS = pl.concat(
    [
        # the vanilla retriever finds q3's passage second; the fine-tuned one first
        run("bm25", {"q1": ["p1"], "q2": ["p2b", "x", "p2a"], "q3": ["x", "p3a"]}),
        run("ft-dpr-minilm", {"q1": ["p1"], "q2": ["p2a", "p2b"], "q3": ["p3a", "x"]}),
        run("oracle", {"q1": ["p1"], "q2": ["p2b", "p2a"], "q3": ["p3a"]}),
    ]
)
RERANKED = run("oracle+ft-ce-minilm", {"q1": ["p1"], "q2": ["p2b", "p2a"], "q3": ["p3a"]})


def answers() -> pl.DataFrame:
    def row(q, system, k, strategy, em):
        return {
            "question_id": q,
            "reader": "smollm2",
            "system": system,
            "k": k,
            "strategy": strategy,
            "context": "",
            "raw": "",
            "answer": "",
            "error": None,
            "em": em,
            "em_raw": em,
            "correct": em,
        }

    rows = [
        row("q1", "bm25", 1, "concat", True),  # a train question: never counted
        row("q2", "bm25", 1, "concat", False),
        row("q2", "bm25", 3, "concat", True),
        row("q3", "bm25", 1, "concat", False),
        row("q3", "bm25", 3, "concat", False),
        row("q2", "optimal", None, "oracle", True),
    ]
    return pl.DataFrame(rows, schema=ANSWER_SCHEMA)


TRAINED = {"ft-dpr-minilm": fr.Trained("dense", 10), "ft-ce-minilm": fr.Trained("cross_encoder", 10)}


def report() -> pl.DataFrame:
    return fr.report(RUNS, RERANKED, answers(), QRELS, QUESTIONS, TRAINED, {"oracle"})


def value(frame: pl.DataFrame, table: str, system: str, split: str, metric: str) -> float:
    return frame.filter(
        (pl.col("table") == table)
        & (pl.col("system") == system)
        & (pl.col("split") == split)
        & (pl.col("metric") == metric)
    )["value"].item()


def test_only_held_out_questions_are_scored_each_split_alone():
    frame = report()
    assert set(frame["split"]) == {"dev", "test"} and (frame["questions"] == 1).all()
    # the Oracle is an upper bound, not a retriever
    assert set(frame.filter(pl.col("table") == "retrieval")["system"]) == {"bm25", "ft-dpr-minilm"}


def test_retrieval_metrics_by_hand():
    frame = report()
    # test: q3's one relevant passage at rank 2 for bm25, rank 1 for the fine-tuned model
    assert value(frame, "retrieval", "bm25", "test", "hit_rate@1") == 0.0
    assert value(frame, "retrieval", "bm25", "test", "mrr") == pytest.approx(0.5)
    assert value(frame, "retrieval", "ft-dpr-minilm", "test", "mrr") == pytest.approx(1.0)
    # dev: bm25 ranks the label-1 passage first and the label-2 one third; exponential gain
    ideal = 3 + 1 / 1.5849625007211562
    assert value(frame, "retrieval", "bm25", "dev", "ndcg_burges@10") == pytest.approx((1 + 3 / 2) / ideal)
    assert value(frame, "retrieval", "bm25", "dev", "recall@5") == pytest.approx(1.0)
    flags = dict(frame.filter(pl.col("table") == "retrieval").select("system", "fine_tuned").unique().iter_rows())
    assert flags == {"bm25": False, "ft-dpr-minilm": True}


def test_reranking_is_table_12s_ndcg_and_a_trained_reranker_marks_its_run():
    frame = report()
    rows = frame.filter(pl.col("table") == "reranking")
    assert set(rows["metric"]) == set(fr.RERANKING_METRICS) and rows["fine_tuned"].all()
    # dev: label 1 first, label 2 second (gains 1 and 3) against the ideal 3 then 1
    ideal = 3 + 1 / 1.5849625007211562
    assert value(frame, "reranking", "oracle+ft-ce-minilm", "dev", "ndcg_burges@1") == pytest.approx(1 / 3)
    assert value(frame, "reranking", "oracle+ft-ce-minilm", "dev", "ndcg_burges@5") == pytest.approx(
        (1 + 3 / 1.5849625007211562) / ideal
    )


def test_the_reader_row_is_the_best_setting_on_the_held_out_questions():
    rows = report().filter(pl.col("table") == "reader")
    bm25 = rows.filter((pl.col("system") == "bm25") & (pl.col("metric") == "em"))
    assert dict(bm25.select("split", "value").iter_rows()) == {"dev": 1.0, "test": 0.0}
    assert bm25.filter(pl.col("split") == "dev")["setting"].item() == "top-3 concat"
    # ties on EM (test: 0 at both k) go to the smaller k
    assert bm25.filter(pl.col("split") == "test")["setting"].item() == "top-1 concat"
    assert rows.filter(pl.col("system") == "Optimal")["setting"].unique().to_list() == ["every relevant passage"]


def test_no_held_out_question_gives_an_empty_report_that_says_so():
    frame = fr.report(
        RUNS, RERANKED, answers(), QRELS, QUESTIONS.with_columns(pl.lit("train").alias("split")), TRAINED, {"oracle"}
    )
    empty = fr.inline(frame, fr.RETRIEVAL, fr.RETRIEVAL_METRICS, "system")
    assert (
        frame.is_empty()
        and empty.records == []
        and [c.name for c in empty.schema.columns][:3] == ["system", "split", "fine_tuned"]
    )
    table = fr.inline(report(), fr.RETRIEVAL, fr.RETRIEVAL_METRICS, "system")
    assert isinstance(table, dg.TableMetadataValue)
    assert ("ft-dpr-minilm", True) in {(r.data["system"], r.data["fine_tuned"]) for r in table.records}
    assert all(0.0 <= r.data["mrr"] <= 1.0 for r in table.records)  # shares, not percent


@pytest.mark.parametrize(
    "broken, why",
    [
        (
            lambda f: f.with_columns(
                pl.when(pl.col("split") == "dev").then(pl.lit("train")).otherwise("split").alias("split")
            ),
            "a train question scored",
        ),
        (lambda f: f.with_columns(pl.lit(3, pl.Int64).alias("questions")), "counts other than the split's"),
        (lambda f: f.with_columns(pl.lit(1.5).alias("value")), "a value above 1"),
        (
            lambda f: f.with_columns(
                pl.when(pl.col("table") == "reranking").then(pl.lit("mrr")).otherwise("metric").alias("metric")
            ),
            "a metric the table does not have",
        ),
        (lambda f: f.drop("split"), "a missing column"),
    ],
)
def test_the_held_out_check_fails_a_broken_report(broken, why):
    assert quit_finetune_report_held_out(report(), QUESTIONS).passed
    assert not quit_finetune_report_held_out(broken(report()), QUESTIONS).passed, why
