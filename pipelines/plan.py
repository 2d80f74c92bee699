"""What a run will ask of the models before it is launched: LLM calls (or training steps)
per stage and partition, and a wall-time range, computed from a profile's settings and the
model registry's roles. The paper and demo jobs quote it in their descriptions, so a paper
launch shows its size, and the registry file it was computed from, before it starts.

Only the settings and the registries are read (the job definitions load on every UI reload):
where a count comes from the sources (QUIT's questions, the pages available, RECOR's source
questions and their gold documents) the caller passes it. Calls are upper bounds where a
step asks only some records (a judge call only for an answer that is not an exact match, a
grade only for a parsable response, a retry only for a question that failed its checks).
"""

from __future__ import annotations

import dataclasses
import math

from assets.eval.recor.steps import DIMENSIONS as ANSWER_DIMENSIONS
from assets.eval.recor.steps import MODES
from assets.quit.rules import PASSAGES_PER_QUESTION
from assets.quit.settings import FinetuneSettings, QuitSettings
from assets.recor.rules import MAX_TURNS
from assets.recor.settings import RecorSettings
from assets.recor.steps import CRITERIA
from assets.recor.steps import DIMENSIONS as QUALITY_DIMENSIONS
from assets.wikiprofile.settings import WikiProfileSettings
from assets.wikiprofile.steps import VERIFICATIONS
from resources.finetuning import BASES_PATH, load_bases
from resources.llm import REGISTRY_PATH, load_registry, load_roles

# Calls a second a backend answers, low to high, as measured in BENCHMARKS.md:
# - embedded: "LLM calls per labeled passage" (713 calls in 315 s, 2.26/s) and `make run`'s
#   labeling (2.9 calls/s), SmolLM2-135M through llama.cpp on 2 CPU cores;
# - vllm: "The LLM client against served models": `LLMResource.run` at 118.9-147.8 calls/s,
#   and one client core's ceiling of about 240 calls/s (4.2 ms of client CPU a call), which
#   is the limit against a GPU server.
# A hosted API's rate is its provider's limit, not measured here: no time is given for it.
RATES: dict[str, tuple[float, float] | None] = {"embedded": (2.2, 2.9), "vllm": (118.9, 240.0), "api": None}
# Training steps a second on 2 CPU cores at batch 8 (the demo profile), from BENCHMARKS.md's
# issue 18: `quit_finetune[minilm]` trained two models of 20 steps in 21 s with loading,
# saving and the smoke test (1.9 a second), and three in 299 s beside the suite (0.2 a
# second, the trainer's first imports included). Batch 64 (the paper's) was not measured.
TRAINING_RATES: dict[str, tuple[float, float] | None] = {"batch 8": (0.2, 1.9)}

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
# RECOR: source questions a domain, and gold documents a question. The paper kept 707
# conversations in 11 domains (487 in BRIGHT's six, about 81 a domain) over 2,900 positive
# documents (4.1 a conversation); a domain's figure is quoted at 100 source questions with 5
# gold documents each, above both since a build rejects some questions. The bundled sample
# has 2 questions a domain with 3 gold documents each.
RECOR_QUESTIONS = {"paper": 100, "demo": 2}
RECOR_GOLD = {"paper": 5, "demo": 3}
# QUIT's train questions, which the fine-tuning trains on: the paper's train split, and the
# demo's labeled questions that fall in the train split (2 of 3 in `make run`).
TRAIN_QUESTIONS = {"paper": 5000, "demo": 2}
# The models QUIT's fine-tuning trains from each base, and the rows a batch holds per triple
# (the cross-encoder reads a triple as two labeled rows).
TRAINED = {"bi-encoder": 1, "late interaction": 1, "cross-encoder": 2}


