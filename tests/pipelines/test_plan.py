"""The estimate a paper or demo job shows before it runs: LLM calls per stage and partition
from the settings and the registry's roles, against hand-computed counts."""

import shutil

import pytest
import yaml

from assets.quit.settings import FinetuneSettings, QuitSettings
from assets.recor.settings import RecorSettings
from assets.wikiprofile.settings import WikiProfileSettings
from pipelines.definitions import defs
from pipelines.plan import (
    RATES,
    TRAINING_RATES,
    Stage,
    estimate,
    finetune_plan,
    plan_table,
    profile_plan,
    quit_plan,
    recor_plan,
    wikiprofile_plan,
)
from resources.llm import REGISTRY_PATH, role_aliases

# The paper's models: three labelers, three readers (one of them also a labeler), a judge.
ROLES = {
    "quit": {"labelers": ["gemma", "qwen", "llama"], "readers": ["llama", "gemma4b", "qwen8b"], "judge": "gpt"},
    "wikiprofile": {"builder": "gpt", "grader": "gpt", "subjects": ["qwen", "llama"]},
    "recor": {"builder": "gpt", "judge": "gpt", "generators": ["qwen", "llama"]},
}
BACKENDS = {"gemma": "vllm", "qwen": "vllm", "llama": "vllm", "gemma4b": "vllm", "qwen8b": "embedded", "gpt": "api"}


def calls(stages: list[Stage]) -> dict[tuple, int]:
    return {(s.job, s.stage, s.partition, s.alias): s.calls for s in stages}


def test_quit_paper_labels_every_passage_of_every_question_once_per_labeler():
    got = calls(quit_plan(QuitSettings(), ROLES, BACKENDS, questions=7401))
    # 7,401 questions x 325 passages, per labeler; the judge at most once per answer
    for labeler in ("gemma", "qwen", "llama"):
        assert got[("quit_labeling", "passage answers", labeler, labeler)] == 2_405_325
        assert got[("quit_labeling", "their grades (at most)", labeler, "gpt")] == 2_405_325
    # closed-book: 7,401 x 3 repeats for each of the 5 distinct labelers and readers
    closed = {k[2]: v for k, v in got.items() if k[1] == "closed-book answers"}
    assert closed == dict.fromkeys(["gemma", "gemma4b", "llama", "qwen", "qwen8b"], 22_203)
    assert sum(v for k, v in got.items() if k[0] == "quit_labeling") == 2 * 3 * 2_405_325


def test_quit_demo_labels_three_questions_and_a_pilot_labels_its_slice():
    demo = calls(quit_plan(QuitSettings(profile="demo"), ROLES, BACKENDS, questions=44))
    assert demo[("quit_labeling", "passage answers", "gemma", "gemma")] == 3 * 325
    assert demo[("quit_parametric", "closed-book answers", "qwen8b", "qwen8b")] == 44 * 3
    pilot = calls(
        quit_plan(QuitSettings(max_labeled_questions=50, labeled_passages_per_question=20), ROLES, BACKENDS, 7401)
    )
    assert pilot[("quit_labeling", "passage answers", "qwen", "qwen")] == 50 * 20
    # fewer questions than the cap: every question is labeled
    few = calls(quit_plan(QuitSettings(max_labeled_questions=50), ROLES, BACKENDS, questions=2))
    assert few[("quit_labeling", "passage answers", "qwen", "qwen")] == 2 * 325


def test_wikiprofile_counts_pages_objects_and_each_subjects_samples():
    paper = calls(wikiprofile_plan(WikiProfileSettings(), ROLES, BACKENDS, pages=20000))
    # 10,000 pages read (max_pages) x 3 calls; 3 objects a page x 3 verifications
    assert paper[("wikiprofile_build", "page categories, entities, objects", None, "gpt")] == 30_000
    assert paper[("wikiprofile_build", "object verification (at most)", None, "gpt")] == 90_000
    # 5,000 facts x 10 questions x 8 samples per subject, graded as often
    for subject in ("qwen", "llama"):
        assert paper[("wikiprofile_profile", "sampled responses", subject, subject)] == 400_000
        assert paper[("wikiprofile_profile", "their grades (at most)", subject, "gpt")] == 400_000
    demo = calls(wikiprofile_plan(WikiProfileSettings(profile="demo"), ROLES, BACKENDS, pages=45))
    assert demo[("wikiprofile_build", "page categories, entities, objects", None, "gpt")] == 12 * 3
    # 8 facts kept x 10 questions x 4 samples
    assert demo[("wikiprofile_profile", "sampled responses", "qwen", "qwen")] == 320


