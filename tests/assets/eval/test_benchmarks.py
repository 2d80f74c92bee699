"""The evaluation's source assets: the bundled release samples read with zero rejects, a
build read back as it was stored, the choice named in the materialization, and the checks
of each table failing on a broken copy."""

from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from assets.eval import sources as benchmarks
from assets.quit import published as quit_release
from assets.recor import published as recor_release
from assets.wikiprofile import published as wikiprofile_release
from checks.eval import benchmarks as eb
from resources.storage import StorageResource, write_parquet

ROOT = Path(__file__).resolve().parents[3]
RELEASE = {"source": "release"}


def materialize(
    asset, storage: StorageResource, config: dict | None = None, partition: str | None = None
) -> dg.ExecuteInProcessResult:
    from resources.storage import parquet_io_manager

    instance = dg.DagsterInstance.ephemeral()
    if partition is not None:
        from assets.partitions import domain_partitions

        if isinstance(domain_partitions, dg.DynamicPartitionsDefinition):
            instance.add_dynamic_partitions(domain_partitions.name, [partition])
    run_config = {"ops": {asset.op.name: {"config": config}}} if config else None
    return dg.materialize(
        [asset],
        instance=instance,
        partition_key=partition,
        run_config=run_config,
        resources={"storage": storage, "io_manager": parquet_io_manager},
    )


def outputs(result: dg.ExecuteInProcessResult, asset) -> dict[str, pl.DataFrame]:
    return {name: result.output_for_node(asset.op.name, name) for name in asset.op.output_dict}


def source_of(result: dg.ExecuteInProcessResult, key: str) -> str:
    [event] = [e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey(["eval", key])]
    return event.materialization.metadata["source"].value


@pytest.fixture
def storage(tmp_path) -> StorageResource:
    return StorageResource(root=str(tmp_path / "storage"))


def test_the_quit_release_sample_is_read_whole_and_named(storage):
    result = materialize(benchmarks.quit_source, storage, RELEASE)
    tables = outputs(result, benchmarks.quit_source)
    expected = quit_release.load_release(str(ROOT / "data/releases/quit"))
    assert tables["quit_source_rejects"].height == 0
    assert tables["quit_questions"].equals(expected.questions) and tables["quit_qrels"].equals(expected.qrels)
    assert tables["quit_corpus"].height == expected.corpus.height > 0
    assert source_of(result, "quit_questions") == f"release {ROOT / 'data/releases/quit'}"
    for check in (
        eb.quit_questions_schema(tables["quit_questions"]),
        eb.quit_corpus_schema(tables["quit_corpus"]),
        eb.quit_qrels_references(tables["quit_qrels"], tables["quit_questions"], tables["quit_corpus"]),
    ):
        assert check.passed, check.metadata["problems"].value


def test_a_slice_keeps_the_whole_corpus_as_distractors(storage):
    result = materialize(benchmarks.quit_source, storage, {**RELEASE, "max_questions": 3})
    tables = outputs(result, benchmarks.quit_source)
    whole = quit_release.load_release(str(ROOT / "data/releases/quit"))
    # the splits in the release's order, train first: the two train questions, then dev's first
    train, dev = (
        whole.questions.filter(pl.col("split") == s)["question_id"].sort().to_list() for s in ("train", "dev")
    )
    assert sorted(tables["quit_questions"]["question_id"]) == sorted([*train, dev[0]])
    assert tables["quit_corpus"].height == whole.corpus.height
    assert set(tables["quit_qrels"]["question_id"]) == set(tables["quit_questions"]["question_id"])
    [event] = [
        e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey(["eval", "quit_questions"])
    ]
    assert event.materialization.metadata["sliced"].value == f"3 of {whole.questions.height} questions"


def test_a_slice_of_splits_keeps_those_splits_before_max_questions(storage):
    tables = outputs(
        materialize(benchmarks.quit_source, storage, {**RELEASE, "splits": ["test", "train"], "max_questions": 3}),
        benchmarks.quit_source,
    )
    # train's two questions come first in the release's order, then test's first
    assert tables["quit_questions"].sort("question_id")["split"].to_list() == ["test", "train", "train"]
    with pytest.raises(Exception, match=r"QUIT splits \['holdout'\] do not exist: name some of train, dev, test"):
        materialize(benchmarks.quit_source, storage, {**RELEASE, "splits": ["holdout"]})


def test_a_built_quit_benchmark_is_read_from_storage_as_stored(storage):
    built = quit_release.load_release(str(ROOT / "data/releases/quit"))
    for name, frame in (("questions", built.questions), ("corpus", built.corpus), ("qrels", built.qrels)):
        write_parquet(storage.path("quit", f"benchmark_{name}.parquet"), frame)
    result = materialize(benchmarks.quit_source, storage)
    tables = outputs(result, benchmarks.quit_source)
    assert tables["quit_corpus"].equals(built.corpus) and tables["quit_questions"].equals(built.questions)
    assert tables["quit_source_rejects"].height == 0
    assert source_of(result, "quit_qrels") == "built (quit/benchmark_*)"


