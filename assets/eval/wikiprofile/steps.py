"""Profiling one subject model (notes, sections 1 and 3): the sampled requests of every task,
the autorater's requests, and the way from graded samples to grades, profiles and Table 2.

Encoding tasks are asked without thinking only; the four knowledge questions without and
with thinking (the model's native switch, or a chain-of-thought prompt variant); the
multiple-choice variants without thinking, for the recognition analysis. Every sample is
its own request (``sample`` = its index, hence its own cache key and seed); the options of
a multiple-choice sample are shuffled so that over the samples the gold sits in every
position equally often.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math

import polars as pl

from assets.common.prompts import load_prompt
from assets.eval.wikiprofile import rules as method
from resources.llm import LLMRequest

KNOWLEDGE = set(method.KNOWLEDGE_TASKS)
GRADE_SCHEMA = {
    "fact_id": pl.String,
    "task": pl.String,
    "thinking": pl.Boolean,
    "sample": pl.Int32,
    "response": pl.String,
    "answer": pl.String,
    "label": pl.String,
}
# Room for a chain of thought before its final answer; a plain answer is short.
# The caps for the small default model; a registry entry's budgets (``thinking``, ``answer``)
# replace them for a model that reasons at length.
MAX_TOKENS = {False: 48, True: 320}


def thinking_runs(task: str, model_thinking: str) -> list[bool]:
    """The thinking settings a task is asked with: knowledge questions with and without
    thinking (only without for a model that cannot think), everything else without."""
    return [False, True] if task in KNOWLEDGE and model_thinking != "none" else [False]


def option_seed(fact_id: str, task: str) -> int:
    """A stable seed per question, so that re-running a partition shuffles the same way."""
    return int(hashlib.sha256(f"{fact_id}|{task}".encode()).hexdigest()[:8], 16)


@dataclasses.dataclass(frozen=True)
class Sample:
    """One request's bookkeeping: which fact, task, thinking setting and sample it is, and
    where the gold option sits (multiple choice)."""

    fact_id: str
    task: str
    thinking: bool
    sample: int
    gold_slot: int | None = None


def sample_requests(
    benchmark: pl.DataFrame, model_thinking: str, n: int, temperature: float = 1.0
) -> list[tuple[Sample, LLMRequest, bool]]:
    """Every sample of every task of every fact: ``(bookkeeping, request, thinking)``.
    ``model_thinking`` is the registry's ``thinking`` (cot, native, none): with ``cot`` the
    thinking run uses the chain-of-thought prompt, with ``native`` the same prompt and the
    resource's switch."""
    out = []
    for row in benchmark.sort("fact_id", "task").iter_rows(named=True):
        task = row["task"]
        orders = method.mc_orders(n, len(row["options"]), option_seed(row["fact_id"], task)) if row["options"] else None
        for thinking in thinking_runs(task, model_thinking):
            cot = thinking and model_thinking == "cot"
            for k in range(n):
                gold_slot, messages = None, None
                if task == "completion":
                    messages = load_prompt("eval", "subject_completion").messages(question=row["question"])
                elif orders:
                    order = orders[k]
                    gold_slot = order.index(0)
                    options = "\n".join(f"{method.LETTERS[slot]}. {row['options'][i]}" for slot, i in enumerate(order))
                    name = "subject_choice_cot" if cot else "subject_choice"
                    messages = load_prompt("eval", name).messages(question=row["question"], options=options)
                else:
                    name = "subject_question_cot" if cot else "subject_question"
                    messages = load_prompt("eval", name).messages(question=row["question"])
                request = LLMRequest(
                    f"{row['fact_id']} {task} {'think' if thinking else 'plain'} {k}",
                    messages,
                    sample=k,
                    params={"temperature": temperature, "max_tokens": MAX_TOKENS[thinking]},
                )
                out.append((Sample(row["fact_id"], task, thinking, k, gold_slot), request, thinking))
    return out


def response_answer(response: str, thinking: bool) -> str:
    """What a response answers: the text after the final ``Answer:`` of a chain of thought,
    or the whole (stripped) response."""
    return method.final_answer(response) if thinking else " ".join(response.split())