def test_wall_time_comes_from_the_backends_measured_rate_and_none_for_an_api():
    labeling = Stage("quit_labeling", "passage answers", "a", "a", "embedded", 2_900)
    low, high = RATES["embedded"]
    assert labeling.seconds() == pytest.approx((2_900 / high, 2_900 / low))
    assert Stage("x", "y", None, "gpt", "api", 10).seconds() is None
    table = plan_table([labeling, Stage("quit_labeling", "their grades (at most)", "a", "gpt", "api", 10)])
    assert "| passage answers | a | a | 2,900 | 16.7 min - 22.0 min (embedded) |" in table
    assert "| their grades (at most) | a | gpt | 10 | not measured |" in table


def test_the_paper_and_demo_jobs_descriptions_carry_the_estimate():
    labelers = role_aliases("quit.labelers")
    paper = defs.resolve_job_def("quit_labeling_paper").description
    assert "Estimate for the paper profile at 7,401 questions" in paper
    for labeler in labelers:
        assert f"| passage answers | {labeler} | {labeler} | 2,405,325 |" in paper
    demo = defs.resolve_job_def("quit_labeling_demo").description
    assert f"| passage answers | {labelers[0]} | {labelers[0]} | 975 |" in demo
    subjects = role_aliases("wikiprofile.subjects")
    profile = defs.resolve_job_def("wikiprofile_profile_paper").description
    assert f"| sampled responses | {subjects[0]} | {subjects[0]} | 400,000 |" in profile
    # a job that asks no model the plan counts gets no table
    assert "Estimate" not in defs.resolve_job_def("quit_passages_paper").description


def test_recor_paper_build_and_evaluation_of_a_domain_at_most():
    got = calls(recor_plan(RecorSettings(), ROLES, BACKENDS, binding=True, questions=100, gold=5))
    build = {k[1]: v for k, v in got.items() if k[0] == "recor_build"}
    # 100 questions of up to 12 turns (1,200), 5 facts an aspect, 3 question retries, 5 gold
    # documents rated on 4 criteria a turn, 4 quality scores a conversation and 2 labels a turn
    assert build == {
        "hard-negative queries (StackExchange)": 100,
        "gold document alignment": 500,
        "aspects and their order": 300,
        "facts (at most)": 1_200,
        "fact checks (at most)": 6_000,
        "turn questions and retries (at most)": 4_800,
        "turn relevance and flow (at most)": 2_400,
        "document ratings (at most)": 24_000,
        "turn reasoning and answers (at most)": 2_400,
        "conversation checks": 100,
        "quality scores and turn labels (at most)": 2_800,
    }
    assert got[("recor_queries", "rewrites and search rationales (at most)", "a domain", "gpt")] == 2_400
    for generator in ("qwen", "llama"):
        # three modes a turn; 5 dimensions graded in two modes, 4 without passages
        assert got[("recor_generation", "answers, three modes (at most)", "a domain", generator)] == 3_600
    grades = [
        s for s in recor_plan(RecorSettings(), ROLES, BACKENDS, True, 100, 5) if s.stage == "their grades (at most)"
    ]
    assert [(s.alias, s.calls) for s in grades] == [("gpt", 16_800), ("gpt", 16_800)]


def test_recor_advisory_builder_skips_the_document_checks_and_the_demo_is_smaller():
    advisory = calls(recor_plan(RecorSettings(), ROLES, BACKENDS, binding=False, questions=100, gold=5))
    stages = {k[1] for k in advisory}
    assert "gold document alignment" not in stages and "fact checks (at most)" not in stages
    demo = calls(recor_plan(RecorSettings(profile="demo"), ROLES, BACKENDS, binding=True, questions=2, gold=3))
    # 2 questions of at most 4 turns, 2 facts an aspect, 3 gold documents x 4 criteria a turn
    assert demo[("recor_build", "facts (at most)", "a domain", "gpt")] == 8
    assert demo[("recor_build", "fact checks (at most)", "a domain", "gpt")] == 16
    assert demo[("recor_build", "document ratings (at most)", "a domain", "gpt")] == 96
    assert demo[("recor_build", "quality scores and turn labels (at most)", "a domain", "gpt")] == 2 * 4 + 8 * 2


