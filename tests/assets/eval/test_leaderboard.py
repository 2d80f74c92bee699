"""The leaderboard: one row per system over the stored report tables, with the papers'
headline metrics, from small report tables whose expected rows are worked out by hand."""

import math

import dagster as dg
import polars as pl
import pytest

from assets.eval import leaderboard as lb
from assets.eval.recor import rules as conversational
from assets.eval.uncertainty import UncertaintySettings
from resources.storage import table_uri, write_parquet
from tests.assets.eval.test_byo_systems import (  # noqa: F401 (storage and with_tfidf are fixtures)
    QUIT_CORPUS,
    QUIT_QRELS,
    QUIT_QUESTIONS,
    RECOR_CORPUS,
    recor_context,
    recor_queries,
    storage,
    with_tfidf,
)
from tests.assets.eval.test_conversational import scored, turns

# ranx compiles its metrics once a session, in the background (tests.background)
pytestmark = pytest.mark.usefixtures("compiled_metrics")

NDCG = "ndcg_burges@10"


def quit_metrics(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        rows, schema=["retriever", "split", "hit_rate@1", "hit_rate@5", "hit_rate@10", NDCG], orient="row"
    )


# The leaderboard is on QUIT's test split: bm25's all and train rows, the reranked run's and
# the reader's all rows (higher) must not be read.
QUIT_RETRIEVAL = quit_metrics(
    [
        ("bm25", "test", 0.25, 0.5, 0.75, 0.4),
        ("bm25", "all", 0.9, 0.9, 0.9, 0.9),
        ("bm25", "train", 0.95, 0.95, 0.95, 0.95),
        ("minilm", "test", 0.5, 0.75, 1.0, 0.6),
    ]
)
QUIT_RERANK = pl.DataFrame(
    [
        ("bm25+rankgpt", "bm25", "rankgpt", False, "test", 0.5, 0.75, 0.75, 0.55),
        ("bm25+rankgpt", "bm25", "rankgpt", False, "all", 0.9, 0.9, 0.9, 0.9),
        ("oracle+rankgpt", "oracle", "rankgpt", True, "test", 1.0, 1.0, 1.0, 0.95),
    ],
    schema=["system", "retriever", "reranker", "oracle", "split", "hit_rate@1", "hit_rate@5", "hit_rate@10", NDCG],
    orient="row",
)
# smollm2's best real setting ties bm25 top-5 union_freq with bm25+rankgpt top-3 at 0.5: the
# first by name wins. Optimal and the Oracle retriever's runs score higher and are left out.
QUIT_READER = pl.DataFrame(
    [
        ("Optimal", None, "oracle", "smollm2", 0.9),
        ("bm25", 1, "union_norm", "smollm2", 0.25),
        ("bm25+rankgpt", 3, "union_norm", "smollm2", 0.5),
        ("bm25", 5, "union_freq", "smollm2", 0.5),
        ("oracle", 5, "union_freq", "smollm2", 0.8),
        ("oracle+rankgpt", 1, "union_norm", "smollm2", 0.85),
    ],
    schema={"system": pl.String, "k": pl.Int32, "strategy": pl.String, "reader": pl.String, "em": pl.Float64},
    orient="row",
).with_columns(pl.lit("test").alias("split"))
QUIT_READER = pl.concat(
    [
        QUIT_READER,
        QUIT_READER.with_columns(
            pl.lit("all").alias("split"), pl.when(pl.col("system") == "bm25").then(0.99).otherwise("em").alias("em")
        ),
    ]
)
# bm25, baseline, turn first: law (1 + 0.5 + 0) / 3 = 0.5, biology 1, macro 0.75 (conversation
# first: law (0.75 + 0) / 2 = 0.375, macro 0.6875; the plain mean of the turns 0.625).
RECOR_RETRIEVAL = pl.concat(
    [
        scored({("law", "c1"): [1.0, 0.5], ("law", "c2"): [0.0], ("biology", "c3"): [1.0]}),
        scored({("law", "c1"): [0.2, 0.2], ("law", "c2"): [0.2], ("biology", "c3"): [0.2]}, strategy="history"),
        scored({("law", "c1"): [0.0, 0.0], ("law", "c2"): [0.0], ("biology", "c3"): [0.5]}, retriever="e5-small"),
    ]
)
# Table 2 holds shares, which the leaderboard takes as they are.
WIKIPROFILE = pl.DataFrame(
    {"model": ["gemma3-4b", "smollm2"], "encodes": [0.8, 0.5], "knows": [0.4, math.nan], "knows_thinking": [0.6, None]}
)
REPORTS = {
    lb.QUIT_RETRIEVAL: QUIT_RETRIEVAL,
    lb.QUIT_RERANK: QUIT_RERANK,
    lb.QUIT_READER: QUIT_READER,
    lb.RECOR_RETRIEVAL: RECOR_RETRIEVAL,
    lb.WIKIPROFILE_REPORT: WIKIPROFILE,
}