def grading_requests(samples: pl.DataFrame, benchmark: pl.DataFrame) -> list[tuple[tuple[str, str, bool], LLMRequest]]:
    """One autorater request per free-text question and thinking setting, with all its
    samples numbered (``samples``: fact_id, task, thinking, sample, answer). Multiple-choice
    samples are graded by letter, without the autorater."""
    gold = {(r["fact_id"], r["task"]): r for r in benchmark.iter_rows(named=True)}
    out = []
    free = samples.filter(~pl.col("task").str.starts_with("mc_"))
    for (fid, task, thinking), group in free.sort("sample").group_by(
        "fact_id", "task", "thinking", maintain_order=True
    ):
        row = gold[(fid, task)]
        completion = task == "completion"
        label = "Completion" if completion else "Answer"
        answers = "\n".join(
            f"{label} {i}: {a or '(no answer)'}" for i, a in enumerate(group["answer"].to_list(), start=1)
        )
        prompt = load_prompt("eval", "grade_completions" if completion else "grade_answers")
        out.append(
            (
                (fid, task, thinking),
                LLMRequest(
                    f"{fid} {task} {thinking}",
                    prompt.messages(question=row["question"], gold=row["answer"], answers=answers),
                    params={"temperature": 0.0, "max_tokens": 16 * group.height},
                    output=prompt.output,
                ),
            )
        )
    return out


def rule_labels(samples: pl.DataFrame, benchmark: pl.DataFrame) -> list[str]:
    """Each free-text sample's label by :func:`method.rule_grade` against its task's gold, in
    the order of ``samples`` (for an autorater whose verdicts are advisory)."""
    gold = {(r["fact_id"], r["task"]): r["answer"] for r in benchmark.iter_rows(named=True)}
    return [method.rule_grade(r["answer"], gold[(r["fact_id"], r["task"])]) for r in samples.iter_rows(named=True)]


def question_grades(labels: pl.DataFrame, partial_weight: float | None = None) -> pl.DataFrame:
    """g(q) per fact, task and thinking setting from the per-sample labels, with the label
    counts beside it."""
    rows = []
    for (fid, task, thinking), group in labels.group_by("fact_id", "task", "thinking", maintain_order=True):
        got = group["label"].to_list()
        rows.append(
            {
                "fact_id": fid,
                "task": task,
                "thinking": thinking,
                "grade": method.grade(got, partial_weight),
                **{label.lower(): got.count(label) for label in method.LABELS},
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "fact_id": pl.String,
            "task": pl.String,
            "thinking": pl.Boolean,
            "grade": pl.Float64,
            "correct": pl.Int64,
            "incorrect": pl.Int64,
            "partially": pl.Int64,
            "other": pl.Int64,
        },
    )


PROFILE_SCHEMA = {
    "fact_id": pl.String,
    "encodes": pl.Boolean,
    "knows": pl.Boolean,
    "knows_thinking": pl.Boolean,
    "profile": pl.String,
    "thinking_run": pl.String,
}
# Table 2: one row per model (:func:`method.profile_summary`); shares are null where the
# thinking run is missing.
SUMMARY_SCHEMA = {
    "model": pl.String,
    **{c: pl.Int64 for c in method.SUMMARY_COUNTS},
    "thinking_run": pl.String,
    **{c: pl.Float64 for c in method.SUMMARY_SHARES},
}


def fact_profiles(
    grades: pl.DataFrame, strategy: str = "S2", tau_enc: float = method.TAU, tau_know: float = method.TAU
) -> pl.DataFrame:
    """E, K0, KT and the profile of every fact of one model, from its question grades (S3
    expects grades computed with the partial weight). A model with no knowledge question
    graded with thinking has no thinking run: its facts say so (``thinking_run`` missing,
    KT null) instead of all being ungradable; once the run exists, a fact without its
    thinking grades is ungradable as the strategy says."""
    has_thinking_run = bool(grades.height) and grades["thinking"].any()
    by_fact: dict[str, tuple[dict, dict]] = {}
    for r in grades.iter_rows(named=True):
        plain, thinking = by_fact.setdefault(r["fact_id"], ({}, {}))
        (thinking if r["thinking"] else plain)[r["task"]] = r["grade"] if r["grade"] is not None else math.nan
    rows = [
        {"fact_id": fid, **method.classify(plain, thinking if has_thinking_run else None, strategy, tau_enc, tau_know)}
        for fid, (plain, thinking) in sorted(by_fact.items())
    ]
    return pl.DataFrame(rows, schema=PROFILE_SCHEMA)


def summary_table(rows: list[dict]) -> pl.DataFrame:
    """Table 2 from rows of ``model`` and :func:`method.profile_summary` (typed even when a
    column is null in every row, as the thinking columns of models without a thinking run)."""
    return pl.DataFrame(rows, schema=SUMMARY_SCHEMA)