@dataclasses.dataclass(frozen=True)
class Stage:
    """One stage's LLM calls in one partition (``None``: the job is not partitioned)."""

    job: str
    stage: str
    partition: str | None
    alias: str
    backend: str
    calls: int
    # what ``calls`` counts: LLM calls (rates by backend, ``RATES``) or training steps
    # (``TRAINING_RATES``, by device and batch)
    unit: str = "calls"

    def seconds(self) -> tuple[float, float] | None:
        """Wall time at the backend's measured rates, fastest to slowest; None where no rate
        is measured."""
        rate = (RATES if self.unit == "calls" else TRAINING_RATES).get(self.backend)
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
        stages += [
            Stage("quit_parametric", "closed-book answers", model, model, backends[model], answers),
            Stage("quit_parametric", "their grades (at most)", model, judge, backends[judge], answers),
        ]
    for labeler in labelers:
        stages += [
            Stage("quit_labeling", "passage answers", labeler, labeler, backends[labeler], passages),
            Stage("quit_labeling", "their grades (at most)", labeler, judge, backends[judge], passages),
        ]
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
    stages = [
        Stage(
            "wikiprofile_build",
            "page categories, entities, objects",
            None,
            builder,
            backends[builder],
            read * CALLS_PER_PAGE,
        ),
        Stage(
            "wikiprofile_build",
            "object verification (at most)",
            None,
            builder,
            backends[builder],
            objects * len(VERIFICATIONS),
        ),
    ]
    for subject in wiki["subjects"]:
        stages += [
            Stage("wikiprofile_profile", "sampled responses", subject, subject, backends[subject], responses),
            Stage("wikiprofile_profile", "their grades (at most)", subject, grader, backends[grader], responses),
        ]
    return stages


def recor_plan(
    settings: RecorSettings, roles: dict, backends: dict[str, str], binding: bool, questions: int, gold: int
) -> list[Stage]:
    """RECOR's build and evaluation of one domain of ``questions`` source questions with
    ``gold`` gold documents each, at most: a conversation has a turn per aspect (at most
    ``max_aspects``, and at most 12 turns), every turn's question retried ``question_tries``
    times, every gold document rated on each criterion for every turn. ``binding``: the
    builder's verdicts decide (its registry entry), so the two checks that read a whole
    document (alignment, facts) are asked. Hard-negative mining asks once a question, for a
    StackExchange domain only. The evaluation asks the builder for each later turn's rewrite
    and every turn's search rationale, and each generator for an answer in each of the three
    modes, graded by the judge on five dimensions (four without passages)."""
    recor = roles["recor"]
    builder, judge, generators = recor["builder"], recor["judge"], list(recor["generators"])
    t = settings.thresholds(binding)
    turns = min(settings.max_aspects, MAX_TURNS)
    per_turn = questions * turns
    stages = [
        (builder, "hard-negative queries (StackExchange)", questions),
        (builder, "gold document alignment", questions * gold if binding else 0),
        (builder, "aspects and their order", questions * (t.aspect_rounds + 1)),
        (builder, "facts (at most)", per_turn),
        (builder, "fact checks (at most)", per_turn * settings.max_facts if binding else 0),
        (builder, "turn questions and retries (at most)", per_turn * (1 + t.question_tries)),
        (builder, "turn relevance and flow (at most)", per_turn * 2),
        (builder, "document ratings (at most)", per_turn * gold * len(CRITERIA)),
        (builder, "turn reasoning and answers (at most)", per_turn * 2),
        (builder, "conversation checks", questions),
        (judge, "quality scores and turn labels (at most)", questions * len(QUALITY_DIMENSIONS) + per_turn * 2),
    ]
    plan = [Stage("recor_build", what, "a domain", alias, backends[alias], n) for alias, what, n in stages if n]
    plan.append(
        Stage(
            "recor_queries",
            "rewrites and search rationales (at most)",
            "a domain",
            builder,
            backends[builder],
            per_turn * 2,
        )
    )
    grades = len(ANSWER_DIMENSIONS) * len(MODES) - 1  # no faithfulness without passages
    for generator in generators:
        plan += [
            Stage(
                "recor_generation",
                "answers, three modes (at most)",
                "a domain",
                generator,
                backends[generator],
                per_turn * len(MODES),
            ),
            Stage("recor_generation", "their grades (at most)", "a domain", judge, backends[judge], per_turn * grades),
        ]
    return plan


def finetune_plan(settings: FinetuneSettings, bases: list[str], train_questions: int) -> list[Stage]:
    """QUIT's fine-tuning of each base: training steps of each of the three models, summed
    over the counts of ``positives`` (one model a count), each over at most that many
    (question, positive, negative) triples of each of ``train_questions`` for ``epochs``, or
    exactly ``max_steps`` (the trainer then cycles through the data as often as it takes).
    No model of the registry is asked."""
    device = f"batch {settings.batch_size}"
    plan = []
    for base in bases:
        for model, rows in TRAINED.items():
            steps = sum(
                settings.max_steps or settings.epochs * math.ceil(train_questions * n * rows / settings.batch_size)
                for n in settings.positives
            )
            plan.append(Stage("quit_finetune", f"{model} training steps", base, base, device, steps, unit="steps"))
    return plan


