"""A profile rebuilt over another's partitions (issue 45): every input materialized under
profile A, a subset rebuilt under profile B; B's reports keep B's partitions alone, name
each one left out with the reason, and each row names the run and profile it came from."""

import dagster as dg
import polars as pl
import pytest

from assets.common.metadata import PROFILE_TAG
from assets.eval import leaderboard as lb
from assets.eval import sources
from assets.eval.quit.assets import quit_retrieval_metrics
from assets.eval.recor.assets import (
    RETECO_GENERATION_SCHEMA,
    recor_retrieval_metrics,
    recor_runs,
    reteco_generation,
    reteco_leaderboard,
    reteco_retrieval,
)
from assets.eval.recor.reteco import rules as reteco
from assets.eval.uncertainty import UncertaintySettings
from assets.eval.wikiprofile.assets import wikiprofile_profile_report
from assets.partitions import domain_partitions, domain_retriever_partitions
from resources.storage import StorageResource, parquet_io_manager
from tests.assets.eval.test_leaderboard import QUIT_RETRIEVAL, RECOR_RETRIEVAL, WIKIPROFILE

# c1 (law) turns 1-2, c2 (biology) turn 1; each turn's one gold document
TURNS = pl.DataFrame(
    {
        "qid": ["c1_turn_1", "c1_turn_2", "c2_turn_1"],
        "domain": ["law", "law", "biology"],
        "conversation_id": ["c1", "c1", "c2"],
        "turn_id": [1, 2, 1],
        "gold_doc_ids": [["d1"], ["d2"], ["d4"]],
    }
)
CORPUS = pl.DataFrame(
    {"doc_id": ["d1", "d2", "d3", "d4", "d5"], "domain": ["law", "law", "law", "biology", "biology"], "content": "x"}
)


def run(domain: str, system: str, ranked: dict[str, list[str]]) -> pl.DataFrame:
    """``system``'s run over ``domain``'s turns, as eval/recor_runs stores it."""
    turns = set(TURNS.filter(pl.col("domain") == domain)["qid"])
    rows = [
        (q, d, r, 10.0 - r, system) for q, docs in ranked.items() if q in turns for r, d in enumerate(docs, start=1)
    ]
    frame = pl.DataFrame(rows, schema=["question_id", "passage_id", "rank", "score", "system"], orient="row")
    return frame.with_columns(pl.lit("baseline").alias("strategy"), pl.lit(domain).alias("domain"))


# every turn's gold first (nDCG@10 1), or second after a miss (1 / log2(3))
FIRST = {"c1_turn_1": ["d1"], "c1_turn_2": ["d2"], "c2_turn_1": ["d4"]}
SECOND = {"c1_turn_1": ["d3", "d1"], "c1_turn_2": ["d3", "d2"], "c2_turn_1": ["d5", "d4"]}


def code(assets_def: dg.AssetsDefinition, key: dg.AssetKey) -> str | None:
    return assets_def.get_asset_spec(key).code_version


def standin(key: dg.AssetKey, value, partitions_def=None, code_version=None) -> dg.AssetsDefinition:
    """``key`` materialized with ``value`` (a frame, filtered to the partition's domain, or a
    function of the partition key), at its definition's code version unless told."""

    @dg.asset(key=key, partitions_def=partitions_def, code_version=code_version)
    def _standin(context: dg.AssetExecutionContext) -> pl.DataFrame:
        if callable(value):
            return value(context.partition_key)
        return value.filter(pl.col("domain") == context.partition_key) if partitions_def else value

    return _standin


RUNS, TURNS_KEY, CORPUS_KEY, QUERIES = (
    dg.AssetKey(["eval", n]) for n in ("recor_runs", "recor_turns", "recor_corpus", "recor_queries")
)


def recor_inputs(runs: dict[str, pl.DataFrame]) -> list[dg.AssetsDefinition]:
    """RECOR's evaluation inputs as eval/reteco_retrieval reads them; ``runs`` by system."""
    return [
        standin(TURNS_KEY, TURNS, domain_partitions, code(sources.recor_source, TURNS_KEY)),
        standin(CORPUS_KEY, CORPUS, domain_partitions, code(sources.recor_source, CORPUS_KEY)),
        standin(QUERIES, TURNS.select("qid", "domain"), domain_partitions),
        standin(
            RUNS,
            lambda key: runs[key.keys_by_dimension["retriever"]].filter(
                pl.col("domain") == key.keys_by_dimension["domain"]
            ),
            domain_retriever_partitions,
            code(recor_runs, RUNS),
        ),
    ]


@pytest.fixture
def resources(tmp_path):
    return {
        "storage": StorageResource(root=str(tmp_path / "storage")),
        "io_manager": parquet_io_manager,
        "uncertainty": UncertaintySettings(),
    }