def test_a_missing_build_says_what_to_materialize(storage):
    with pytest.raises(FileNotFoundError, match="benchmark_questions.parquet: materialize its asset first"):
        materialize(benchmarks.quit_source, storage)


def test_the_recor_release_sample_is_read_per_domain(storage):
    result = materialize(benchmarks.recor_source, storage, RELEASE, partition="law")
    tables = outputs(result, benchmarks.recor_source)
    expected = recor_release.load_release(str(ROOT / "data/releases/recor"), "law")
    assert tables["recor_source_rejects"].height == 0
    assert tables["recor_turns"].equals(expected.benchmark) and tables["recor_corpus"].equals(expected.corpus)
    assert "subquestion_reasoning" in tables["recor_turns"].columns  # the published guidance travels on
    assert source_of(result, "recor_turns").startswith("release ")
    check = eb.recor_turns_schema(tables["recor_turns"], tables["recor_corpus"])
    assert check.passed, check.metadata["problems"].value
    assert recor_release.release_domains(str(ROOT / "data/releases/recor")) == ["biology", "law"]


def test_a_domain_the_release_lacks_is_an_error_naming_it(storage):
    with pytest.raises(FileNotFoundError, match="no RECOR release of 'robotics'"):
        materialize(benchmarks.recor_source, storage, RELEASE, partition="robotics")


def test_the_wikiprofile_release_sample_gives_tasks_and_page_views(storage):
    result = materialize(benchmarks.wikiprofile_source, storage, RELEASE)
    tables = outputs(result, benchmarks.wikiprofile_source)
    tasks, rejects = wikiprofile_release.load_release("data/releases/wikiprofile")
    assert tables["wikiprofile_source_rejects"].height == rejects.height == 0
    assert tables["wikiprofile_tasks"].equals(tasks)
    assert tables["wikiprofile_pages"].schema == benchmarks.PAGES_SCHEMA
    assert set(tables["wikiprofile_pages"]["page_id"]) == set(tasks["page_id"])
    for check in (
        eb.wikiprofile_tasks_schema_check(tables["wikiprofile_tasks"]),
        eb.wikiprofile_pages_references(tables["wikiprofile_pages"], tables["wikiprofile_tasks"]),
    ):
        assert check.passed, check.metadata["problems"].value


def test_named_wikiprofile_facts_are_a_slice_of_the_release_in_its_order(storage):
    """``fact_ids`` picks facts anywhere in the file (a demo slice need not be its head)."""
    result = materialize(benchmarks.wikiprofile_source, storage, {**RELEASE, "fact_ids": ["8", "0"]})
    tables = outputs(result, benchmarks.wikiprofile_source)
    tasks, _ = wikiprofile_release.load_release("data/releases/wikiprofile")
    assert tables["wikiprofile_tasks"].equals(tasks.filter(pl.col("fact_id").is_in(["0", "8"])))
    assert tables["wikiprofile_tasks"].height == 20
    [event] = [
        e
        for e in result.get_asset_materialization_events()
        if e.asset_key == dg.AssetKey(["eval", "wikiprofile_tasks"])
    ]
    assert event.materialization.metadata["sliced"].value == f"2 of {tasks['fact_id'].n_unique()} facts"


def test_a_named_wikiprofile_fact_the_release_lacks_is_an_error_naming_it(storage):
    with pytest.raises(ValueError, match=r"fact_ids \['99'\] are not in data/releases/wikiprofile"):
        materialize(benchmarks.wikiprofile_source, storage, {**RELEASE, "fact_ids": ["0", "99"]})


# --- the checks on broken tables ----------------------------------------------------------------

QUESTIONS = pl.DataFrame(
    {
        "question_id": ["q1", "q2"],
        "split": ["test", "dev"],
        "question": ["Who?", "What?"],
        "answer": ["A", "B"],
        "answers": [["A"], ["B", "b"]],
        "hints": [["h"], ["h"]],
    },
    schema=eb.QUESTION_COLUMNS,
)
CORPUS = pl.DataFrame(
    {"passage_id": ["q1_1", "q1_2", "q2_1"], "question_id": ["q1", "q1", "q2"], "text": ["x", "y", "z"]}
)
QRELS = pl.DataFrame(
    {"question_id": ["q1", "q1", "q2"], "passage_id": ["q1_1", "q1_2", "q2_1"], "label": [2, 1, 2]},
    schema=quit_release.QRELS_SCHEMA,
)


