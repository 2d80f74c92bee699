"""Issue 48 on QUIT's reports: every headline number of Tables 2, 4, 5, 6, 7 and 8 with its
interval, and every system with its test against the best of its table. A fixture of 40 test
questions where one system is clearly better, a second one identical to it and a third
clearly worse: the identical one is marked with the best, the worse one is not; the means
stay what ranx gives each split."""

import dagster as dg
import polars as pl
import pytest

from assets.eval import metrics as eval_metrics
from assets.eval import reports
from assets.eval.quit import assets as quit
from assets.eval.runs import RUN_SCHEMA
from assets.eval.uncertainty import LONG_COLUMNS, PRINTED_NOTE, UncertaintySettings
from checks.eval import quit as eq

TEST = [f"t{i:02d}" for i in range(40)]
TRAIN = ["r0", "r1", "r2", "r3"]
QUESTIONS = pl.DataFrame(
    {"question_id": TEST + TRAIN, "question": "?", "split": ["test"] * len(TEST) + ["train"] * len(TRAIN)}
)
# one label-2 passage per question, "p<question>"
QRELS = pl.DataFrame(
    {
        "question_id": TEST + TRAIN,
        "passage_id": [f"p{q}" for q in TEST + TRAIN],
        "label": pl.Series([2] * 44, dtype=pl.Int8),
    }
)
# the rank of each question's relevant passage: first for 36 of the 40 test questions (good),
# first for 8 of them and 20th for the others (poor)
GOOD = {q: 3 if i % 10 == 0 else 1 for i, q in enumerate(TEST + TRAIN)}
POOR = {q: 1 if i % 5 == 0 else 20 for i, q in enumerate(TEST + TRAIN)}
INTERVAL = ("ci_low", "ci_high", "tied_best")


def run(system: str, ranks: dict[str, int]) -> pl.DataFrame:
    """20 passages per question, the relevant one at its rank, the others never relevant."""
    rows = []
    for q, at in ranks.items():
        passages = [f"x{q}_{i}" for i in range(19)]
        passages.insert(at - 1, f"p{q}")
        rows += [(q, p, rank, 1.0 / rank, system) for rank, p in enumerate(passages, start=1)]
    return pl.DataFrame(rows, schema=RUN_SCHEMA, orient="row")


def marked(frame: pl.DataFrame, key: str, metric: str) -> dict:
    test = frame.filter(pl.col("split") == "test")
    return dict(zip(test[key], test[f"{metric} tied_best"]))


def assert_intervals(frame: pl.DataFrame, metrics: list[str], filled: pl.Expr) -> None:
    """The metrics' interval columns, the interval filled where ``filled`` holds (holding the
    value) and every column null elsewhere."""
    for m in metrics:
        assert [f"{m} {c}" for c in INTERVAL] == [c for c in frame.columns if c.startswith(f"{m} ")]
        on, off = frame.filter(filled), frame.filter(~filled)
        assert on[f"{m} ci_low"].null_count() == 0 and on[f"{m} ci_high"].null_count() == 0
        assert ((on[f"{m} ci_low"] <= on[m] + 1e-12) & (on[m] <= on[f"{m} ci_high"] + 1e-12)).all()
        assert all(off[f"{m} {c}"].null_count() == off.height for c in INTERVAL)


def described(table: dg.TableMetadataValue) -> dict[str, str]:
    return {c.name: c.description for c in table.schema.columns}


RUNS = pl.concat([run("bm25", GOOD), run("minilm", GOOD), run("e5-small", POOR), run("oracle", GOOD)])


@pytest.fixture(scope="module")
def retrieval() -> dg.Output:
    return quit.quit_retrieval_metrics(
        dg.build_asset_context(),
        config=quit.QuitReport(),
        quit_runs=RUNS,
        benchmark_qrels=QRELS,
        benchmark_questions=QUESTIONS,
        uncertainty=UncertaintySettings(),
    )


