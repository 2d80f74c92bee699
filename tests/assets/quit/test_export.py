"""QUIT's export read back by the community's readers: every configuration and split through
``datasets``, every record set through ``mlcroissant``, every split's BEIR qrels through BEIR's
loader, on a slice of the bundled sample's build; the asset writes under the storage root, its
check passes, and a broken manifest fails it."""

import polars as pl
import pytest

from assets.common.sharing import BuildRecord, write_share
from assets.quit import export
from assets.quit.assets import quit_export
from assets.quit.settings import QuitSettings
from checks.factories import export_problems
from checks.quit.release import release_checks
from tests.assets.common.export_readers import beir_load, croissant_rows, hf_rows, materialize_export
from tests.assets.quit.test_release import built

RECORD = BuildRecord("run-1", "demo", {"quit/benchmark_questions": "2"}, {"quit/source_questions": 40})


@pytest.fixture(scope="module")
def tables():
    """Two questions of each split, their passages and qrels, in the built tables' schemas."""
    questions, corpus, qrels = built()
    questions = pl.concat([questions.filter(pl.col("split") == s).head(2) for s in ("train", "dev", "test")])
    corpus = corpus.filter(pl.col("question_id").is_in(questions["question_id"]))
    qrels = qrels.filter(pl.col("question_id").is_in(questions["question_id"]))
    return (
        questions,
        corpus.head(corpus.height - 3),
        qrels.filter(pl.col("passage_id").is_in(corpus.head(corpus.height - 3)["passage_id"])),
    )


@pytest.fixture(scope="module")
def exported(tables, tmp_path_factory):
    folder = tmp_path_factory.mktemp("quit_export")
    share = export.share(*tables, RECORD, {"quit.judge": "smollm2 (local/smollm2)"}, {"test_size": 12})
    return folder, write_share(str(folder), share)


def test_every_config_and_split_loads_with_datasets(tables, exported, tmp_path):
    questions, corpus, qrels = tables
    folder, manifest = exported
    split_of = dict(questions.select("question_id", "split").iter_rows())
    qrels_per_split = qrels.group_by(pl.col("question_id").replace_strict(split_of).alias("split")).len()
    assert hf_rows(folder, ["questions", "corpus", "qrels"], tmp_path) == {
        "questions": {"train": 2, "dev": 2, "test": 2},
        "corpus": {"corpus": corpus.height},
        "qrels": dict(qrels_per_split.iter_rows()),
    }
    card = (folder / "hf" / "README.md").read_text()
    assert "run-1" in card and "Inferential Question Answering" in card and "smollm2 (local/smollm2)" in card
    assert "| questions read | 40 |" in card
    assert set(manifest["format"]) == {"hf", "croissant", "beir"}


def test_croissant_validates_and_reads_every_record_set(tables, exported):
    questions, corpus, qrels = tables
    rows = croissant_rows(exported[0])
    assert rows["corpus_corpus"] == corpus.height
    assert {k: v for k, v in rows.items() if k.startswith("questions_")} == {
        "questions_train": 2,
        "questions_dev": 2,
        "questions_test": 2,
    }
    assert sum(v for k, v in rows.items() if k.startswith("qrels_")) == qrels.height


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_beirs_loader_reads_each_split_with_graded_scores(tables, exported, split):
    questions, corpus, qrels = tables
    loaded_corpus, queries, loaded_qrels = beir_load(exported[0] / "beir", split)
    assert len(loaded_corpus) == corpus.height
    # no passage is titled with its question (the release's corpus title)
    assert {d["title"] for d in loaded_corpus.values()} == {""}
    ids = set(questions.filter(pl.col("split") == split)["question_id"])
    part = qrels.filter(pl.col("question_id").is_in(ids))
    assert set(queries) == set(part["question_id"])
    assert {(q, d, s) for q, docs in loaded_qrels.items() for d, s in docs.items()} == set(part.iter_rows())


def test_the_asset_writes_under_the_storage_root_and_its_check_passes(tables, tmp_path):
    names = ("benchmark_questions", "benchmark_corpus", "benchmark_qrels")
    stored = {("quit", name): frame for name, frame in zip(names, tables)}
    evaluation = materialize_export(quit_export, release_checks, stored, tmp_path, {"quit_settings": QuitSettings()})
    assert evaluation.passed, evaluation.metadata
    folder = tmp_path / "quit" / "export"
    assert (folder / "hf" / "croissant.json").exists() and (folder / "beir" / "qrels" / "test.tsv").exists()


def test_a_broken_manifest_fails_the_check(exported):
    folder, manifest = exported
    assert export_problems(manifest, beir=True) == []
    (folder / "beir" / "qrels" / "dev.tsv").rename(folder / "beir" / "qrels" / "dev.moved")
    try:
        assert export_problems(manifest, beir=True) == [f"beir/qrels/dev.tsv: nothing at {folder}/beir/qrels/dev.tsv"]
    finally:
        (folder / "beir" / "qrels" / "dev.moved").rename(folder / "beir" / "qrels" / "dev.tsv")
    no_card = manifest.filter(pl.col("file") != "hf/README.md")
    assert export_problems(no_card, beir=True) == ["the dataset card hf/README.md is not in the manifest"]
    no_beir = manifest.filter(pl.col("format") != "beir")
    assert len(export_problems(no_beir, beir=True)) == 3 and export_problems(no_beir, beir=False) == []
    empty = manifest.with_columns(
        pl.when(pl.col("file") == "beir/corpus.jsonl").then(0).otherwise(pl.col("rows")).alias("rows")
    )
    assert export_problems(empty, beir=True) == ["beir/corpus.jsonl: no rows"]
    assert export_problems(manifest.drop("rows"), beir=True) == ["column 'rows' is missing"]