def registry_plans(
    quit: QuitSettings, wikiprofile: WikiProfileSettings, quit_questions: int, pages: int, path: str = REGISTRY_PATH
) -> list[Stage]:
    """QUIT's and WikiProfile's plans with the roles and backends of the registry at ``path``."""
    roles = load_roles(path)
    backends = {alias: spec.backend for alias, spec in load_registry(path).items()}
    return quit_plan(quit, roles, backends, quit_questions) + wikiprofile_plan(wikiprofile, roles, backends, pages)


def profile_plan(profile: str, path: str = REGISTRY_PATH, bases: str = BASES_PATH) -> list[Stage]:
    """Every benchmark's plan under ``profile`` at the sizes above, with the roles of the
    model registry at ``path`` and the fine-tuning bases at ``bases``."""
    roles = load_roles(path)
    registry = load_registry(path)
    backends = {alias: spec.backend for alias, spec in registry.items()}
    builder = roles["recor"]["builder"]
    return (
        registry_plans(
            QuitSettings(profile=profile),
            WikiProfileSettings(profile=profile),
            QUIT_QUESTIONS[profile],
            WIKIPROFILE_PAGES[profile],
            path,
        )
        + recor_plan(
            RecorSettings(profile=profile),
            roles,
            backends,
            registry[builder].verdicts == "binding",
            RECOR_QUESTIONS[profile],
            RECOR_GOLD[profile],
        )
        + finetune_plan(FinetuneSettings(profile=profile), sorted(load_bases(bases)), TRAIN_QUESTIONS[profile])
    )


def basis(job_name: str, profile: str) -> str:
    """What an estimate of ``job_name``'s stages is quoted at."""
    if job_name.startswith("quit_finetune"):
        return f"{TRAIN_QUESTIONS[profile]:,} train questions"
    if job_name.startswith("quit"):
        return f"{QUIT_QUESTIONS[profile]:,} questions"
    if job_name.startswith("recor"):
        return (
            f"{RECOR_QUESTIONS[profile]:,} source questions a domain with {RECOR_GOLD[profile]} gold documents each; "
            "RECOR's replies are longer than the labeling calls the rates were measured on, so take an embedded "
            "model's time as a lower bound"
        )
    return f"{WIKIPROFILE_PAGES[profile]:,} pages"


# RECOR's evaluation jobs read no profiled settings (their size is the built benchmark's), so
# a build's estimate carries its evaluation's too: the paper build is where the size is chosen.
ESTIMATED_WITH = {"recor_build": ("recor_build", "recor_queries", "recor_generation")}


def estimate(stages: list[Stage], job_name: str, profile: str, path: str = REGISTRY_PATH) -> str:
    """The estimate a job's description carries: ``job_name``'s stages of ``stages`` (a
    ``profile_plan``) as a table, with its basis and the registry it was computed from; empty
    where the job asks no model and trains none."""
    jobs = ESTIMATED_WITH.get(job_name, (job_name,))
    mine = [
        s if s.job == job_name else dataclasses.replace(s, stage=f"{s.job}: {s.stage}") for s in stages if s.job in jobs
    ]
    if not mine:
        return ""
    return (
        f"\n\nEstimate for the {profile} profile at {basis(job_name, profile)} (pipelines.plan), "
        f"models from the registry {path}:\n\n{plan_table(mine)}"
    )


def duration(seconds: float) -> str:
    """A duration rounded for reading: seconds, minutes, hours or days."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{math.ceil(seconds)} s"


def plan_table(stages: list[Stage]) -> str:
    """A Markdown table of ``stages``: stage, partition, model, calls and wall time."""
    rows = ["| stage | partition | model | LLM calls or steps | wall time |", "|---|---|---|---|---|"]
    for s in stages:
        span = s.seconds()
        time = (
            (f"not measured ({s.backend})" if s.unit == "steps" else "not measured")
            if span is None
            else f"{duration(span[0])} - {duration(span[1])} ({s.backend})"
        )
        rows.append(f"| {s.stage} | {s.partition or '-'} | {s.alias} | {s.calls:,} | {time} |")
    return "\n".join(rows)
