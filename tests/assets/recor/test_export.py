"""RECOR's export read back by the community's readers, for one domain and for two: the
``turns`` and ``documents`` configurations (a split per domain) through ``datasets``, every
record set through ``mlcroissant``, and one BEIR folder per domain and query strategy
through BEIR's loader, with the strategy's query text; the per-domain asset writes under the
storage root and its check passes, and a manifest missing a strategy's qrels fails it."""

import polars as pl
import pytest

from assets.common.sharing import MANIFEST_SCHEMA, BuildRecord, write_share
from assets.partitions import domain_partitions
from assets.recor import export
from assets.recor.export import recor_export, recor_export_all
from assets.recor.settings import RecorSettings
from checks.factories import export_problems
from checks.recor.release import release_checks
from resources.storage import read_parquet, table_uri, write_parquet
from tests.assets.common.export_readers import beir_load, croissant_rows, hf_rows, materialize_export
from tests.assets.recor.test_release import turns as law_turns

RECORD = BuildRecord("run-7", "demo", {"recor/benchmark": "2"}, {"recor/turns": 3})


def benchmark(domain: str) -> pl.DataFrame:
    """The ``recor/benchmark`` table of a domain: the valid conversations' turns with ``qid``."""
    turns = law_turns().with_columns(
        pl.lit(domain).alias("domain"), pl.format("{}_1", pl.lit(domain)).alias("conversation_id")
    )
    return turns.sort("turn_id").with_columns(pl.format("{}_turn_{}", "conversation_id", "turn_id").alias("qid"))


def corpus(domain: str) -> pl.DataFrame:
    ids = ["d1", "d2", "d3", "n1"]
    return pl.DataFrame(
        {
            "domain": [domain] * 4,
            "doc_id": ids,
            "content": [f"{domain} document {i}" for i in ids],
            "role": ["positive"] * 3 + ["negative"],
            "question_id": [f"{domain}_1"] * 3 + [None],
        }
    )


@pytest.fixture(scope="module")
def two_domains(tmp_path_factory):
    folder = tmp_path_factory.mktemp("recor_export")
    domains = export.by_domain(
        pl.concat([benchmark("law"), benchmark("biology")]), pl.concat([corpus("law"), corpus("biology")])
    )
    return folder, write_share(str(folder), export.share(domains, RECORD, {"recor.builder": "smollm2"}, {}))


def test_every_config_and_split_loads_with_datasets(two_domains, tmp_path):
    folder, manifest = two_domains
    assert hf_rows(folder, ["turns", "documents"], tmp_path) == {
        "turns": {"biology": 3, "law": 3},
        "documents": {"biology": 4, "law": 4},
    }
    import datasets

    turns = datasets.load_dataset(str(folder / "hf"), "turns", cache_dir=str(tmp_path))["law"]
    assert turns["history"][0] == "No previous conversation." and turns["qid"] == [f"law_1_turn_{i}" for i in (1, 2, 3)]
    documents = datasets.load_dataset(str(folder / "hf"), "documents", cache_dir=str(tmp_path))["law"]
    assert "role" not in documents.column_names  # relevance is the qrels' to say
    assert (
        "RECOR: Reasoning-focused Multi-turn Conversational Retrieval Benchmark"
        in (folder / "hf" / "README.md").read_text()
    )


def test_croissant_validates_and_reads_every_record_set(two_domains):
    assert croissant_rows(two_domains[0]) == {
        "turns_law": 3,
        "turns_biology": 3,
        "documents_law": 4,
        "documents_biology": 4,
    }


