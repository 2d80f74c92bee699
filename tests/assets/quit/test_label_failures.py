"""Failed labeler and judge calls in QUIT labeling, through the LLM resource with the scripted
model: the passages they would have decided get no label and an error, the labels' check
fails above the configured rate and names them, and a rerun asks only those calls again."""

from __future__ import annotations

import dagster as dg
import polars as pl
import pytest

from assets.quit.assets import passage_answers, passage_labels
from assets.quit.rules import passages_frame
from assets.quit.settings import QuitSettings
from assets.quit.sources import questions_frame
from checks.quit.steps import label_errors
from resources.llm import LLMResource, register_provider
from resources.storage import StorageResource, parquet_io_manager
from tests import scripted
from tests.assets.quit.test_steps import HINTS, question

# q1's labeler fails on its passages of one or two hints that hold the Sherpas hint (1 + 4 x 2
# of them); q2's answers are no exact match, and the judge call that would decide them fails.
Q1_FAILING = 1 + 4 * 2
REGISTRY = """models:
  smollm2: {{model: flaky/rules, backend: api, thinking: cot, verdicts: {verdicts}, sampling: {{temperature: 0.0, max_tokens: 24}}}}
roles:
  quit: {{labelers: [smollm2], readers: [smollm2], judge: smollm2}}
"""


class Flaky(scripted.Scripted):
    """The scripted model, refusing the calls ``fails`` picks while ``down`` is set, and
    counting the calls that reach it."""

    down = True
    calls = 0

    @staticmethod
    def fails(prompt: str) -> bool:
        if "Context:" in prompt and "Which mountain" in prompt:
            context = prompt.rsplit("Context:", 1)[1]
            return "Sherpas" in context and context.count(".") <= 2
        return "Does the candidate give the correct answer" in prompt and "Which peak" in prompt

    def completion(self, *args, **kwargs):
        type(self).calls += 1
        if self.down and self.fails(kwargs["messages"][-1]["content"]):
            raise ConnectionError("the labeler is down")
        return super().completion(*args, **kwargs)


def stub(name: str, frame: pl.DataFrame) -> dg.AssetsDefinition:
    @dg.asset(key=["quit", name])
    def _stub() -> pl.DataFrame:
        return frame

    return _stub


@pytest.fixture
def labeling(tmp_path, instance):
    """Materializes one labeler partition, then the labels with their check; returns the
    labels, the check's evaluation and how many calls reached the model."""
    register_provider("flaky", Flaky())
    qs = questions_frame(
        [
            question("q1", hints=HINTS[:5]),
            question("q2", hints=HINTS[1:6], answer="Mount Everest region", aliases=("Mount Everest region",))
            | {"question": "Which peak is this?"},
        ]
    )
    stubs = [
        stub("passages", passages_frame(qs.select("question_id", "hints"))),
        stub("selected_questions", qs),
        stub("splits", pl.DataFrame({"question_id": ["q1", "q2"], "labeled": [True, True]})),
    ]

    def run(verdicts: str = "binding"):
        registry = tmp_path / f"{verdicts}.yaml"
        registry.write_text(REGISTRY.format(verdicts=verdicts))
        resources = {
            "llm": LLMResource(
                registry_path=str(registry), cache_dir=str(tmp_path / "llm-cache"), backoff_seconds=0.0, max_retries=1
            ),
            "quit_settings": QuitSettings(profile="demo"),
            "storage": StorageResource(root=str(tmp_path / "storage")),
            "io_manager": parquet_io_manager,
        }
        assets = [passage_answers, passage_labels, label_errors, *stubs]
        assert dg.materialize(assets, instance=instance, resources=resources, selection=[a.key for a in stubs]).success
        Flaky.calls = 0
        assert dg.materialize(
            assets, partition_key="smollm2", instance=instance, resources=resources, selection=[passage_answers.key]
        ).success
        labeled = dg.materialize(
            assets,
            instance=instance,
            resources=resources,
            raise_on_error=False,
            selection=[dg.AssetKey(["quit", "passage_labels"]), dg.AssetKey(["quit", "answer_pools"])],
        )
        labels = pl.read_parquet(tmp_path / "storage" / "quit" / "passage_labels.parquet")
        (check,) = labeled.get_asset_check_evaluations()
        return labels, check, Flaky.calls

    return run


def test_failed_calls_leave_passages_unlabeled_and_a_rerun_asks_only_them(labeling):
    Flaky.down = True
    labels, check, _ = labeling()
    unlabeled = labels.filter(pl.col("label").is_null())
    by_question = dict(unlabeled.group_by("question_id").len().iter_rows())
    # q1: the labeler's failed calls; q2: every passage its failed judge call had to decide
    assert by_question == {"q1": Q1_FAILING, "q2": 300}
    assert unlabeled.filter(pl.col("question_id") == "q1")["error"].str.starts_with("smollm2: ").all()
    assert unlabeled.filter(pl.col("question_id") == "q2")["error"].str.starts_with("smollm2: judge: ").all()
    assert labels.filter(pl.col("label").is_not_null() & pl.col("error").is_not_null()).height == 0
    assert not check.passed
    assert check.metadata["offending_rows"].value == Q1_FAILING + 300
    assert check.metadata["error_rate"].value == round((Q1_FAILING + 300) / 650, 4)
    named = check.metadata["offending_ids"].value.split(", ")
    assert set(named) <= set(unlabeled["passage_id"]) and len(named) == 20

    Flaky.down = False
    labels, check, calls = labeling()
    # the 9 labeler calls and the one judge call that failed; everything else from the cache
    assert calls == Q1_FAILING + 1
    assert check.passed and labels["label"].null_count() == 0 and labels["error"].null_count() == labels.height
    q2 = dict(labels.filter(pl.col("question_id") == "q2").group_by("label").len().iter_rows())
    assert q2 == {2: 300, 1: 25}  # the binding judge's Yes decides


def test_an_advisory_judge_is_recorded_and_decides_no_label(labeling, tmp_path):
    Flaky.down = False
    labels, check, _ = labeling("advisory")
    answers = pl.read_parquet(tmp_path / "storage" / "quit" / "passage_answers" / "smollm2.parquet")
    judged = answers.filter(pl.col("question_id") == "q2", pl.col("answer").is_not_null())
    # its Yes is kept beside each of q2's answers; the exact match decides, and none is one
    assert judged.height == 300 and judged["judge"].all() and not judged["correct"].any()
    assert check.passed and labels.filter(pl.col("question_id") == "q2")["label"].to_list() == [1] * 325