def scores(table: pl.DataFrame, system: str) -> dict:
    """A row's non-null values, without the intervals' ends (their own test)."""
    row = table.filter(pl.col("system") == system).row(0, named=True)
    return {k: v for k, v in row.items() if v is not None and not k.endswith(lb.INTERVAL)}


def test_every_cell_carries_its_reports_interval():
    """Issue 48: a score's interval is the one its report stored (QUIT, WikiProfile, a
    dataset's), or for RECOR the leaderboard's own from the per-turn scores, each domain's
    turns resampled on their own; a report stored before the intervals leaves them blank."""
    quit = QUIT_RETRIEVAL.with_columns(
        (pl.col("hit_rate@1") - 0.1).alias("hit_rate@1 ci_low"),
        (pl.col("hit_rate@1") + 0.1).alias("hit_rate@1 ci_high"),
    )
    table = lb.leaderboard_table({**REPORTS, lb.QUIT_RETRIEVAL: quit}, oracles=["oracle"])
    bm25 = table.filter(pl.col("system") == "bm25").row(0, named=True)
    assert bm25["quit/hit_rate@1 ci_low"] == pytest.approx(0.15) and bm25["quit/hit_rate@1 ci_high"] == pytest.approx(
        0.35
    )
    assert bm25["quit/hit_rate@5 ci_low"] is None  # not stored with one
    recor = "recor/ndcg@10/baseline"
    assert bm25[f"{recor} ci_low"] <= bm25[recor] <= bm25[f"{recor} ci_high"]
    from checks.eval.leaderboard import leaderboard_schema

    assert leaderboard_schema(table).passed
    broken = table.with_columns(
        pl.when(pl.col("system") == "bm25").then(0.9).otherwise(pl.col(f"{recor} ci_low")).alias(f"{recor} ci_low")
    )
    assert not leaderboard_schema(broken).passed
    intervals = lb.leaderboard_intervals(table)
    assert intervals.filter((pl.col("system") == "bm25") & (pl.col("score") == "quit/hit_rate@1"))[
        "ci_low"
    ].to_list() == [pytest.approx(0.15)]


def test_one_row_per_system_with_each_benchmark_headline_metrics():
    table = lb.leaderboard_table(REPORTS, oracles=["oracle"])
    assert table.schema == pl.Schema(lb.SCHEMA)
    # retrievers, the reranked run, the reader (also a subject), the subject alone
    assert table["system"].to_list() == ["bm25", "e5-small", "minilm", "bm25+rankgpt", "smollm2", "gemma3-4b"]
    assert scores(table, "bm25") == pytest.approx(
        {
            "system": "bm25",
            "kind": "retriever",
            "benchmarks": "quit, recor",
            "quit/hit_rate@1": 0.25,
            "quit/hit_rate@5": 0.5,
            "quit/hit_rate@10": 0.75,
            f"quit/{NDCG}": 0.4,
            "recor/ndcg@10/baseline": 0.75,
            "recor/ndcg@10/history": 0.2,
        }
    )
    assert scores(table, "e5-small") == pytest.approx(
        {"system": "e5-small", "kind": "retriever", "benchmarks": "recor", "recor/ndcg@10/baseline": (0.0 + 0.5) / 2}
    )
    assert scores(table, "bm25+rankgpt") == pytest.approx(
        {
            "system": "bm25+rankgpt",
            "kind": "retriever+reranker",
            "benchmarks": "quit",
            "quit/hit_rate@1": 0.5,
            "quit/hit_rate@5": 0.75,
            "quit/hit_rate@10": 0.75,
            f"quit/{NDCG}": 0.55,
        }
    )
    # a share over no facts (NaN) is left empty like a missing thinking run
    assert scores(table, "smollm2") == pytest.approx(
        {
            "system": "smollm2",
            "kind": "reader LLM, subject LLM",
            "benchmarks": "quit, wikiprofile",
            "quit/em": 0.5,
            "quit/em_setting": "bm25, top-5, union_freq",
            "wikiprofile/encodes": 0.5,
        }
    )
    assert scores(table, "gemma3-4b") == pytest.approx(
        {
            "system": "gemma3-4b",
            "kind": "subject LLM",
            "benchmarks": "wikiprofile",
            "wikiprofile/encodes": 0.8,
            "wikiprofile/knows": 0.4,
            "wikiprofile/knows_thinking": 0.6,
        }
    )
    assert not table["system"].is_in(["oracle", "oracle+rankgpt", "Optimal"]).any()