def test_finetune_counts_training_steps_of_three_models_per_base():
    ten = finetune_plan(FinetuneSettings(positives=[10]), ["minilm", "e5"], train_questions=5000)
    # 5,000 questions x 10 positives = 50,000 triples at batch 64; the cross-encoder reads two rows a triple
    assert [(s.partition, s.stage, s.calls) for s in ten[:3]] == [
        ("minilm", "bi-encoder training steps", 782),
        ("minilm", "late interaction training steps", 782),
        ("minilm", "cross-encoder training steps", 1_563),
    ]
    assert {s.partition for s in ten} == {"minilm", "e5"} and all(s.unit == "steps" for s in ten)
    assert ten[0].seconds() is None  # batch 64 was not measured
    assert finetune_plan(FinetuneSettings(positives=[10], epochs=2), ["b"], 5000)[2].calls == 3_126
    # the paper's sweep trains a model per count: 5,000 x n triples at batch 64 for n = 1, 5, 10, 50, 100, 200
    paper = finetune_plan(FinetuneSettings(), ["minilm"], train_questions=5000)
    assert [s.calls for s in paper] == [79 + 391 + 782 + 3_907 + 7_813 + 15_625] * 2 + [
        157 + 782 + 1_563 + 7_813 + 15_625 + 31_250
    ]
    # the demo trains a fixed 20 steps, however little data there is
    demo = finetune_plan(FinetuneSettings(profile="demo"), ["minilm"], train_questions=2)
    assert [s.calls for s in demo] == [20, 20, 20]
    low, high = TRAINING_RATES["batch 8"]
    assert demo[0].seconds() == pytest.approx((20 / high, 20 / low))
    assert "| cross-encoder training steps | minilm | minilm | 1,563 | not measured (batch 64) |" in plan_table(ten)


def test_the_recor_and_finetune_jobs_carry_their_estimate_and_the_registry_file():
    builder = role_aliases("recor.builder")[0]
    paper = defs.resolve_job_def("recor_build_paper").description
    assert "at 100 source questions a domain with 5 gold documents each" in paper
    assert f"| document ratings (at most) | a domain | {builder} | 24,000 |" in paper
    # the evaluation's calls follow the built benchmark's size, so the build quotes them
    assert f"| recor_queries: rewrites and search rationales (at most) | a domain | {builder} | 2,400 |" in paper
    assert f"models from the registry {REGISTRY_PATH}" in paper
    finetune = defs.resolve_job_def("quit_finetune_paper").description
    assert "| bi-encoder training steps | minilm | minilm | 28,597 |" in finetune
    assert (
        "| bi-encoder training steps | minilm | minilm | 20 |" in defs.resolve_job_def("quit_finetune_demo").description
    )


def test_the_estimate_names_the_registry_it_was_computed_from(tmp_path):
    registry = tmp_path / "models.yaml"
    shutil.copy(REGISTRY_PATH, registry)
    raw = yaml.safe_load(registry.read_text())
    raw["roles"]["quit"]["labelers"] = ["judge-a", "judge-b"]
    alias = next(iter(raw["models"]))
    raw["models"] |= {"judge-a": raw["models"][alias], "judge-b": raw["models"][alias]}
    registry.write_text(yaml.safe_dump(raw))
    text = estimate(profile_plan("paper", path=str(registry)), "quit_labeling", "paper", path=str(registry))
    assert f"models from the registry {registry}" in text
    assert "| passage answers | judge-b | judge-b | 2,405,325 |" in text


def test_the_registry_sensor_names_the_model_registry_and_when_its_path_is_fixed():
    from pipelines.sensors import registry_partitions_sensor

    text = registry_partitions_sensor.description
    assert f"models {REGISTRY_PATH}" in text
    # the path is the environment's when `make ui` started; the file is read every tick
    assert "BENCHFOUNDRY_MODELS" in text and "restart `make ui`" in text and "every tick" in text