def test_tables_2_and_4_carry_intervals_and_mark_the_retrievers_tied_with_the_best(retrieval):
    out, runs = retrieval, RUNS
    table = out.value
    # the means: ranx's, split by split, as before the intervals
    for (retriever, split), row in table.rows_by_key(["retriever", "split"], named=True, unique=True).items():
        ids = QUESTIONS.filter((pl.col("split") == split) | (pl.lit(split) == "all"))["question_id"]
        alone = eval_metrics.evaluate_run(
            QRELS.filter(pl.col("question_id").is_in(ids)), runs.filter(pl.col("system") == retriever)
        )
        assert {m: row[m] for m in eval_metrics.RETRIEVAL_METRICS} == pytest.approx(alone, abs=1e-12)
    assert marked(table, "retriever", "hit_rate@1") == {"bm25": True, "minilm": True, "e5-small": False}
    assert marked(table, "retriever", "mrr") == {"bm25": True, "minilm": True, "e5-small": False}
    assert table.filter(pl.col("split") == "test").sort("retriever")["hit_rate@1"].to_list() == [0.9, 0.2, 0.9]
    assert_intervals(table, quit.RETRIEVAL_UNCERTAINTY, pl.col("split") == "test")
    assert "ndcg@10 ci_low" not in table.columns  # not a column of the paper's tables
    assert eq.quit_retrieval_metrics_ranges(table).passed

    for name, metrics in (("table_2", quit.TABLE_2), ("table_4", quit.TABLE_4)):
        summary = out.metadata[f"{name}_uncertainty"]
        assert [c.name for c in summary.schema.columns] == ["retriever", *LONG_COLUMNS]
        assert {r.data["metric"] for r in summary.records} == set(metrics) and len(summary.records) == 3 * len(metrics)
        method = described(summary)["ci_low"]
        assert "95% interval: percentile bootstrap over questions (1,000 resamples, seed 0)" in method
        assert "Holm-Bonferroni" in method and "on the test split" in described(summary)["retriever"]
        assert f"intervals and tests in {name}_uncertainty: 95% interval" in described(out.metadata[name])["retriever"]
    # the summary's rows are the stored table's intervals
    e5 = next(
        r.data
        for r in out.metadata["table_2_uncertainty"].records
        if r.data["retriever"] == "e5-small" and r.data["metric"] == "mrr"
    )
    stored = table.filter((pl.col("retriever") == "e5-small") & (pl.col("split") == "test")).row(0, named=True)
    assert (e5["ci_low"], e5["ci_high"], e5["tied_best"]) == (
        round(stored["mrr ci_low"], 4),
        round(stored["mrr ci_high"], 4),
        False,
    )
    assert e5["items"] == 40 and e5["p"] < 0.05


def test_make_runs_printed_table_2_shows_the_intervals_and_marks(retrieval, tmp_path, capsys):
    from pipelines import summary
    from resources.storage import StorageResource

    (tmp_path / "eval").mkdir()
    retrieval.value.write_parquet(tmp_path / "eval" / "quit_retrieval_metrics.parquet")
    summary.print_quit_retrieval(StorageResource(root=str(tmp_path)), "Table 2:")
    out = capsys.readouterr().out
    stored = retrieval.value.filter(pl.col("split") == "test").rows_by_key("retriever", named=True, unique=True)
    lines = {r: next(line for line in out.splitlines() if f" {r} " in line) for r in ("bm25", "minilm", "e5-small")}
    for retriever, line in lines.items():
        row = stored[retriever]
        low, high = round(row["mrr ci_low"], 3), round(row["mrr ci_high"], 3)
        assert f"{round(row['mrr'], 3)} [{low}, {high}]" in line and " 40 " in line
    # the best and its identical twin marked on every metric, the worse retriever on none
    assert lines["bm25"].count("]*") == lines["minilm"].count("]*") == 4 and "*" not in lines["e5-small"]
    assert out.rstrip().endswith(PRINTED_NOTE)


def test_the_interval_follows_the_uncertainty_settings():
    runs = pl.concat([run("bm25", GOOD), run("e5-small", POOR)])

    def report(settings: UncertaintySettings) -> pl.DataFrame:
        return quit.quit_retrieval_metrics(
            dg.build_asset_context(),
            config=quit.QuitReport(),
            quit_runs=runs,
            benchmark_qrels=QRELS,
            benchmark_questions=QUESTIONS,
            uncertainty=settings,
        ).value.filter(pl.col("split") == "test")

    narrow, wide = report(UncertaintySettings(level=0.5)), report(UncertaintySettings(level=0.99))
    assert (narrow["mrr ci_high"] - narrow["mrr ci_low"] < wide["mrr ci_high"] - wide["mrr ci_low"]).all()
    assert narrow["mrr"].equals(wide["mrr"])