def test_recor_names_its_averaging():
    first = lb.leaderboard_table({lb.RECOR_RETRIEVAL: RECOR_RETRIEVAL}, averaging=conversational.CONVERSATION_FIRST)
    assert scores(first, "bm25")["recor/ndcg@10/baseline"] == pytest.approx(0.6875)
    assert "turn -> domain -> macro over domains" in lb.definitions()["recor/ndcg@10/baseline"]
    assert "exp. gain 2^rel-1" in lb.definitions()[f"quit/{NDCG}"]
    assert set(lb.definitions()) == set(lb.SCHEMA)
    # WikiProfile's definitions are Table 2's, shares with nothing divided
    assert lb.definitions()["wikiprofile/knows"].startswith("K0 (all knowledge questions")
    assert not [text for text in lb.definitions().values() if "divided by 100" in text or "%" in text]


def test_reports_not_evaluated_add_nothing():
    assert lb.leaderboard_table({}).schema == pl.Schema(lb.SCHEMA) and lb.leaderboard_table({}).height == 0
    only = lb.leaderboard_table({lb.WIKIPROFILE_REPORT: WIKIPROFILE, lb.QUIT_RERANK: QUIT_RERANK.clear()})
    assert only["system"].to_list() == ["gemma3-4b", "smollm2"] and set(only["benchmarks"]) == {"wikiprofile"}


def store(at, reports: dict) -> None:
    """The report tables where the IO manager would have written them."""
    for key, frame in reports.items():
        write_parquet(table_uri(at.root, key.path), frame)


def test_the_asset_reads_what_is_materialized_and_names_the_rest(storage):  # noqa: F811
    from checks.eval.leaderboard import leaderboard_checks
    from resources.storage import parquet_io_manager

    store(storage, {k: v for k, v in REPORTS.items() if k != lb.WIKIPROFILE_REPORT})
    result = dg.materialize(
        [lb.leaderboard, *leaderboard_checks],
        resources={"storage": storage, "io_manager": parquet_io_manager, "uncertainty": UncertaintySettings()},
    )
    assert all(check.passed for check in result.get_asset_check_evaluations())
    table = result.output_for_node("eval__leaderboard")
    meta = result.asset_materializations_for_node("eval__leaderboard")[0].metadata
    assert table["system"].to_list() == ["bm25", "e5-small", "minilm", "bm25+rankgpt", "smollm2"]
    assert (
        meta["not_evaluated"].value == "eval/wikiprofile_profile_report"
        and meta["benchmarks_not_evaluated"].value == "wikiprofile"
    )
    assert meta["benchmarks_evaluated"].value == "quit, recor"
    assert pl.read_csv(meta["csv"].path, schema=lb.SCHEMA).equals(table)
    assert meta["parquet"].path == meta["path"].path and pl.read_parquet(meta["parquet"].path).equals(table)
    # rendered inline as a table of shares, each header's definition its description, and no
    # column for what nobody has (WikiProfile here)
    board = meta["leaderboard"]
    assert isinstance(board, dg.TableMetadataValue)
    described = {c.name: c.description for c in board.schema.columns}
    assert "(exp. gain 2^rel-1, as the QUIT release)" in described["quit/ndcg_burges@10"]
    recor = [c for c in described if c.startswith("recor/")]
    assert recor and all("turn -> domain -> macro over domains (paper, section 4)" in described[c] for c in recor)
    assert not any(c.startswith("wikiprofile/") for c in described)
    assert [r.data["system"] for r in board.records] == table["system"].to_list()
    assert {k: v for k, v in board.records[0].data.items() if k.startswith("quit/")} == {
        "quit/hit_rate@1": 0.25,
        "quit/hit_rate@5": 0.5,
        "quit/hit_rate@10": 0.75,
        "quit/ndcg_burges@10": 0.4,
        "quit/em": None,
        "quit/em_setting": None,
    }  # a retriever reads nothing: blank, not 0
    assert meta["recor_averaging"].value == "turn -> domain -> macro over domains (paper, section 4)"
    assert meta["leaderboard_plot"].value.startswith("![plot](data:image/png;base64,")
    assert "recor/ndcg@10/last_turn" in meta["definitions"].value


