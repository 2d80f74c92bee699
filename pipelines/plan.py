"""What a run will ask of the models before it is launched: LLM calls per stage and
partition, and a wall-time range, computed from a profile's settings and the model
registry's roles. The paper and demo jobs quote it in their descriptions, so a paper launch
shows its size before it starts.

Only the settings and the registry are read (the job definitions load on every UI reload):
where a count comes from the sources (QUIT's questions, the pages available) the caller
passes it. Calls are upper bounds where a step asks only some records (a judge call only for
an answer that is not an exact match, a grade only for a parsable response).
"""

from __future__ import annotations

import dataclasses
import math

from assets.quit.rules import PASSAGES_PER_QUESTION
from assets.quit.settings import QuitSettings
from assets.wikiprofile.settings import WikiProfileSettings
from assets.wikiprofile.steps import VERIFICATIONS
from resources.llm import REGISTRY_PATH, load_registry, load_roles

# Calls a second a backend answers, low to high, as measured in BENCHMARKS.md:
# - embedded: "LLM calls per labeled passage" (713 calls in 315 s, 2.26/s) and `make run`'s
#   labeling (2.9 calls/s), SmolLM2-135M through llama.cpp on 2 CPU cores;
# - vllm: "The LLM client against served models": `LLMResource.run` at 118.9-147.8 calls/s,
#   and one client core's ceiling of about 240 calls/s (4.2 ms of client CPU a call), which
#   is the limit against a GPU server.
# A hosted API's rate is its provider's limit, not measured here: no time is given for it.
RATES: dict[str, tuple[float, float] | None] = {"embedded": (2.2, 2.9), "vllm": (118.9, 240.0), "api": None}

# WikiProfile asks ten questions of each fact (2 encoding, 4 knowledge, 4 multiple choice).
QUESTIONS_PER_FACT = 10
# WikiProfile's construction asks three calls of each page: its category, its entities and
# the objects chosen among them.
CALLS_PER_PAGE = 3
# Source sizes the plans are quoted at, since the definitions do not read the sources: the
# paper's 7,401 QUIT questions (2.4M passages) and 10,000 pages, and the bundled samples (30
# TriviaHG and 14 WikiHint questions before screening, an upper bound; 45 pages).
QUIT_QUESTIONS = {"paper": 7401, "demo": 44}
WIKIPROFILE_PAGES = {"paper": 10000, "demo": 45}


@dataclasses.dataclass(frozen=True)
class Stage:
    """One stage's LLM calls in one partition (``None``: the job is not partitioned)."""

    job: str
    stage: str
    partition: str | None
    alias: str
    backend: str
    calls: int

    def seconds(self) -> tuple[float, float] | None:
        """Wall time at the backend's measured rates, fastest to slowest; None where no rate
        is measured."""
        rate = RATES.get(self.backend)
        if rate is None:
            return None
        low, high = rate
        return self.calls / high, self.calls / low


def quit_plan(settings: QuitSettings, roles: dict, backends: dict[str, str], questions: int) -> list[Stage]:
    """QUIT's closed-book answers (each model of ``quit_models``: every question
    ``parametric_repeats`` times, each answer graded by the judge) and labeling (each labeler:
    every labeled question's passages, each answer judged), for ``questions`` selected
    questions."""
    quit = roles["quit"]
    labelers, readers, judge = list(quit["labelers"]), list(quit["readers"]), quit["judge"]
    answers = questions * settings.parametric_repeats
    labeled = questions if settings.max_labeled_questions is None else min(questions, settings.max_labeled_questions)
    passages = labeled * (settings.labeled_passages_per_question or PASSAGES_PER_QUESTION)
    stages = []
    for model in sorted(set(labelers) | set(readers)):
        stages += [Stage("quit_parametric", "closed-book answers", model, model, backends[model], answers),
                   Stage("quit_parametric", "their grades (at most)", model, judge, backends[judge], answers)]
    for labeler in labelers:
        stages += [Stage("quit_labeling", "passage answers", labeler, labeler, backends[labeler], passages),
                   Stage("quit_labeling", "their grades (at most)", labeler, judge, backends[judge], passages)]
    return stages


def wikiprofile_plan(settings: WikiProfileSettings, roles: dict, backends: dict[str, str], pages: int) -> list[Stage]:
    """WikiProfile's construction (each of ``pages`` read pages, at most ``max_pages``: its
    category, entities and objects, and every object verified) and profiling (each subject:
    every question of the facts kept, ``n_samples`` times, each response graded). The ten
    questions' generation and refinement per fact are not counted: how many calls a fact
    takes depends on which drafts pass."""
    wiki = roles["wikiprofile"]
    builder, grader = wiki["builder"], wiki["grader"]
    read = pages if settings.max_pages is None else min(pages, settings.max_pages)
    objects = read * settings.objects_per_page
    facts = objects if settings.downsample_to is None else min(objects, settings.downsample_to)
    responses = facts * QUESTIONS_PER_FACT * settings.n_samples
    stages = [Stage("wikiprofile_build", "page categories, entities, objects", None, builder, backends[builder],
                    read * CALLS_PER_PAGE),
              Stage("wikiprofile_build", "object verification (at most)", None, builder, backends[builder],
                    objects * len(VERIFICATIONS))]
    for subject in wiki["subjects"]:
        stages += [Stage("wikiprofile_profile", "sampled responses", subject, subject, backends[subject], responses),
                   Stage("wikiprofile_profile", "their grades (at most)", subject, grader, backends[grader], responses)]
    return stages


def registry_plans(quit: QuitSettings, wikiprofile: WikiProfileSettings, quit_questions: int, pages: int,
                   path: str = REGISTRY_PATH) -> list[Stage]:
    """Both plans with the roles and backends of the registry at ``path``."""
    roles = load_roles(path)
    backends = {alias: spec.backend for alias, spec in load_registry(path).items()}
    return quit_plan(quit, roles, backends, quit_questions) + wikiprofile_plan(wikiprofile, roles, backends, pages)


def duration(seconds: float) -> str:
    """A duration rounded for reading: seconds, minutes, hours or days."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{math.ceil(seconds)} s"


def plan_table(stages: list[Stage]) -> str:
    """A Markdown table of ``stages``: stage, partition, model, calls and wall time."""
    rows = ["| stage | partition | model | LLM calls | wall time |", "|---|---|---|---|---|"]
    for s in stages:
        span = s.seconds()
        time = "not measured" if span is None else f"{duration(span[0])} - {duration(span[1])} ({s.backend})"
        rows.append(f"| {s.stage} | {s.partition or '-'} | {s.alias} | {s.calls:,} | {time} |")
    return "\n".join(rows)