@pytest.mark.parametrize("strategy", list(export.STRATEGIES))
def test_beirs_loader_reads_a_folder_per_domain_and_strategy(two_domains, strategy):
    folder = two_domains[0] / "beir" / "law" / strategy
    corpus_read, queries, qrels = beir_load(folder, "test")
    assert set(corpus_read) == {"d1", "d2", "d3", "n1"} and {d["title"] for d in corpus_read.values()} == {""}
    assert qrels == {"law_1_turn_1": {"d1": 1}, "law_1_turn_2": {"d2": 1, "d1": 1}, "law_1_turn_3": {"d2": 1}}
    first, second = queries["law_1_turn_1"], queries["law_1_turn_2"]
    expected = {
        "baseline": (first == "When may police search a car?", second == "What if I refuse?"),
        "reasoning": (
            first.endswith("Relevant signals: probable cause."),
            second.startswith("What if I refuse?\n\nReasoning:\n"),
        ),
        "history": (
            first == "When may police search a car?",
            "Conversation History:\nQ: When may police search a car?" in second,
        ),
        "history_reasoning": ("Reasoning:" in first, "Conversation History:" in second and "Reasoning:" in second),
        "last_turn": (
            first == "When may police search a car?",
            second.startswith("Previous Question: When may police"),
        ),
    }
    assert expected[strategy] == (True, True)


def test_the_domain_asset_writes_under_the_storage_root_and_its_check_passes(tmp_path):
    stored = {("recor", "benchmark"): benchmark("law"), ("recor", "corpus"): corpus("law")}
    settings = {"recor_settings": RecorSettings()}
    evaluation = materialize_export(recor_export, release_checks, stored, tmp_path, settings, partition="law")
    assert evaluation.passed, evaluation.metadata
    folder = tmp_path / "recor" / "export" / "law"
    assert (folder / "hf" / "croissant.json").exists()
    assert sorted(p.name for p in (folder / "beir" / "law").iterdir()) == sorted(export.STRATEGIES)


def test_a_manifest_missing_a_file_fails_the_check(two_domains):
    folder, manifest = two_domains
    assert export_problems(manifest, beir=True) == []
    gone = folder / "beir" / "biology" / "last_turn" / "qrels" / "test.tsv"
    gone.rename(gone.with_suffix(".moved"))
    try:
        assert export_problems(manifest, beir=True) == [f"beir/biology/last_turn/qrels/test.tsv: nothing at {gone}"]
    finally:
        gone.with_suffix(".moved").rename(gone)
    assert export_problems(manifest.filter(~pl.col("file").str.ends_with(".tsv")), beir=True) == [
        "BEIR's .tsv is not in the manifest"
    ]


def test_the_all_domains_asset_reads_every_built_domain(tmp_path):
    """recor/export_all reads the domains built so far (no other is materialized) into one
    dataset; a domain that kept no turn (drones) is left out and named."""
    for domain in ("law", "biology", "drones"):
        turns = benchmark(domain).clear() if domain == "drones" else benchmark(domain)
        stored = {("recor", "benchmark"): turns, ("recor", "corpus"): corpus(domain)}
        for path, frame in stored.items():
            write_parquet(table_uri(str(tmp_path), path, domain), frame)
    settings, metadata = {"recor_settings": RecorSettings()}, {}
    evaluation = materialize_export(
        recor_export_all,
        release_checks,
        {},
        tmp_path,
        settings,
        upstream_partitions=domain_partitions,
        metadata=metadata,
    )
    assert evaluation.passed, evaluation.metadata
    assert metadata["domains_left_out"].value == "drones"
    folder = tmp_path / "recor" / "export" / "all"
    assert sorted(p.name for p in (folder / "beir").iterdir()) == ["biology", "law"]
    assert sorted(p.name for p in (folder / "hf" / "data" / "turns").iterdir()) == [
        "biology-00000-of-00001.parquet",
        "law-00000-of-00001.parquet",
    ]


def test_a_domain_that_kept_no_turn_exports_nothing_and_says_so(tmp_path):
    stored = {("recor", "benchmark"): benchmark("drones").clear(), ("recor", "corpus"): corpus("drones")}
    settings, metadata = {"recor_settings": RecorSettings()}, {}
    evaluation = materialize_export(
        recor_export, release_checks, stored, tmp_path, settings, partition="drones", metadata=metadata
    )
    assert evaluation.passed and metadata["domains_left_out"].value == "drones"
    assert read_parquet(table_uri(str(tmp_path), ("recor", "export"), "drones")).is_empty()
    assert not (tmp_path / "recor" / "export" / "drones").exists()
    # an export that wrote anything must have written it all: only an empty manifest passes bare
    assert export_problems(pl.DataFrame(schema=MANIFEST_SCHEMA), beir=True) == []
