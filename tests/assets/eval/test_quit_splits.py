"""QUIT's headline tables score the test split, as the paper and its published evaluation
(index/test only) do: a two-split fixture where "all" and "test" differ, worked by hand."""

import dagster as dg
import polars as pl
import pytest

from assets.eval.quit import assets as quit
from assets.eval.runs import RUN_SCHEMA
from assets.eval.uncertainty import UncertaintySettings
from checks.eval import quit as eq

# q1 is a train question, q2 a test question; each has one relevant passage.
QUESTIONS = pl.DataFrame({"question_id": ["q1", "q2"], "question": ["?", "?"], "split": ["train", "test"]})
QRELS = pl.DataFrame({"question_id": ["q1", "q2"], "passage_id": ["a", "b"], "label": pl.Series([2, 1], dtype=pl.Int8)})


def run(system: str, lists: dict[str, list[str]]) -> pl.DataFrame:
    rows = [(q, p, rank, 1.0 / rank, system) for q, ps in lists.items() for rank, p in enumerate(ps, start=1)]
    return pl.DataFrame(rows, schema=RUN_SCHEMA, orient="row")


# bm25 finds q1's passage first and q2's second: MRR 1 on train, 0.5 on test, 0.75 over all.
RUN = run("bm25", {"q1": ["a", "x"], "q2": ["x", "b"]})


def cells(table: dg.TableMetadataValue, column: str) -> list:
    return [r.data[column] for r in table.records]


def test_retrieval_tables_score_the_test_split_and_the_table_keeps_every_split():
    out = quit.quit_retrieval_metrics(
        dg.build_asset_context(),
        config=quit.QuitReport(),
        quit_runs=RUN,
        benchmark_qrels=QRELS,
        benchmark_questions=QUESTIONS,
        uncertainty=UncertaintySettings(),
    )
    mrr = dict(out.value.select("split", "mrr").iter_rows())
    assert mrr == {"all": 0.75, "test": 0.5, "train": 1.0}
    assert dict(out.value.select("split", "questions").iter_rows()) == {"all": 2, "test": 1, "train": 1}
    assert cells(out.metadata["table_2"], "mrr") == [0.5] and cells(out.metadata["table_4"], "hit_rate@1") == [0.0]
    assert "on the test split" in out.metadata["table_2"].schema.columns[0].description
    assert out.metadata["split"].value == "test" and "tables on the test split" in out.metadata["slice"].value
    assert eq.quit_retrieval_metrics_ranges(out.value).passed
    # on request, dev: none here, and why_empty says so
    dev = quit.quit_retrieval_metrics(
        dg.build_asset_context(),
        config=quit.QuitReport(split="dev"),
        quit_runs=RUN,
        benchmark_qrels=QRELS,
        benchmark_questions=QUESTIONS,
        uncertainty=UncertaintySettings(),
    )
    assert dev.metadata["table_2"].records == [] and dev.metadata["why_empty"].value.startswith(
        "table_2: no dev question in the evaluated questions"
    )
    # and no interval: the columns are there, empty, as the leaderboard reads them
    assert dev.value["hit_rate@1 ci_low"].null_count() == dev.value["mrr tied_best"].null_count() == dev.value.height
    assert dev.metadata["table_2_uncertainty"].records == []


def test_a_run_without_a_passage_for_any_question_of_a_split_is_refused():
    # its zeros on the test split would read as a result, where the run missed the split
    with pytest.raises(ValueError, match="the run of bm25 has no passage for any of the 1 test questions with qrels"):
        quit.quit_retrieval_metrics(
            dg.build_asset_context(),
            config=quit.QuitReport(),
            quit_runs=RUN.filter(pl.col("question_id") == "q1"),
            benchmark_qrels=QRELS,
            benchmark_questions=QUESTIONS,
            uncertainty=UncertaintySettings(),
        )


@pytest.mark.parametrize("split", ["train", "all", "Test"])
def test_train_and_all_never_head_a_table(split):
    with pytest.raises(ValueError, match=f"QUIT report split '{split}': a headline table scores test or dev questions"):
        quit.quit_retrieval_metrics(
            dg.build_asset_context(),
            config=quit.QuitReport(split=split),
            quit_runs=RUN,
            benchmark_qrels=QRELS,
            benchmark_questions=QUESTIONS,
            uncertainty=UncertaintySettings(),
        )


def test_rerank_tables_score_the_test_split():
    reranked = pl.concat(
        [run("bm25+upr", {"q1": ["a", "x"], "q2": ["x", "b"]}), run("oracle+upr", {"q1": ["x", "a"], "q2": ["b"]})]
    )
    out = quit.quit_rerank_metrics(
        dg.build_asset_context(),
        config=quit.QuitReport(),
        quit_reranked_runs=reranked,
        benchmark_qrels=QRELS,
        benchmark_questions=QUESTIONS,
        uncertainty=UncertaintySettings(),
    )
    mrr = {(s, sp): v for s, sp, v in out.value.select("system", "split", "mrr").iter_rows()}
    assert mrr == {
        ("bm25+upr", "all"): 0.75,
        ("bm25+upr", "test"): 0.5,
        ("bm25+upr", "train"): 1.0,
        ("oracle+upr", "all"): 0.75,
        ("oracle+upr", "test"): 1.0,
        ("oracle+upr", "train"): 0.5,
    }
    assert cells(out.metadata["table_5"], "mrr") == [0.5] and cells(out.metadata["table_7"], "reranker") == ["upr"]
    # Table 7 on the test split: the Oracle's q2 passage first, nDCG 1
    assert cells(out.metadata["table_7"], "ndcg_burges@10") == [1.0]
    assert eq.quit_rerank_metrics_ranges(out.value).passed


