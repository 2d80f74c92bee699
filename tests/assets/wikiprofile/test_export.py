"""WikiProfile's export read back by the community's readers: the ``tasks`` and ``pages``
configurations through ``datasets``, both record sets through ``mlcroissant``; the asset
writes under the storage root with no BEIR folder (nothing is retrieved in WikiProfile), its
check passes, and a manifest without its data fails it."""

import polars as pl
import pytest

from assets.common.sharing import BuildRecord, write_share
from assets.wikiprofile import export
from assets.wikiprofile.assets import wikiprofile_export
from assets.wikiprofile.release import BENCHMARK_SCHEMA
from assets.wikiprofile.settings import WikiProfileSettings
from assets.wikiprofile.sources import PAGE_SCHEMA
from checks.factories import export_problems
from checks.wikiprofile.release import release_checks
from tests.assets.common.export_readers import croissant_rows, hf_rows, materialize_export

TASKS = ("completion", "contextual", "direct", "direct_natural", "reverse", "reverse_natural")


def benchmark() -> pl.DataFrame:
    """Two facts of page p1, in the built table's schema (six of the ten tasks: enough for the formats)."""
    rows = [
        {
            "fact_id": f"f{f}",
            "page_id": "p1",
            "category": "people",
            "type_group": "person",
            "task": task,
            "question": f"Question {task} of fact {f}?",
            "answer": "Ada Lovelace",
            "options": ["Ada Lovelace", "Mary Somerville", "Emmy Noether", "Sofia Kovalevskaya"]
            if task.endswith("natural")
            else [],
            "subject": "Analytical Engine",
            "object": "Ada Lovelace",
            "question_origin": "model",
            "options_origin": "model",
        }
        for f in (1, 2)
        for task in TASKS
    ]
    return pl.DataFrame(rows, schema=BENCHMARK_SCHEMA)


def pages() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "page_id": ["p1", "p2"],
            "title": ["Analytical Engine", "Unused page"],
            "summary": ["The Analytical Engine was a proposed computer.", "No fact kept."],
            "words": [7, 3],
            "months": [12, 12],
            "mean_monthly_views": [1500.5, 3.0],
            "reference_category": ["technology", None],
        },
        schema=PAGE_SCHEMA,
    )


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wikiprofile_export")
    share = export.share(benchmark(), pages(), BuildRecord("run-3", "demo"), {"wikiprofile.builder": "smollm2"}, {})
    return folder, write_share(str(folder), share)


def test_both_configs_load_with_datasets_and_croissant_reads_them(exported, tmp_path):
    folder, manifest = exported
    # the pages of kept facts only
    assert hf_rows(folder, ["tasks", "pages"], tmp_path) == {"tasks": {"test": 12}, "pages": {"test": 1}}
    assert croissant_rows(folder) == {"tasks_test": 12, "pages_test": 1}
    assert "eprint = {2602.14080}" in (folder / "hf" / "README.md").read_text()
    assert set(manifest["format"]) == {"hf", "croissant"} and not (folder / "beir").exists()


def test_the_asset_writes_under_the_storage_root_and_its_check_passes(tmp_path):
    stored = {("wikiprofile", "benchmark"): benchmark(), ("wikiprofile", "source_pages"): pages()}
    settings = {"wikiprofile_settings": WikiProfileSettings()}
    evaluation = materialize_export(wikiprofile_export, release_checks, stored, tmp_path, settings)
    assert evaluation.passed, evaluation.metadata
    assert (tmp_path / "wikiprofile" / "export" / "hf" / "data" / "tasks").is_dir()


def test_a_manifest_without_data_fails_the_check(exported):
    manifest = exported[1]
    assert export_problems(manifest.filter(pl.col("format") != "hf"), beir=False) == [
        "the dataset card hf/README.md is not in the manifest",
        "a Parquet data file under hf/data/ is not in the manifest",
    ]
