"""What the default ``make run`` evaluates: QUIT's evaluation reads a slice of the bundled
release sample (``pipelines.stages.DEMO_EVALUATION``), whose passages carry both
labels, and WikiProfile's profiling a slice of its sample that holds a fact the embedded
model knows, while RECOR's reads its build. Checked on the plan and the run config, and on
the slice as the project's own loader reads it (in process, nothing run)."""

from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from assets.eval.sources import QuitSource, WikiProfileSource, quit_source, wikiprofile_source
from pipelines import run_default, stages
from resources.storage import StorageResource

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def plan(monkeypatch, capsys):
    """``main(args + --plan)``'s output lines."""
    monkeypatch.chdir(ROOT)

    def run(*args: str) -> list[str]:
        assert run_default.main([*args, "--plan"]) == 0
        return capsys.readouterr().out.splitlines()

    return run


def quit_evaluated(preset: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The questions and qrels that the demo's QUIT evaluation reads: the source asset run on
    the config ``make run`` gives it."""
    config = stages.demo_configs(preset)["quit_eval_source"]["ops"]["eval_quit_source"]["config"]
    outputs = {
        o.output_name: o.value
        for o in quit_source(config=QuitSource(**config), storage=StorageResource(root=str(ROOT)))
    }
    return outputs["quit_questions"], outputs["quit_qrels"]


def wikiprofile_profiled(preset: str) -> pl.DataFrame:
    """The tasks that the demo's WikiProfile profiling reads, as its source asset gives them."""
    config = stages.demo_configs(preset)["wikiprofile_eval_source"]["ops"]["eval_wikiprofile_source"]["config"]
    outputs = {
        o.output_name: o.value
        for o in wikiprofile_source(config=WikiProfileSource(**config), storage=StorageResource(root=str(ROOT)))
    }
    return outputs["wikiprofile_tasks"]


@pytest.mark.parametrize("preset", sorted(run_default.PRESETS))
def test_the_demo_evaluates_quit_on_questions_whose_passages_carry_both_labels(monkeypatch, preset):
    monkeypatch.chdir(ROOT)
    questions, qrels = quit_evaluated(preset)
    assert questions.height >= 2
    labels = qrels.group_by("question_id").agg(pl.col("label").unique().sort())
    assert labels.height == questions.height and labels["label"].to_list() == [[1, 2]] * questions.height, labels
    # every question of the slice is searched in the whole corpus: the other questions' passages stay as distractors
    assert qrels.height == 325 * questions.height


def test_the_demo_evaluates_the_test_questions_of_the_quit_sample(monkeypatch):
    """QUIT's tables score the test split, so the demo's slice holds it (and the full
    preset the dev split besides, to report on request); never train."""
    monkeypatch.chdir(ROOT)
    assert sorted(quit_evaluated("quick")[0]["split"]) == ["test", "test"]
    assert sorted(quit_evaluated("full")[0]["split"]) == ["dev", "dev", "test", "test"]


@pytest.mark.parametrize("preset", sorted(run_default.PRESETS))
def test_the_demo_profiles_the_wikiprofile_fact_the_embedded_model_knows(monkeypatch, preset):
    """Fact 8 (Tokyo, the capital of Japan) is the sample's one fact that the embedded model
    answers right on all four knowledge questions at 4 samples; the quick slice pairs it with
    fact 0, which it does not know, and costs what the 2 built facts did."""
    monkeypatch.chdir(ROOT)
    tasks = wikiprofile_profiled(preset)
    known = tasks.filter((pl.col("fact_id") == "8") & (pl.col("task") == "direct")).row(0, named=True)
    assert (known["question"], known["answer"]) == ("Which city is the capital of Japan?", "Tokyo")
    assert tasks.group_by("fact_id").len()["len"].to_list() == [10] * tasks["fact_id"].n_unique()
    if preset == "quick":
        assert sorted(tasks["fact_id"].unique()) == ["0", "8"]


def test_recor_is_evaluated_on_its_build_and_a_release_run_keeps_its_own_slices():
    assert (
        set(stages.demo_configs("quick"))
        == set(stages.demo_configs("full"))
        == {"quit_eval_source", "wikiprofile_eval_source"}
    )
    assert stages.release_configs(stages.RELEASE_SLICES["quick"])["quit_eval_source"] == stages.release_config(
        "quit_eval_source", "data/releases/quit", splits=["train", "test"]
    )
    assert set(stages.release_configs({})) == set(stages.SOURCE_STAGES)


def test_the_first_line_says_what_the_demo_evaluates(plan):
    first_line = plan()[0]
    assert (
        "QUIT takes 1 question of each source, labels 65 of the 325 passages of 1 question (convergence over 2 wrong "
        "candidates; rerankers reorder the top 10) and evaluates the test "
        "questions of the release sample data/releases/quit (passages of both labels; tables on the test split)"
        in first_line
    )
    assert (
        "WikiProfile reads up to 6 pages, keeps up to 2 facts, profiles facts 0 and 8 of the release sample "
        "data/releases/wikiprofile and samples" in first_line
    )
    assert "RECOR builds and evaluates law" in first_line
    full = plan("--preset", "full")[0]
    assert "QUIT labels the 325 passages of 3 questions (convergence over 3 wrong candidates)" in full
    assert "evaluates the dev and test questions of the release sample" in full
    assert "profiles all facts of the release sample data/releases/wikiprofile" in full
    # the papers' configuration and a release run say nothing of a demo evaluation
    for args in (("--profile", "paper"), ("--from-release",)):
        assert "release sample data/releases/quit (passages" not in plan(*args)[0], args
        assert "profiles facts" not in plan(*args)[0], args


def test_the_demo_run_config_points_only_quit_and_wikiprofile_at_their_samples(monkeypatch, tmp_path):
    """What ``main`` passes to :func:`run_default.run_stages` for the default run."""
    seen = {}
    # the run's log file
    monkeypatch.setenv("BENCHFOUNDRY_CACHE", str(tmp_path))
    monkeypatch.setattr(run_default, "build_defs", lambda **_: None)
    monkeypatch.setattr(run_default, "sync_partitions", lambda *_, **__: None)
    monkeypatch.setattr(dg.DagsterInstance, "get", staticmethod(lambda: None))
    monkeypatch.setattr(
        run_default, "run_stages", lambda defs, instance, stages, configs=None, **_: seen.update(configs) or False
    )
    monkeypatch.chdir(ROOT)
    assert run_default.main([]) == 1
    assert seen == stages.demo_configs("quick")
    assert seen["quit_eval_source"]["ops"]["eval_quit_source"]["config"] == {
        "source": "release",
        "release_path": "data/releases/quit",
        "splits": ["test"],
    }
    assert seen["wikiprofile_eval_source"]["ops"]["eval_wikiprofile_source"]["config"] == {
        "source": "release",
        "release_path": "data/releases/wikiprofile",
        "fact_ids": ["0", "8"],
    }