def test_table_8_scores_the_test_split_with_its_optimal_bound():
    k1 = {"k": 1, "strategy": "union_norm", "system": "bm25"}
    answers = pl.DataFrame(
        [
            {"question_id": "q1", "reader": "smollm2", **k1, "em": True, "em_raw": True, "correct": True},
            {"question_id": "q2", "reader": "smollm2", **k1, "em": False, "em_raw": False, "correct": False},
            {
                "question_id": "q1",
                "reader": "smollm2",
                "system": "optimal",
                "k": None,
                "strategy": None,
                "em": True,
                "em_raw": True,
                "correct": True,
            },
            {
                "question_id": "q2",
                "reader": "smollm2",
                "system": "optimal",
                "k": None,
                "strategy": None,
                "em": False,
                "em_raw": False,
                "correct": True,
            },
        ],
        schema_overrides={"k": pl.Int32},
    )
    out = quit.quit_reader_metrics(
        dg.build_asset_context(),
        config=quit.QuitReport(),
        quit_reader_answers=answers,
        quit_runs=RUN,
        quit_reranked_runs=RUN.clear(),
        benchmark_corpus=pl.DataFrame(
            {"passage_id": ["a", "b", "x"], "num_hints": pl.Series([5, 3, 1], dtype=pl.Int8)}
        ),
        benchmark_qrels=QRELS,
        benchmark_questions=QUESTIONS,
        uncertainty=UncertaintySettings(),
    )
    em = {(s, sp): v for s, sp, v in out.value.select("system", "split", "em").iter_rows()}
    assert em == {
        ("Optimal", "all"): 0.5,
        ("bm25", "all"): 0.5,
        ("Optimal", "test"): 0.0,
        ("bm25", "test"): 0.0,
        ("Optimal", "train"): 1.0,
        ("bm25", "train"): 1.0,
    }
    assert cells(out.metadata["table_8"], "smollm2") == [0.0, 0.0]
    assert "on the test split" in out.metadata["table_8"].schema.columns[-1].description
    assert eq.quit_reader_metrics_ranges(out.value).passed


@pytest.fixture
def figures(monkeypatch):
    """The figures a report draws, by the start of their title, instead of their PNGs."""
    import matplotlib.pyplot as plt

    drawn = {}

    def keep(fig):
        drawn[fig.axes[0].get_title().split(":")[0]] = fig.axes[0]
        return dg.MetadataValue.md("")

    monkeypatch.setattr(quit, "png_markdown", keep)
    yield drawn
    plt.close("all")


def test_figures_4_and_6_are_drawn_on_the_tables_split(figures):
    corpus = pl.DataFrame({"passage_id": ["a", "b", "x"], "num_hints": pl.Series([5, 3, 1], dtype=pl.Int8)})
    quit.quit_retrieval_metrics(
        dg.build_asset_context(),
        config=quit.QuitReport(),
        quit_runs=RUN,
        benchmark_qrels=QRELS,
        benchmark_questions=QUESTIONS,
        uncertainty=UncertaintySettings(),
    )
    quit.quit_reader_metrics(
        dg.build_asset_context(),
        config=quit.QuitReport(),
        quit_reader_answers=pl.DataFrame(
            {
                "question_id": ["q2"],
                "reader": ["smollm2"],
                "system": ["bm25"],
                "k": pl.Series([1], dtype=pl.Int32),
                "strategy": ["union_norm"],
                "em": [False],
                "em_raw": [False],
                "correct": [False],
            }
        ),
        quit_runs=RUN,
        quit_reranked_runs=RUN.clear(),
        benchmark_corpus=corpus,
        benchmark_qrels=QRELS,
        benchmark_questions=QUESTIONS,
        uncertainty=UncertaintySettings(),
    )
    assert set(figures) == {"Figure 4 (left)", "Figure 4 (right)", "Figure 6"}
    assert all("test split" in ax.get_title() for ax in figures.values())
    # q2 alone: its passage is second, Hit@1 0 (0.5 over both questions)
    assert list(figures["Figure 4 (left)"].lines[0].get_ydata()[:2]) == [0.0, 1.0]
    assert len(figures["Figure 4 (right)"].collections[0].get_offsets()) == 1
    # bm25's top-5 of q2: x (1 hint) and b (3); q1's a (5 hints) and its label-2 passage left out
    bm25, label_2 = figures["Figure 6"].containers
    assert [bar.get_height() for bar in bm25] == [0.5, 0.0, 0.5, 0.0, 0.0]
    assert [bar.get_height() for bar in label_2] == [0.0] * 5


def test_a_report_without_an_all_row_or_with_an_unknown_split_fails_its_check():
    out = quit.quit_rerank_metrics(
        dg.build_asset_context(),
        config=quit.QuitReport(),
        quit_reranked_runs=run("bm25+upr", {"q1": ["a"], "q2": ["b"]}),
        benchmark_qrels=QRELS,
        benchmark_questions=QUESTIONS,
        uncertainty=UncertaintySettings(),
    ).value
    result = eq.quit_rerank_metrics_ranges(out.filter(pl.col("split") != "all"))
    assert not result.passed and "without an 'all' row" in str(result.metadata)
    result = eq.quit_rerank_metrics_ranges(out.with_columns(pl.col("split").replace("test", "holdout")))
    assert not result.passed and "holdout" in str(result.metadata)
