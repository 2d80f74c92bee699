"""``make run ARGS=--from-release``'s path: the evaluation stages of all three benchmarks on
the bundled release-format samples, nothing built, with the scripted LLM, real Lucene and
the TF-IDF entry point (``tests.pipelines.release_run``, made in the background; the real
model's run is measured in BENCHMARKS.md)."""

import dagster as dg
import polars as pl
import pytest

from pipelines import stages
from tests.pipelines.release_run import DOMAIN, PLAN, SUBJECT, ReleaseRun

SLICES = stages.RELEASE_SLICES["quick"]
# The QUIT slice's splits (train and test) hold 2 questions each in the sample.
QUIT_KEPT, QUIT_TEST = 4, 2
FINE_TUNED, FINE_TUNED_COLBERT, FINE_TUNED_RERANKER = "ft-dpr-minilm", "ft-colbert-minilm", "ft-ce-minilm"


@pytest.fixture(scope="module")
def release_run(background_builds) -> ReleaseRun:
    build = background_builds["release_run"]
    build.wait()
    return ReleaseRun(build.log.parent)


def test_the_releases_are_evaluated_with_nothing_built(release_run):
    instance = release_run.instance()
    built = [
        k.to_user_string()
        for k in instance.get_asset_keys()
        if k.path[0] in ("quit", "recor")
        or k.path[:2] in (["wikiprofile", "benchmark"], ["wikiprofile", "source_pages"])
    ]
    assert built == []
    for key in ("quit_questions", "recor_turns", "wikiprofile_tasks"):
        metadata = instance.get_latest_materialization_event(dg.AssetKey(["eval", key])).asset_materialization.metadata
        assert metadata["source"].value.startswith("release ") and metadata["rejects"].value == 0, key
        kept = {
            "quit_questions": QUIT_KEPT,
            "recor_turns": SLICES["recor"]["max_conversations"],
            "wikiprofile_tasks": SLICES["wikiprofile"]["max_facts"],
        }[key]
        assert metadata["sliced"].value.startswith(f"{kept} of"), key


def test_each_benchmark_is_evaluated_on_its_release_slice(release_run):
    storage = release_run.storage
    questions = pl.read_parquet(storage / "eval" / "quit_questions.parquet")
    assert questions.height == QUIT_KEPT and sorted(SLICES["quit"]["splits"]) == ["test", "train"]
    # the tables' split, the test one: the fine-tuned models never see its questions
    metrics = pl.read_parquet(storage / "eval" / "quit_retrieval_metrics.parquet").filter(pl.col("split") == "test")
    assert (
        sorted(metrics["retriever"]) == ["bm25", FINE_TUNED_COLBERT, FINE_TUNED, "tfidf"]
        and (metrics["questions"] == QUIT_TEST).all()
    )
    assert (
        pl.read_parquet(storage / "eval" / "quit_reader_metrics.parquet").filter(pl.col("split") == "test").height > 0
    )

    turns = pl.read_parquet(storage / "eval" / "recor_turns" / f"{DOMAIN}.parquet")
    assert turns["conversation_id"].n_unique() == SLICES["recor"]["max_conversations"]
    assert turns["subquestion_reasoning"].null_count() == 0  # the published guidance
    assert set(pl.read_parquet(storage / "eval" / "recor_retrieval_metrics.parquet")["domain"]) == {DOMAIN}

    tasks = pl.read_parquet(storage / "eval" / "wikiprofile_tasks.parquet")
    assert tasks["fact_id"].n_unique() == SLICES["wikiprofile"]["max_facts"]
    profiles = pl.read_parquet(storage / "eval" / "wikiprofile_profiles" / f"{SUBJECT}.parquet")
    assert sorted(profiles["fact_id"]) == sorted(tasks["fact_id"].unique())


def test_the_entry_point_retriever_is_one_leaderboard_row_over_quit_and_recor(release_run):
    board = pl.read_csv(release_run.storage / "eval" / "leaderboard.csv")
    tfidf = board.filter(pl.col("system") == "tfidf")
    assert tfidf.height == 1 and tfidf["benchmarks"][0] == "quit, recor, beir/tiny"
    assert tfidf["quit/hit_rate@10"][0] is not None and tfidf["recor/ndcg@10/baseline"][0] is not None
    assert board.filter(pl.col("system") == SUBJECT)["benchmarks"][0].endswith("wikiprofile")