def test_tables_5_to_7_compare_the_reranked_runs_and_the_rerankers_of_the_oracle_apart():
    reranked = pl.concat(
        [
            run("bm25+upr", GOOD),
            run("minilm+upr", GOOD),
            run("e5-small+upr", POOR),
            run("oracle+upr", GOOD),
            run("oracle+pointwise", POOR),
        ]
    )
    out = quit.quit_rerank_metrics(
        dg.build_asset_context(),
        config=quit.QuitReport(),
        quit_reranked_runs=reranked,
        benchmark_qrels=QRELS,
        benchmark_questions=QUESTIONS,
        uncertainty=UncertaintySettings(),
    )
    table = out.value
    assert marked(table, "system", "hit_rate@1") == {
        "bm25+upr": True,
        "minilm+upr": True,
        "e5-small+upr": False,
        "oracle+upr": None,  # Table 7 is nDCG alone
        "oracle+pointwise": None,
    }
    # the rerankers of the Oracle's passages against each other, not against the retrieved runs
    assert marked(table, "system", "ndcg_burges@10") == {
        "bm25+upr": True,
        "minilm+upr": True,
        "e5-small+upr": False,
        "oracle+upr": True,
        "oracle+pointwise": False,
    }
    # Tables 5 and 6's metrics on the retrieved runs' rows, Table 7's on the Oracle's, nDCG@10 and @100 on both
    test, oracle, table_7 = pl.col("split") == "test", pl.col("oracle"), set(quit.TABLE_7)
    assert_intervals(table, [m for m in quit.RERANKED_UNCERTAINTY if m not in table_7], test & ~oracle)
    assert_intervals(table, [m for m in quit.TABLE_7 if m not in quit.RERANKED_UNCERTAINTY], test & oracle)
    assert_intervals(table, ["ndcg_burges@10", "ndcg_burges@100"], test)
    assert eq.quit_rerank_metrics_ranges(table).passed

    for name, key, metrics in (
        ("table_5", "system", quit.TABLE_5),
        ("table_6", "system", quit.TABLE_4),
        ("table_7", "reranker", quit.TABLE_7),
    ):
        summary = out.metadata[f"{name}_uncertainty"]
        assert [c.name for c in summary.schema.columns] == [key, *LONG_COLUMNS]
        assert {r.data["metric"] for r in summary.records} == set(metrics)
        assert "percentile bootstrap over questions" in described(summary)["ci_low"]
        assert f"in {name}_uncertainty: 95% interval" in described(out.metadata[name])[key]
    assert {r.data["reranker"] for r in out.metadata["table_7_uncertainty"].records} == {"upr", "pointwise"}


def answers(reader: str, system: str, k: int | None, right: list[str], questions: list[str] = TEST) -> list[dict]:
    """One reader's answers of one setting: an exact match on the ``right`` questions."""
    return [
        {
            "question_id": q,
            "reader": reader,
            "system": system,
            "k": k,
            "strategy": None if system == "optimal" else "union_norm",
            "em": q in right,
            "em_raw": q in right,
            "correct": q in right,
        }
        for q in questions
    ]


def test_table_8_compares_each_readers_settings_with_its_best_and_leaves_the_bounds_apart():
    good = [q for i, q in enumerate(TEST) if i % 10]
    poor = [q for i, q in enumerate(TEST) if i % 5 == 0]
    rows = [
        *answers("smollm2", "bm25", 1, good),
        *answers("smollm2", "minilm", 1, good),
        *answers("smollm2", "e5-small", 1, poor),
        *answers("smollm2", "oracle+upr", 1, TEST),  # over the Oracle's passages: compared apart
        *answers("smollm2", "optimal", None, TEST, TEST + TRAIN),
        *answers("smollm2", "bm25", 1, TRAIN, TRAIN),
        # another reader, worse everywhere: its best setting is marked, within its own rows
        *answers("qwen", "bm25", 1, poor),
        *answers("qwen", "minilm", 1, poor[:2]),
        *answers("qwen", "optimal", None, poor, TEST + TRAIN),
    ]
    out = quit.quit_reader_metrics(
        dg.build_asset_context(),
        config=quit.QuitReport(),
        quit_reader_answers=pl.DataFrame(rows, schema_overrides={"k": pl.Int32}),
        quit_runs=run("bm25", GOOD),
        quit_reranked_runs=run("bm25", GOOD).clear(),
        benchmark_corpus=pl.DataFrame(
            {"passage_id": [f"p{q}" for q in TEST], "num_hints": pl.Series([3] * len(TEST), dtype=pl.Int8)}
        ),
        benchmark_qrels=QRELS,
        benchmark_questions=QUESTIONS,
        uncertainty=UncertaintySettings(),
    )
    table = out.value.filter(pl.col("split") == "test")
    tied = {(r, s): t for r, s, t in table.select("reader", "system", "em tied_best").iter_rows()}
    assert tied == {
        ("smollm2", "bm25"): True,
        ("smollm2", "minilm"): True,
        ("smollm2", "e5-small"): False,
        ("smollm2", "oracle+upr"): True,
        ("smollm2", "Optimal"): None,  # a bound, compared with nothing
        ("qwen", "bm25"): True,
        ("qwen", "minilm"): False,
        ("qwen", "Optimal"): None,
    }
    assert_intervals(table, quit.READER_UNCERTAINTY, pl.lit(True))
    assert_intervals(out.value.filter(pl.col("split") != "test"), quit.READER_UNCERTAINTY, pl.lit(False))
    optimal = table.filter((pl.col("system") == "Optimal") & (pl.col("reader") == "qwen")).row(0, named=True)
    assert optimal["em"] == 0.2 and optimal["em ci_low"] < 0.2 < optimal["em ci_high"]
    assert eq.quit_reader_metrics_ranges(out.value).passed

    for name, metric in (("table_8", "em"), ("table_8_em_raw", "em_raw")):
        summary = out.metadata[f"{name}_uncertainty"]
        assert [c.name for c in summary.schema.columns] == ["retriever", "k", "strategy", "reader", *LONG_COLUMNS]
        assert {r.data["metric"] for r in summary.records} == {metric} and len(summary.records) == 8
        assert "percentile bootstrap over questions" in described(summary)["ci_low"]
        assert "intervals and tests in table_8_uncertainty: 95% interval" in described(out.metadata[name])["qwen"]


