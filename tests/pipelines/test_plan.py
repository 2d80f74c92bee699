"""The estimate a paper or demo job shows before it runs: LLM calls per stage and partition
from the settings and the registry's roles, against hand-computed counts."""

import pytest

from assets.quit.settings import QuitSettings
from assets.wikiprofile.settings import WikiProfileSettings
from pipelines.definitions import defs
from pipelines.plan import RATES, Stage, plan_table, quit_plan, wikiprofile_plan
from resources.llm import role_aliases

# The paper's models: three labelers, three readers (one of them also a labeler), a judge.
ROLES = {"quit": {"labelers": ["gemma", "qwen", "llama"], "readers": ["llama", "gemma4b", "qwen8b"], "judge": "gpt"},
         "wikiprofile": {"builder": "gpt", "grader": "gpt", "subjects": ["qwen", "llama"]}}
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
    pilot = calls(quit_plan(QuitSettings(max_labeled_questions=50, labeled_passages_per_question=20), ROLES, BACKENDS, 7401))
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
    assert "Estimate at 7,401 questions" in paper
    for labeler in labelers:
        assert f"| passage answers | {labeler} | {labeler} | 2,405,325 |" in paper
    demo = defs.resolve_job_def("quit_labeling_demo").description
    assert f"| passage answers | {labelers[0]} | {labelers[0]} | 975 |" in demo
    subjects = role_aliases("wikiprofile.subjects")
    profile = defs.resolve_job_def("wikiprofile_profile_paper").description
    assert f"| sampled responses | {subjects[0]} | {subjects[0]} | 400,000 |" in profile
    # a job that asks no model the plan counts gets no table
    assert "Estimate" not in defs.resolve_job_def("quit_passages_paper").description