def build(assets, keys, profile, instance, resources) -> str:
    """Each partition of ``keys`` (None: unpartitioned) materialized by a run tagged with
    ``profile``; the last run's id."""
    for key in keys:
        result = dg.materialize(
            assets,
            partition_key=key,
            instance=instance,
            resources=resources,
            tags={PROFILE_TAG: profile} if profile else {},
        )
    return result.run_id


def left_out(meta) -> dict[str, str]:
    return {r.data["input"]: r.data["reason"] for r in meta["left_out"].records}


# ranx scores the runs: wait for its metrics compiled once in the background (tests.background)
@pytest.mark.usefixtures("compiled_metrics")
def test_reteco_retrieval_of_a_rebuilt_profile_reads_none_of_the_old_partitions(resources):
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recor_retrievers", ["bm25", "tfidf"])
    # profile A: both domains, bm25 and tfidf on law, bm25 on biology, every gold ranked second
    a = recor_inputs(
        {
            "bm25": run("law", "bm25", SECOND).vstack(run("biology", "bm25", SECOND)),
            "tfidf": run("law", "tfidf", SECOND),
        }
    )
    a_biology = build(a[:3], ["law", "biology"], "A", instance, resources)
    build(a[3:], ["law|bm25", "law|tfidf", "biology|bm25"], "A", instance, resources)
    # profile B rebuilds law and its bm25 run alone, every gold ranked first
    b = recor_inputs({"bm25": run("law", "bm25", FIRST)})
    build(b[:3], ["law"], "B", instance, resources)
    b_runs = build(b[3:], ["law|bm25"], "B", instance, resources)

    report = [*b, reteco_retrieval]
    result = dg.materialize(
        report, selection=[reteco_retrieval], instance=instance, resources=resources, tags={PROFILE_TAG: "B"}
    )
    scores = result.output_for_node("eval__reteco_retrieval")
    meta = result.asset_materializations_for_node("eval__reteco_retrieval")[0].metadata
    assert sorted(set(scores["run"])) == ["bm25/baseline"] and sorted(set(scores["domain"])) == ["law"]
    assert scores["ndcg@10"].to_list() == [1.0, 1.0]  # B's run, never A's second-ranked golds
    assert set(scores["dagster_run"]) == {b_runs} and set(scores["profile"]) == {"B"}
    assert meta["profile"].value == f"B (the run's {PROFILE_TAG} tag)"
    reasons = left_out(meta)
    assert meta["left_out_count"].value == 4 and sorted(reasons) == [
        "eval/recor_corpus[biology]",
        "eval/recor_runs[biology|bm25]",
        "eval/recor_runs[law|tfidf]",
        "eval/recor_turns[biology]",
    ]
    assert reasons["eval/recor_turns[biology]"] == f"built under profile A (run {a_biology}); the report's is profile B"
    assert reasons["eval/recor_runs[law|tfidf]"].startswith("built under profile A")
    assert reasons["eval/recor_runs[biology|bm25]"] == "its domain's turns or documents are left out"

    # law's queries asked again under B: its bm25 run was built from the old ones, so it is stale,
    # and a run without a profile tag reads as the newest input's profile, B
    build(b[2:3], ["law"], "B", instance, resources)
    result = dg.materialize(report, selection=[reteco_retrieval], instance=instance, resources=resources)
    meta = result.asset_materializations_for_node("eval__reteco_retrieval")[0].metadata
    assert result.output_for_node("eval__reteco_retrieval").height == 0
    assert meta["profile"].value.startswith("B (the run has no")
    assert left_out(meta)["eval/recor_runs[law|bm25]"] == "stale: eval/recor_queries[law] materialized after it"


# the report tables, each stored by its definition's code version of now
REPORTS = {
    lb.QUIT_RETRIEVAL: (QUIT_RETRIEVAL, quit_retrieval_metrics),
    lb.RECOR_RETRIEVAL: (RECOR_RETRIEVAL, recor_retrieval_metrics),
    lb.WIKIPROFILE_REPORT: (WIKIPROFILE.with_columns(pl.lit(8).alias("facts")), wikiprofile_profile_report),
}


def report(key: dg.AssetKey, frame: pl.DataFrame, code_version: str | None = None) -> dg.AssetsDefinition:
    return standin(key, frame, code_version=code_version or code(REPORTS[key][1], key))