def test_a_registered_beir_dataset_is_evaluated_from_the_registry_to_the_leaderboard(release_run):
    """Issue 47: the fixture's dataset in BEIR's layout, registered as a deployment registers
    one (BENCHFOUNDRY_DATASETS), becomes a partition, is read with its rejects named, searched
    by every retriever (the fine-tuned ones too), reranked by every reranker, scored, written
    as TREC runs and ranked on the leaderboard as its own column group."""
    storage, instance = release_run.storage, release_run.instance()
    assert instance.get_dynamic_partitions("beir_datasets") == ["tiny"]
    rejects = pl.read_parquet(storage / "eval" / "beir_source_rejects" / "tiny.parquet")
    assert sorted(rejects["reason"]) == [
        "duplicate_id",
        "malformed_line",
        "query_without_qrels",
        "unknown_document",
        "unknown_query",
    ]
    retrieval = pl.read_parquet(storage / "eval" / "beir_retrieval_metrics.parquet")
    assert sorted(retrieval["retriever"]) == ["bm25", FINE_TUNED_COLBERT, FINE_TUNED, "tfidf"]
    assert set(retrieval["dataset"]) == {"tiny"} and (retrieval["queries"] == 3).all()
    assert retrieval.filter(pl.col("retriever") == "bm25")["ndcg@10"][0] == pytest.approx(1.0)
    rerank = pl.read_parquet(storage / "eval" / "beir_rerank_metrics.parquet")
    systems = set(rerank["system"])
    assert {"bm25+rankgpt", "bm25+pointwise", f"tfidf+{FINE_TUNED_RERANKER}", "oracle+rankgpt"} <= systems
    assert rerank.filter(pl.col("oracle"))["retriever"].unique().to_list() == ["oracle"]
    runs = storage / "eval" / "runs" / "beir" / "tiny"
    assert {"bm25.trec", "tfidf.trec", "oracle.trec", "bm25+rankgpt.trec"} <= {p.name for p in runs.iterdir()}
    board = pl.read_csv(storage / "eval" / "leaderboard.csv")
    bm25 = board.filter(pl.col("system") == "bm25").row(0, named=True)
    assert bm25["benchmarks"] == "quit, recor, beir/tiny" and bm25["beir/tiny/ndcg@10"] == pytest.approx(1.0)
    assert board.filter(pl.col("system") == "bm25+rankgpt")["beir/tiny/recall@100"][0] is not None
    assert "oracle+rankgpt" not in board["system"].to_list()


def test_every_check_of_the_release_run_ran_and_passed_or_only_warned(release_run):
    from pipelines.definitions import defs
    from tests.pipelines.checks_ran import checks_of_stages, failed_and_missing_checks

    failed, missing = failed_and_missing_checks(release_run.instance(), checks_of_stages(defs, stages.run_plan(**PLAN)))
    assert not failed, failed
    assert not missing, missing


def test_the_models_fine_tuned_on_the_train_questions_are_compared_on_the_held_out_ones(release_run):
    """make run --from-release trains two retrievers and a reranker on the slice's two train
    questions; the report scores every system on the two test questions alone."""
    storage = release_run.storage
    questions = pl.read_parquet(storage / "eval" / "quit_questions.parquet")
    assert sorted(questions["split"]) == ["test", "test", "train", "train"]
    data = pl.read_parquet(storage / "eval" / "quit_finetune_data.parquet")
    assert set(data["question_id"]) == set(questions.filter(pl.col("split") == "train")["question_id"])
    report = pl.read_parquet(storage / "eval" / "quit_finetune_report.parquet")
    assert set(report["split"]) == {"test"} and (report["questions"] == QUIT_TEST).all()
    tuned = report.filter(pl.col("fine_tuned"))
    assert set(tuned.filter(pl.col("table") == "retrieval")["system"]) == {FINE_TUNED, FINE_TUNED_COLBERT}
    assert f"oracle+{FINE_TUNED_RERANKER}" in tuned.filter(pl.col("table") == "reranking")["system"].to_list()
    assert tuned.filter(pl.col("table") == "reader").height > 0
    vanilla = report.filter(~pl.col("fine_tuned") & (pl.col("table") == "retrieval"))
    assert sorted(vanilla["system"].unique()) == ["bm25", "tfidf"]
    metadata = (
        release_run.instance()
        .get_latest_materialization_event(dg.AssetKey(["eval", "quit_finetune_report"]))
        .asset_materialization.metadata
    )
    assert (FINE_TUNED_COLBERT, True) in {
        (r.data["system"], r.data["fine_tuned"]) for r in metadata["table_10_11_retrievers"].records
    }