def test_an_entry_point_retriever_evaluated_on_quit_and_recor_is_one_leaderboard_row(storage, with_tfidf):  # noqa: F811
    """Issue 17's Done when: the bundled TF-IDF entry point through the QUIT and RECOR
    evaluation assets, then the leaderboard."""
    from assets.eval.quit.assets import QuitReport, quit_index, quit_retrieval_metrics, quit_runs
    from assets.eval.recor.assets import recor_retrieval_metrics, recor_runs
    from resources.faiss_index import FaissIndexResource
    from resources.lucene import LuceneResource

    resources = {"lucene": LuceneResource(), "faiss_index": FaissIndexResource(), "storage": storage}
    with dg.build_asset_context(partition_key="tfidf") as context:
        index = quit_index(context, benchmark_corpus=QUIT_CORPUS, **resources).value
    with dg.build_asset_context(partition_key="tfidf") as context:
        runs = quit_runs(
            context, quit_index=index, benchmark_questions=QUIT_QUESTIONS, benchmark_qrels=QUIT_QRELS, **resources
        ).value
    quit_report = quit_retrieval_metrics(
        dg.build_asset_context(),
        config=QuitReport(),
        quit_runs=runs,
        benchmark_qrels=QUIT_QRELS,
        benchmark_questions=QUIT_QUESTIONS,
        uncertainty=UncertaintySettings(),
    ).value
    with recor_context("tfidf") as context:
        turns_run = recor_runs(context, corpus=RECOR_CORPUS, recor_queries=recor_queries(), **resources).value
    # law3 is a second gold of turn 2 that shares no word with either of its queries.
    benchmark = (
        turns().filter(pl.col("domain") == "law").with_columns(pl.Series("gold_doc_ids", [["law1"], ["law2", "law3"]]))
    )
    recor_report = recor_retrieval_metrics(
        dg.build_asset_context(), recor_runs=turns_run, benchmark=benchmark, uncertainty=UncertaintySettings()
    ).value
    store(storage, {lb.QUIT_RETRIEVAL: quit_report, lb.RECOR_RETRIEVAL: recor_report})

    with dg.build_asset_context() as context:
        table = lb.leaderboard(context, storage=storage, uncertainty=UncertaintySettings()).value
    assert table["system"].to_list() == ["tfidf"]
    # QUIT: each question's one relevant passage ranks first. RECOR, both strategies: turn 1
    # finds its gold first (1), turn 2 law2 first and law3 never: 1 / (1 + 1 / log2(3)).
    turn_2 = 1 / (1 + 1 / math.log2(3))
    assert scores(table, "tfidf") == pytest.approx(
        {
            "system": "tfidf",
            "kind": "retriever",
            "benchmarks": "quit, recor",
            "quit/hit_rate@1": 1.0,
            "quit/hit_rate@5": 1.0,
            "quit/hit_rate@10": 1.0,
            f"quit/{NDCG}": 1.0,
            "recor/ndcg@10/baseline": (1 + turn_2) / 2,
            "recor/ndcg@10/history": (1 + turn_2) / 2,
        }
    )