def test_the_leaderboard_of_a_rebuilt_profile_leaves_out_the_other_profiles_reports(resources):
    instance = dg.DagsterInstance.ephemeral()
    for key, (frame, _) in REPORTS.items():
        build([report(key, frame)], [None], "A", instance, resources)
    # B rebuilds RECOR's report alone, bm25's rows only
    recor_b = build(
        [report(lb.RECOR_RETRIEVAL, RECOR_RETRIEVAL.filter(pl.col("retriever") == "bm25"))],
        [None],
        "B",
        instance,
        resources,
    )

    result = dg.materialize([lb.leaderboard], instance=instance, resources=resources, tags={PROFILE_TAG: "B"})
    table = result.output_for_node("eval__leaderboard")
    meta = result.asset_materializations_for_node("eval__leaderboard")[0].metadata
    assert table["system"].to_list() == ["bm25"] and table["benchmarks"].to_list() == ["recor"]
    assert table["quit/hit_rate@1"].null_count() == 1  # A's QUIT score of bm25 is not B's
    assert table.select("dagster_runs", "profile").row(0) == (recor_b, "B")
    assert sorted(left_out(meta)) == ["eval/quit_retrieval_metrics", "eval/wikiprofile_profile_report"]
    assert all(r.startswith("built under profile A") for r in left_out(meta).values())

    # B's QUIT report by an older definition, and a turns partition RECOR's report read rebuilt after it
    build([report(lb.QUIT_RETRIEVAL, QUIT_RETRIEVAL, code_version="0")], [None], "B", instance, resources)
    build([standin(TURNS_KEY, TURNS, domain_partitions)], ["law"], "B", instance, resources)
    result = dg.materialize([lb.leaderboard], instance=instance, resources=resources, tags={PROFILE_TAG: "B"})
    meta = result.asset_materializations_for_node("eval__leaderboard")[0].metadata
    assert result.output_for_node("eval__leaderboard").height == 0
    reasons = left_out(meta)
    assert reasons["eval/quit_retrieval_metrics"] == (
        f"built by code version 0; its definition's is {code(quit_retrieval_metrics, lb.QUIT_RETRIEVAL)} now"
    )
    assert reasons["eval/recor_retrieval_metrics"] == "stale: eval/recor_turns[law] materialized after it"


def turn_rows(**columns) -> pl.DataFrame:
    """TURNS' target turns in the task's shape, with ``columns`` (one value each)."""
    turns = TURNS.select("qid", "domain", "conversation_id", pl.col("turn_id").cast(pl.Int32))
    turns = turns.with_columns(reteco.task_qid_expr().alias("task_qid"), reteco.depth_expr().alias("depth"))
    return turns.with_columns(pl.lit(v).alias(c) for c, v in columns.items())


def judged(score: float) -> pl.DataFrame:
    """A 2b system's per-turn judgments, every dimension ``score``."""
    frame = turn_rows(
        system="gen",
        subtrack="2b",
        run=None,
        answered=True,
        judge_failures=0,
        **dict.fromkeys(reteco.DIMENSIONS, score),
    )
    return frame.select(
        pl.col(c).cast(t) if c in frame.columns else pl.lit(None, t).alias(c)
        for c, t in RETECO_GENERATION_SCHEMA.items()
    )


def test_the_reteco_leaderboard_of_a_rebuilt_profile_leaves_out_the_other_profiles_tables(resources):
    instance = dg.DagsterInstance.ephemeral()
    keys = {name: dg.AssetKey(["eval", name]) for name in ("reteco_retrieval", "reteco_generation")}

    def inputs(score: float) -> list[dg.AssetsDefinition]:
        scores = turn_rows(run="bm25/baseline", **dict.fromkeys(reteco.METRICS, score))
        return [
            standin(keys["reteco_retrieval"], scores, code_version=code(reteco_retrieval, keys["reteco_retrieval"])),
            standin(
                keys["reteco_generation"],
                judged(score),
                domain_partitions,
                code(reteco_generation, keys["reteco_generation"]),
            ),
        ]

    a, b = inputs(0.5), inputs(1.0)
    build(a[:1], [None], "A", instance, resources)
    build(a[1:], ["law", "biology"], "A", instance, resources)
    law_b = build(b[1:], ["law"], "B", instance, resources)  # B judges law again, and scores nothing

    result = dg.materialize(
        [*b, reteco_leaderboard],
        selection=[reteco_leaderboard],
        instance=instance,
        resources=resources,
        tags={PROFILE_TAG: "B"},
    )
    board = result.output_for_node("eval__reteco_leaderboard")
    meta = result.asset_materializations_for_node("eval__reteco_leaderboard")[0].metadata
    # no 2a row (A scored the runs), and B's law judgments alone: never averaged with A's biology
    assert board.select("subtrack", "run", "turns", "macro").rows() == [("2b", "gen", 2, 1.0)]
    assert board.select("dagster_runs", "profile").rows() == [(law_b, "B")]
    reasons = left_out(meta)
    assert sorted(reasons) == ["eval/reteco_generation[biology]", "eval/reteco_retrieval"]
    assert all(r.startswith("built under profile A") for r in reasons.values())