def fails(result: dg.AssetCheckResult, words: str) -> bool:
    return not result.passed and words in result.metadata["problems"].value


def test_sound_quit_tables_pass():
    assert eb.quit_questions_schema(QUESTIONS).passed
    assert eb.quit_corpus_schema(CORPUS).passed
    assert eb.quit_qrels_references(QRELS, QUESTIONS, CORPUS).passed


def test_broken_quit_questions_fail():
    assert fails(eb.quit_questions_schema(pl.concat([QUESTIONS, QUESTIONS.head(1)])), "repeated question_id")
    assert fails(eb.quit_questions_schema(QUESTIONS.with_columns(pl.lit("val").alias("split"))), "with split not in")
    assert fails(
        eb.quit_questions_schema(QUESTIONS.with_columns(pl.lit([], pl.List(pl.String)).alias("answers"))),
        "questions without an answer pool",
    )


def test_broken_quit_corpus_and_qrels_fail():
    assert fails(eb.quit_corpus_schema(pl.concat([CORPUS, CORPUS.head(1)])), "repeated passage_id")
    assert fails(
        eb.quit_corpus_schema(CORPUS.with_columns(pl.lit(None, pl.String).alias("text"))), "column 'text' has 3 nulls"
    )
    outside = QRELS.with_columns(
        pl.when(pl.col("passage_id") == "q2_1").then(pl.lit("q2_9")).otherwise("passage_id").alias("passage_id")
    )
    assert fails(eb.quit_qrels_references(outside, QUESTIONS, CORPUS), "qrels outside eval/quit_corpus")
    assert fails(
        eb.quit_qrels_references(QRELS.with_columns(pl.lit(3, pl.Int8).alias("label")), QUESTIONS, CORPUS),
        "label not in",
    )
    assert fails(
        eb.quit_qrels_references(QRELS.filter(pl.col("question_id") == "q1"), QUESTIONS, CORPUS),
        "questions without a relevant passage (e.g. q2)",
    )


def turns(**changes) -> pl.DataFrame:
    frame = pl.DataFrame(
        {
            "qid": ["c1_turn_1", "c1_turn_2"],
            "domain": ["law", "law"],
            "conversation_id": ["c1", "c1"],
            "turn_id": [1, 2],
            "query": ["q?", "r?"],
            "answer": ["a", "b"],
            "gold_doc_ids": [["d1"], ["d2"]],
            "conversation_history": ["", "Q: q? A: a"],
        },
        schema=eb.RECOR_COLUMNS,
    )
    return frame.with_columns(**changes)


RECOR_CORPUS = pl.DataFrame({"doc_id": ["d1", "d2"], "content": ["x", "y"]})


@pytest.mark.parametrize(
    "broken, words",
    [
        (turns(turn_id=pl.Series([2, 3], dtype=pl.Int32)), "not numbered 1..n"),
        (turns(domain=pl.Series(["law", "biology"])), "turns of several domains in one partition: biology, law"),
        (turns(gold_doc_ids=pl.Series([["d1"], ["d9"]])), "gold d9 not in eval/recor_corpus"),
        (turns(qid=pl.lit("c1_turn_1")), "repeated qid"),
    ],
)
def test_broken_recor_turns_fail(broken, words):
    assert eb.recor_turns_schema(turns(), RECOR_CORPUS).passed
    assert fails(eb.recor_turns_schema(broken, RECOR_CORPUS), words)


def test_broken_wikiprofile_tasks_and_pages_fail():
    tasks, _ = wikiprofile_release.load_release("data/releases/wikiprofile")
    pages = pl.DataFrame(
        {"page_id": tasks["page_id"].unique().sort(), "title": None, "mean_monthly_views": 10.0},
        schema=benchmarks.PAGES_SCHEMA,
    )
    assert eb.wikiprofile_tasks_schema_check(tasks).passed and eb.wikiprofile_pages_references(pages, tasks).passed
    one_fact = tasks["fact_id"][0]
    assert fails(
        eb.wikiprofile_tasks_schema_check(
            tasks.filter(~((pl.col("fact_id") == one_fact) & (pl.col("task") == "completion")))
        ),
        "facts without their 10 tasks",
    )
    assert fails(eb.wikiprofile_pages_references(pages.tail(-1), tasks), "fact pages not in eval/wikiprofile_pages")
    assert fails(
        eb.wikiprofile_pages_references(pages.with_columns(pl.lit(-1.0).alias("mean_monthly_views")), tasks),
        "mean_monthly_views",
    )


def test_rejects_with_an_unknown_reason_fail():
    row = quit_release.REJECTS.frame([quit_release.REJECTS.row("q1", None, "train.json", "made_up", "?")])
    assert not eb.quit_source_rejects_reasons(row).passed
    assert eb.quit_source_rejects_reasons(quit_release.REJECTS.empty()).passed