def summary_rows(keys: dict, metrics: dict[str, float]) -> list[dict]:
    """A summary's rows of one system: each metric's value with an interval around it."""
    return [
        {
            **keys,
            "metric": m,
            "value": v,
            "ci_low": v - 0.1,
            "ci_high": v + 0.1,
            "items": 40,
            "p": None,
            "tied_best": True,
        }
        for m, v in metrics.items()
    ]


def test_headline_tables_come_first_then_each_ones_intervals_of_its_own_metrics():
    headline = pl.DataFrame({"retriever": ["bm25", "e5"], "mrr": [0.5, 0.25], "hit_rate@1": [0.5, 0.0], "x": [1, 2]})
    long = pl.DataFrame(
        [
            *summary_rows({"retriever": "bm25"}, {"mrr": 0.5, "hit_rate@1": 0.5}),
            *summary_rows({"retriever": "e5"}, {"mrr": 0.25, "hit_rate@1": 0.0}),
        ],
        schema={"retriever": pl.String, **LONG_COLUMNS},
    )
    tables = reports.headline_tables(
        headline, long, "retriever", "a retriever", {"a": ["mrr"], "b": ["hit_rate@1", "mrr"]}, UncertaintySettings()
    )
    assert list(tables) == ["a", "b", "a_uncertainty", "b_uncertainty"]
    assert [c.name for c in tables["b"].schema.columns] == ["retriever", "hit_rate@1", "mrr"]
    assert [r.data["mrr"] for r in tables["a"].records] == [0.5, 0.25]
    assert described(tables["b"])["retriever"].startswith("a retriever; intervals and tests in b_uncertainty: 95%")
    assert [c.name for c in tables["a_uncertainty"].schema.columns] == ["retriever", *LONG_COLUMNS]
    assert [(r.data["retriever"], r.data["metric"]) for r in tables["a_uncertainty"].records] == [
        ("bm25", "mrr"),
        ("e5", "mrr"),
    ]
    assert (
        len(tables["b_uncertainty"].records) == 4 and described(tables["b_uncertainty"])["retriever"] == "a retriever"
    )


def test_table_8_tables_pivot_each_exact_match_and_key_its_intervals_by_retriever():
    shares = {"em": 0.5, "em_raw": 0.25, "judge": 0.75}
    headline = pl.DataFrame(
        [
            {"system": "bm25", "k": 1, "strategy": "union_norm", "reader": r, **shares, "em": e}
            for r, e in (("smollm2", 0.5), ("qwen", 0.125))
        ],
        schema_overrides={"k": pl.Int32},
    )
    keys = {"system": "bm25", "k": 1, "strategy": "union_norm"}
    long = pl.DataFrame(
        [*summary_rows({**keys, "reader": "smollm2"}, shares), *summary_rows({**keys, "reader": "qwen"}, shares)],
        schema={"system": pl.String, "k": pl.Int32, "strategy": pl.String, "reader": pl.String, **LONG_COLUMNS},
    )
    tables = reports.table_8_tables(headline, long, "test", UncertaintySettings())
    assert list(tables) == ["table_8", "table_8_em_raw", "table_8_uncertainty", "table_8_em_raw_uncertainty"]
    assert [(r.data["smollm2"], r.data["qwen"]) for r in tables["table_8"].records] == [(0.5, 0.125)]
    assert [(r.data["smollm2"], r.data["qwen"]) for r in tables["table_8_em_raw"].records] == [(0.25, 0.25)]
    assert described(tables["table_8_em_raw"])["qwen"].startswith(
        f"reader qwen: {reports.EM_RAW_DEFINITION}; on the test"
    )
    for name, metric in (("table_8_uncertainty", "em"), ("table_8_em_raw_uncertainty", "em_raw")):
        assert [c.name for c in tables[name].schema.columns] == ["retriever", "k", "strategy", "reader", *LONG_COLUMNS]
        assert {r.data["metric"] for r in tables[name].records} == {metric} and len(tables[name].records) == 2
