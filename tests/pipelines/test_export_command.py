"""``python -m pipelines.export``: a stored build written in the formats asked for, where the
assets write it or under ``--out``, each file printed; a benchmark not built, or a format it
has not, is an error with exit code 2 naming what to do."""

import re
import subprocess
import sys

import polars as pl
import pytest

from assets.quit.release import SPLITS
from pipelines.export import main
from resources.storage import table_uri, write_parquet
from tests.assets.common.export_readers import beir_load, croissant_rows
from tests.assets.quit.test_release import built
from tests.assets.recor.test_export import benchmark as recor_benchmark
from tests.assets.recor.test_export import corpus as recor_corpus
from tests.assets.wikiprofile.test_export import benchmark as wikiprofile_benchmark
from tests.assets.wikiprofile.test_export import pages


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHFOUNDRY_STORAGE", str(tmp_path / "storage"))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    return tmp_path / "storage"


def store(root, benchmark: str, name: str, frame: pl.DataFrame, partition: str | None = None) -> None:
    write_parquet(table_uri(str(root), [benchmark, name], partition), frame)


def test_quit_all_formats_where_the_asset_writes_them(root, capsys):
    questions, corpus, qrels = built()
    questions = pl.concat([questions.filter(pl.col("split") == s).head(1) for s in SPLITS])
    corpus = corpus.filter(pl.col("question_id").is_in(questions["question_id"]))
    qrels = qrels.filter(pl.col("question_id").is_in(questions["question_id"]))
    for name, frame in zip(("benchmark_questions", "benchmark_corpus", "benchmark_qrels"), (questions, corpus, qrels)):
        store(root, "quit", name, frame)
    assert main(["--benchmark", "quit", "--format", "all"]) == 0
    folder = root / "quit" / "export"
    printed = capsys.readouterr().out
    assert f"croissant  {folder / 'hf' / 'croissant.json'}" in printed
    assert f"({corpus.height:,} rows)" in printed
    assert croissant_rows(folder)["corpus_corpus"] == corpus.height
    _, queries, loaded = beir_load(folder / "beir", "test")
    assert (
        len(queries) == 1
        and sum(map(len, loaded.values()))
        == qrels.filter(pl.col("question_id").is_in(questions.filter(pl.col("split") == "test")["question_id"])).height
    )
    # without an instance the card says so rather than naming a run
    assert "| build run id | (not recorded) |" in (folder / "hf" / "README.md").read_text()


def test_recor_one_domain_beir_only_under_out(root, tmp_path, capsys):
    store(root, "recor", "benchmark", recor_benchmark("law"), "law")
    store(root, "recor", "corpus", recor_corpus("law"), "law")
    assert main(["--benchmark", "recor", "--domain", "law", "--format", "beir", "--out", str(tmp_path / "out")]) == 0
    assert not (tmp_path / "out" / "hf").exists()
    _, queries, qrels = beir_load(tmp_path / "out" / "beir" / "law" / "history", "test")
    assert len(queries) == 3 and len(qrels) == 3
    assert str(tmp_path / "out" / "beir" / "law" / "history" / "corpus.jsonl") in capsys.readouterr().out


def test_wikiprofile_hf_only(root, capsys):
    store(root, "wikiprofile", "benchmark", wikiprofile_benchmark())
    store(root, "wikiprofile", "source_pages", pages())
    assert main(["--benchmark", "wikiprofile", "--format", "hf"]) == 0
    folder = root / "wikiprofile" / "export" / "hf"
    assert (folder / "README.md").exists() and not (folder / "croissant.json").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--benchmark", "quit", "--format", "hf"], "quit is not built: no table at .*benchmark_questions.parquet"),
        (["--benchmark", "recor", "--format", "all"], "recor is not built: no domain under"),
        (
            ["--benchmark", "recor", "--domain", "law", "--format", "hf"],
            "recor is not built: no table at .*law.parquet",
        ),
    ],
)
def test_a_benchmark_not_built_is_exit_code_2_naming_what_to_materialize(root, capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert re.search(message, err), err
    assert "materialize" in err


def test_wikiprofile_has_no_beir_layout(root):
    with pytest.raises(SystemExit) as e:
        main(["--benchmark", "wikiprofile", "--format", "beir"])
    assert e.value.code == 2


def test_the_module_runs_as_a_command(root):
    done = subprocess.run(
        [sys.executable, "-m", "pipelines.export", "--benchmark", "wikiprofile", "--format", "hf"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "wikiprofile is not built" in done.stderr
