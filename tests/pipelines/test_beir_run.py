"""``make run --beir``: the registered BEIR-layout datasets a run evaluates, picked by name
only (never a path), their stages and partitions in the plan."""

from pathlib import Path

import pytest

from pipelines import run_default
from pipelines.jobs import BEIR_STAGES, LEADERBOARD_STAGES
from resources import datasets

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT / "tests" / "fixtures" / "beir" / "datasets.yaml"


@pytest.fixture
def registered(monkeypatch):
    """The fixture registry as the deployment's (BENCHFOUNDRY_DATASETS)."""
    monkeypatch.setattr(datasets, "DATASETS_PATH", str(REGISTRY))
    monkeypatch.setattr(run_default, "DATASETS_PATH", str(REGISTRY))
    monkeypatch.chdir(ROOT)


def test_a_run_evaluates_every_registered_dataset_unless_told_otherwise(registered):
    options = run_default.parse([])
    assert options.beir == ["tiny"] and options.wanted == ["quit", "recor", "wikiprofile"]
    planned = run_default.plan(options)
    assert planned.stages[-len(BEIR_STAGES) - 1 :] == [*BEIR_STAGES, *LEADERBOARD_STAGES]
    assert planned.partitions["beir_datasets"] == ["tiny"]
    assert {k.keys_by_dimension["dataset"] for k in planned.partitions["beir_dataset_retrievers"]} == {"tiny"}
    assert run_default.parse(["--benchmarks", "quit"]).beir == []
    assert run_default.parse(["--benchmarks", "quit", "--beir", "tiny"]).beir == ["tiny"]
    assert run_default.parse(["--beir", "none"]).beir == []
    alone = run_default.parse(["--benchmarks", "beir"])
    assert alone.wanted == [] and alone.beir == ["tiny"]
    assert run_default.plan(alone).stages == [*BEIR_STAGES, *LEADERBOARD_STAGES]


def test_a_name_the_registry_does_not_hold_is_refused_naming_the_registry(registered, capsys):
    for args in (["--beir", "tiny,scifact"], ["--beir", "/data/scifact"]):
        with pytest.raises(SystemExit):
            run_default.parse(args)
        error = capsys.readouterr().err
        assert "not in the dataset registry" in error and str(REGISTRY) in error, args


def test_an_empty_registry_evaluates_no_dataset(monkeypatch, tmp_path, capsys):
    empty = tmp_path / "datasets.yaml"
    empty.write_text("datasets: {}\n")
    monkeypatch.setattr(datasets, "DATASETS_PATH", str(empty))
    monkeypatch.setattr(run_default, "DATASETS_PATH", str(empty))
    monkeypatch.chdir(ROOT)
    options = run_default.parse([])
    assert options.beir == [] and not [s for s in run_default.plan(options).stages if s in BEIR_STAGES]
    with pytest.raises(SystemExit):
        run_default.parse(["--benchmarks", "beir"])
    assert f"no dataset is registered in {empty}" in capsys.readouterr().err


def test_the_plan_names_the_datasets(registered, capsys):
    assert run_default.main(["--benchmarks", "beir", "--plan"]) == 0
    out = capsys.readouterr().out
    assert "BEIR-layout datasets of the dataset registry: tiny" in out
    assert "beir_retrieval x " in out and "tiny|bm25" in out
