"""Issue 47: any dataset in BEIR's layout as an evaluation target. The fixture registry's
``tiny`` (tests/fixtures/beir) read with one reject of each kind it holds, indexed and
searched by BM25 and the Oracle, scored as pytrec_eval (BEIR's own evaluator) scores the
same runs, and put on the leaderboard as its own column group; a dataset key the registry
does not hold fails, naming the registry file."""

from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from assets.eval import leaderboard as lb
from assets.eval.beir import assets as beir
from assets.eval.beir import rules
from assets.eval.uncertainty import UncertaintySettings
from checks.eval import beir as beir_checks
from resources import datasets
from resources.faiss_index import FaissIndexResource
from resources.lucene import LuceneResource
from resources.storage import StorageResource, parquet_io_manager, table_uri, write_parquet

REGISTRY = Path(__file__).resolve().parents[2] / "fixtures" / "beir" / "datasets.yaml"
RETRIEVERS = ("bm25", "oracle")


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(datasets, "DATASETS_PATH", str(REGISTRY))
    return REGISTRY


def key(dataset: str, retriever: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({"dataset": dataset, "retriever": retriever})


@pytest.fixture
def evaluated(registry, tmp_path, instance):
    """The fixture dataset read, searched by each of RETRIEVERS and scored, with the checks
    of every step, into one instance."""
    storage = StorageResource(root=str(tmp_path / "storage"))
    instance.add_dynamic_partitions("beir_datasets", ["tiny"])
    resources = {
        "storage": storage,
        "io_manager": parquet_io_manager,
        "uncertainty": UncertaintySettings(),
        "lucene": LuceneResource(),
        "faiss_index": FaissIndexResource(),
    }
    source_checks = [c for c in beir_checks.beir_eval_checks if c.partitions_def is beir.beir_dataset_partitions]
    results = {
        "source": dg.materialize(
            [beir.beir_source, *source_checks], instance=instance, partition_key="tiny", resources=resources
        )
    }
    run_checks = [beir_checks.beir_runs_ranks, beir_checks.beir_runs_references, beir_checks.beir_runs_coverage]
    upstream = [beir.beir_source.to_source_assets()]
    for retriever in RETRIEVERS:
        results[retriever] = dg.materialize(
            [beir.beir_runs, *run_checks, *[a for a in upstream[0]]],
            instance=instance,
            partition_key=key("tiny", retriever),
            resources=resources,
            selection=[dg.AssetKey(["eval", "beir_runs"])],
        )
    results["report"] = dg.materialize(
        [
            beir.beir_retrieval_metrics,
            beir_checks.beir_retrieval_metrics_ranges,
            beir.beir_runs.to_source_asset(),
            *upstream[0],
        ],
        instance=instance,
        resources=resources,
        selection=[dg.AssetKey(["eval", "beir_retrieval_metrics"])],
    )
    return storage, results


def metadata(result: dg.ExecuteInProcessResult, name: str) -> dict:
    [event] = [e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey(["eval", name])]
    return {k: getattr(v, "value", v) for k, v in event.materialization.metadata.items()}


@pytest.mark.slow
def test_a_registered_dataset_is_read_searched_scored_and_ranked(evaluated):
    storage, results = evaluated
    every = [c for r in results.values() for c in r.get_asset_check_evaluations()]
    assert every and all(c.passed for c in every), [c.check_name for c in every if not c.passed]

    read = metadata(results["source"], "beir_corpus")
    assert (read["documents"], read["queries"], read["queries_read"], read["qrels"], read["rejects"]) == (6, 3, 4, 4, 5)
    rejects = results["source"].output_for_node("eval_beir_source", "beir_source_rejects")
    assert sorted(zip(rejects["file"], rejects["line"], rejects["reason"])) == [
        ("corpus.jsonl", "7", "duplicate_id"),
        ("corpus.jsonl", "8", "malformed_line"),
        ("qrels/test.tsv", "6", "unknown_document"),
        ("qrels/test.tsv", "7", "unknown_query"),
        ("queries.jsonl", "4", "query_without_qrels"),
    ]

    # BM25 over title and text: each query's gold on top; q2's label-2 storm above its label-1 planet
    bm25 = results["bm25"].output_for_node("eval__beir_runs")
    top = {q: g.sort("rank")["passage_id"].to_list()[:2] for (q,), g in bm25.group_by("question_id")}
    assert top["q1"][0] == "d1" and top["q2"] == ["d4", "d3"] and top["q3"][0] == "d5"
    trec = Path(storage.path("eval", "runs", "beir", "tiny", "bm25.trec")).read_text().splitlines()
    assert len(trec) == bm25.height and trec[0].split()[1:3] == ["Q0", top["q1"][0]]

    table = results["report"].output_for_node("eval__beir_retrieval_metrics")
    assert table["retriever"].to_list() == ["bm25"]  # the Oracle is an upper bound, left out
    assert table["queries"].to_list() == [3]
    expected = pytrec_eval_scores(bm25)
    assert set(expected) == set(rules.BEIR_METRICS)
    for metric, (value, tolerance) in expected.items():
        assert table[metric][0] == pytest.approx(value, abs=tolerance), metric
    assert table["ndcg@10"][0] == pytest.approx(1.0)
    # issue 48: each metric's interval and test, in the table and its metadata
    assert table["recall@10 ci_low"][0] <= table["recall@10"][0] <= table["recall@10 ci_high"][0]
    assert table["ndcg@10 tied_best"].to_list() == [True]  # the only retriever is its dataset's best
    report = results["report"].asset_materializations_for_node("eval__beir_retrieval_metrics")[0].metadata
    uncertainty = report["retrieval_uncertainty"]
    assert {r.data["metric"] for r in uncertainty.records} == set(rules.BEIR_METRICS)
    described = {c.name: c.description for c in uncertainty.schema.columns}
    assert "percentile bootstrap over queries (1,000 resamples, seed 0)" in described["ci_low"]

    write_parquet(table_uri(storage.root, lb.BEIR_RETRIEVAL.path), table)
    with dg.build_asset_context() as context:
        board = lb.leaderboard(context, storage=storage, uncertainty=UncertaintySettings())
    row = board.value.row(0, named=True)
    assert (row["system"], row["benchmarks"], row["beir/tiny/ndcg@10"]) == ("bm25", "beir/tiny", pytest.approx(1.0))
    assert row["beir/tiny/recall@100"] == pytest.approx(1.0)
    described = {c.name: c.description for c in board.metadata["leaderboard"].schema.columns}
    assert "on the dataset tiny" in described["beir/tiny/ndcg@10"]
    from checks.eval.leaderboard import leaderboard_run_on, leaderboard_schema

    assert leaderboard_schema(board.value).passed and leaderboard_run_on(board.value).passed


def pytrec_eval_scores(run: pl.DataFrame) -> dict[str, tuple[float, float]]:
    """The run scored by the evaluator BEIR's own evaluation calls, pytrec_eval (trec_eval's
    measures, exact), and MRR@10 by BEIR's own function (rounded to 5 places, as BEIR reports
    it), each with the tolerance it is compared at, against the fixture's qrels as read."""
    import pytrec_eval
    from beir.retrieval.evaluation import EvaluateRetrieval

    from assets.common.formats.beir import read_beir
    from assets.eval.runs import run_dict

    data = read_beir(str(REGISTRY.parent / "tiny"))
    qrels: dict = {}
    for q, d, s in data.qrels.iter_rows():
        qrels.setdefault(q, {})[d] = s
    runs = run_dict(run)
    measures = {"ndcg_cut.10,100", "map_cut.100", "recall.10,100", "P.10"}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(runs)
    names = {"ndcg@10": "ndcg_cut_10", "ndcg@100": "ndcg_cut_100", "map@100": "map_cut_100"}
    names |= {"recall@10": "recall_10", "recall@100": "recall_100", "precision@10": "P_10"}
    exact = {m: (sum(q[t] for q in per_query.values()) / len(qrels), 1e-9) for m, t in names.items()}
    mrr = EvaluateRetrieval.evaluate_custom(qrels, runs, [10], "mrr")["MRR@10"]
    return {**exact, "mrr@10": (mrr, 1e-5)}


def test_a_dataset_the_registry_does_not_hold_is_named_with_the_registry(registry, instance, tmp_path):
    instance.add_dynamic_partitions("beir_datasets", ["gone"])
    result = dg.materialize(
        [beir.beir_source],
        instance=instance,
        partition_key="gone",
        raise_on_error=False,
        resources={"io_manager": parquet_io_manager, "storage": StorageResource(root=str(tmp_path))},
    )
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    message = (
        failure.step_failure_data.error.cause.message
        if failure.step_failure_data.error.cause
        else failure.step_failure_data.error.message
    )
    assert "'gone' is not in the dataset registry" in message and str(registry) in message


def test_the_registry_resolves_paths_and_refuses_what_it_cannot_use(tmp_path):
    (tmp_path / "ok.yaml").write_text(
        "datasets:\n  a: {path: data/a}\n  b: {path: s3://bucket/b, split: dev}\n  c: {path: /abs/c}\n"
    )
    specs = datasets.load_datasets(str(tmp_path / "ok.yaml"))
    assert specs["a"] == datasets.DatasetSpec("a", str(tmp_path / "data" / "a"), "test")
    assert (specs["b"].path, specs["b"].split, specs["c"].path) == ("s3://bucket/b", "dev", "/abs/c")
    assert datasets.load_datasets(str(Path(datasets.__file__).with_name("datasets.yaml"))) == {}
    for text, said in [
        ("datasets:\n  a: {split: test}\n", "dataset 'a' needs a path"),
        ("datasets:\n  a: {path: x, url: y}\n", "unknown keys ['url']"),
        ("datasets:\n  ../a: {path: x}\n", "dataset name '../a'"),
        ("datasets:\n  a: {path: x, split: ../test}\n", "split '../test'"),
        ("datasets: [a]\n", "expected a 'datasets' mapping"),
    ]:
        (tmp_path / "bad.yaml").write_text(text)
        with pytest.raises(ValueError, match="bad.yaml") as error:
            datasets.load_datasets(str(tmp_path / "bad.yaml"))
        assert said in str(error.value)


def test_the_leaderboard_rows_of_a_dataset_table():
    table = pl.DataFrame(
        {
            "dataset": ["b", "a", "a"],
            "retriever": ["bm25", "bm25", "e5"],
            "ndcg@10": [0.5, 0.25, 0.75],
            "recall@100": [1.0, 0.5, 0.5],
        }
    )
    rows = rules.leaderboard_rows(table, "retriever")
    scores = ["beir/a/ndcg@10", "beir/a/recall@100", "beir/b/ndcg@10", "beir/b/recall@100"]
    assert rows.columns == ["system", "benchmark", *(c + end for c in scores for end in ("", " ci_low", " ci_high"))]
    assert rows["beir/a/ndcg@10 ci_low"].null_count() == rows.height  # a table stored without intervals
    board = lb.leaderboard_table({lb.BEIR_RETRIEVAL: table.with_columns(pl.lit(3).alias("queries"))})
    assert board["benchmarks"].to_list() == ["beir/a, beir/b", "beir/a"]
    assert board.filter(pl.col("system") == "bm25")["beir/b/ndcg@10"].to_list() == [0.5]
    assert lb.score_columns(board)[-4:] == [
        "beir/a/ndcg@10",
        "beir/a/recall@100",
        "beir/b/ndcg@10",
        "beir/b/recall@100",
    ]
