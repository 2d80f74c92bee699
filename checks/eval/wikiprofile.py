"""Checks of WikiProfile's evaluation (notes, sections 3 and 4): the sampled responses, their
grades and the five knowledge profiles, then the reports built on them (Table 2, the
popularity, direction, thinking and robustness analyses)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import dagster as dg
import polars as pl

from assets.eval.wikiprofile import rules as method
from assets.eval.wikiprofile.analysis import PROFILE_SCHEMA, TAU_GRID
from assets.eval.wikiprofile.assets import SAMPLE_SCHEMA
from assets.eval.wikiprofile.steps import SUMMARY_SCHEMA as TABLE_2_SCHEMA
from assets.partitions import subject_partitions
from checks.eval.shared import REFERENCES, SCHEMA, WIKIPROFILE_BENCHMARK, interval_problems, wikiprofile_key
from checks.factories import (
    TOLERANCE,
    UNIT,
    WARN,
    differs,
    errored,
    llm_accounting_check,
    not_in,
    outside,
    problems_result,
    table_problems,
    typed,
    unmatched,
    where,
)

# Check names, unique per asset.
SAMPLING = "sampling"
PROFILE_RULE = "profile_rule"
SHARES = "shares"
TIERS_FILLED = "tiers_filled"

TIERS = ("top", "bottom")
CONDITIONS = ("generate", "generate_thinking", "verify")
EXCLUDED = (method.EXCLUDED_UNGRADABLE, method.EXCLUDED_DIRECT_INFERENCE)
SUMMARY_COUNTS = method.SUMMARY_COUNTS
SUMMARY_SHARES = method.SUMMARY_SHARES


# --- samples, grades, profiles ----------------------------------------------------------------

SAMPLE_KEY = ("fact_id", "task", "thinking", "sample")
QUESTION = ("fact_id", "task", "thinking")
IS_MC = pl.col("task").is_in(list(method.MC_TASKS))


@dg.asset_check(
    asset=wikiprofile_key("responses"),
    name=SCHEMA,
    blocking=True,
    partitions_def=subject_partitions,
    description=(
        "One row per fact, task, thinking setting and sample; known tasks, thinking only on knowledge "
        "questions, a gold slot exactly on multiple choice, a response or its error."
    ),
)
def responses_schema(responses: pl.DataFrame) -> dg.AssetCheckResult:
    frame = responses
    problems = table_problems(frame, SAMPLE_SCHEMA, SAMPLE_KEY, not_null=SAMPLE_KEY)
    if typed(frame, SAMPLE_SCHEMA):
        problems += not_in(frame, "task", method.TASKS, SAMPLE_KEY)
        problems += where(
            frame,
            pl.col("thinking") & ~pl.col("task").is_in(list(method.KNOWLEDGE_TASKS)),
            "asked with thinking though not a knowledge question",
            SAMPLE_KEY,
        )
        problems += where(frame, pl.col("sample") < 0, "with a negative sample index", SAMPLE_KEY)
        problems += where(
            frame,
            IS_MC & ~pl.col("gold_slot").is_between(0, len(method.LETTERS) - 1).fill_null(False),
            "of multiple choice without a gold slot",
            SAMPLE_KEY,
        )
        problems += where(
            frame, ~IS_MC & pl.col("gold_slot").is_not_null(), "with a gold slot outside multiple choice", SAMPLE_KEY
        )
        problems += where(
            frame,
            pl.col("response").is_null() & pl.col("error").is_null(),
            "with neither a response nor an error",
            SAMPLE_KEY,
        )
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=wikiprofile_key("responses"),
    name=SAMPLING,
    blocking=True,
    partitions_def=subject_partitions,
    description=(
        "Every question asked n times (samples 0..n-1, the same n everywhere); the gold in every "
        "multiple-choice slot equally often."
    ),
)
def responses_sampling(responses: pl.DataFrame) -> dg.AssetCheckResult:
    """g(q) compares shares across questions: a question with fewer samples, or options whose
    gold sits in one slot more often, biases its grade."""
    frame = responses
    columns = {c: SAMPLE_SCHEMA[c] for c in (*SAMPLE_KEY, "gold_slot")}
    problems = table_problems(frame, columns)
    if not problems and frame.height:
        asked = frame.group_by(QUESTION).agg(pl.len().alias("samples"), pl.col("sample").max().alias("last"))
        n = asked["samples"].max()
        problems += where(
            asked,
            (pl.col("samples") != n) | (pl.col("last") != n - 1),
            f"(questions) without samples 0..{n - 1}",
            QUESTION,
        )
        slots = frame.filter(IS_MC).group_by(*QUESTION, "gold_slot").len()
        balance = slots.group_by(QUESTION).agg(
            pl.col("len").n_unique().alias("counts"), pl.col("gold_slot").max().alias("last"), pl.len().alias("slots")
        )
        problems += where(
            balance,
            (pl.col("counts") != 1) | (pl.col("last") != pl.col("slots") - 1),
            "(multiple-choice questions) with the gold in some slots more often",
            QUESTION,
        )
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=wikiprofile_key("responses"),
    name=REFERENCES,
    blocking=True,
    partitions_def=subject_partitions,
    additional_ins={"benchmark": WIKIPROFILE_BENCHMARK},
    description="Every sample is of a benchmark question, every benchmark question is asked, every gold slot is one of its options.",
)
def responses_references(responses: pl.DataFrame, benchmark: pl.DataFrame) -> dg.AssetCheckResult:
    problems = unmatched(
        responses, ["fact_id", "task"], benchmark, ["fact_id", "task"], "fact+task not in eval/wikiprofile_tasks"
    ) + unmatched(benchmark, ["fact_id", "task"], responses, ["fact_id", "task"], "benchmark questions never asked")
    if not problems and "gold_slot" in responses.columns and "options" in benchmark.columns:
        slots = responses.join(
            benchmark.select("fact_id", "task", pl.col("options").list.len().alias("options")), on=["fact_id", "task"]
        )
        problems += where(
            slots, pl.col("gold_slot") >= pl.col("options"), "with the gold slot past the options", SAMPLE_KEY
        )
    return problems_result(problems, responses.height)


GRADED_SCHEMA = {**SAMPLE_SCHEMA, "label": pl.String, "model": pl.String}


@dg.asset_check(
    asset=wikiprofile_key("graded_responses"),
    name=SCHEMA,
    blocking=True,
    partitions_def=subject_partitions,
    description=f"One label per sample, from {', '.join(method.LABELS)}; one model.",
)
def graded_responses_schema(graded_responses: pl.DataFrame) -> dg.AssetCheckResult:
    frame = graded_responses
    problems = table_problems(frame, GRADED_SCHEMA, SAMPLE_KEY, not_null=(*SAMPLE_KEY, "label", "model"))
    if typed(frame, GRADED_SCHEMA):
        problems += not_in(frame, "label", method.LABELS, SAMPLE_KEY)
        if frame["model"].n_unique() > 1:
            problems.append(f"{frame['model'].n_unique()} models in one subject's partition")
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=wikiprofile_key("graded_responses"),
    name=REFERENCES,
    blocking=True,
    partitions_def=subject_partitions,
    additional_ins={"responses": dg.AssetIn(key=wikiprofile_key("responses").path)},
    description="Exactly the subject's sampled responses are graded.",
)
def graded_responses_references(graded_responses: pl.DataFrame, responses: pl.DataFrame) -> dg.AssetCheckResult:
    key = list(SAMPLE_KEY)
    problems = unmatched(
        graded_responses, key, responses, key, "graded samples not in eval/wikiprofile_responses"
    ) + unmatched(responses, key, graded_responses, key, "responses left ungraded")
    return problems_result(problems, graded_responses.height)


PROFILE_KEY = ("model", "fact_id")
KNOWLEDGE_FLAGS = ("encodes", "knows", "knows_thinking")
PROFILE_KINDS = (*method.PROFILES, *method.UNDECIDED.values(), *EXCLUDED)
THINKING_MISSING = pl.col("thinking_run") == method.THINKING_MISSING


@dg.asset_check(
    asset=wikiprofile_key("profiles"),
    name=SCHEMA,
    blocking=True,
    partitions_def=subject_partitions,
    description=f"One profile per fact, from {', '.join(PROFILE_KINDS)}; the model's thinking run "
    f"{' or '.join(method.THINKING_RUNS)} for all its facts.",
)
def profiles_schema(profiles: pl.DataFrame) -> dg.AssetCheckResult:
    problems = table_problems(profiles, PROFILE_SCHEMA, PROFILE_KEY, not_null=(*PROFILE_KEY, "profile", "thinking_run"))
    if typed(profiles, PROFILE_SCHEMA):
        problems += not_in(profiles, "profile", PROFILE_KINDS, PROFILE_KEY)
        problems += not_in(profiles, "thinking_run", method.THINKING_RUNS, PROFILE_KEY)
        mixed = (
            profiles.group_by("model").agg(pl.col("thinking_run").n_unique().alias("runs")).filter(pl.col("runs") > 1)
        )
        problems += (
            [f"models with facts both with and without a thinking run: {', '.join(sorted(mixed['model']))}"]
            if mixed.height
            else []
        )
    return problems_result(problems, profiles.height)


@dg.asset_check(
    asset=wikiprofile_key("profiles"),
    name=PROFILE_RULE,
    blocking=True,
    partitions_def=subject_partitions,
    description="Each profile is what encodes / knows / knows with thinking make it; an ungradable fact has none of "
    "the three; knows with thinking is null exactly when the thinking run is missing.",
)
def profiles_follow_the_rule(profiles: pl.DataFrame) -> dg.AssetCheckResult:
    """The reports count profiles and flags separately; a row where they disagree counts twice
    differently. A missing thinking run is a legitimate outcome (KT null, profile undecided);
    a null KT beside a thinking run, or a KT without one, is a broken table."""
    problems = table_problems(profiles, PROFILE_SCHEMA)
    if not problems:
        flags = pl.any_horizontal(pl.col(f).is_not_null() for f in KNOWLEDGE_FLAGS)
        ungradable = pl.col("profile") == method.EXCLUDED_UNGRADABLE
        problems += where(profiles, ungradable & flags, "ungradable yet with encodes / knows set", PROFILE_KEY)
        problems += where(
            profiles,
            ~ungradable & (pl.col("encodes").is_null() | pl.col("knows").is_null()),
            "profiled without encodes and knows",
            PROFILE_KEY,
        )
        problems += where(
            profiles,
            ~ungradable & ~THINKING_MISSING & pl.col("knows_thinking").is_null(),
            "profiled with a thinking run but without knows_thinking",
            PROFILE_KEY,
        )
        problems += where(
            profiles,
            THINKING_MISSING & pl.col("knows_thinking").is_not_null(),
            "with knows_thinking though the thinking run is missing",
            PROFILE_KEY,
        )
        gradable = profiles.filter(~ungradable & pl.col("encodes").is_not_null() & pl.col("knows").is_not_null())
        expected = [method.profile(*(r[f] for f in KNOWLEDGE_FLAGS)) for r in gradable.iter_rows(named=True)]
        ruled = gradable.with_columns(pl.Series("expected", expected, dtype=pl.String))
        problems += where(
            ruled, pl.col("profile") != pl.col("expected"), "whose profile is not the one its flags give", PROFILE_KEY
        )
    return problems_result(problems, profiles.height)


@dg.asset_check(
    asset=wikiprofile_key("profiles"),
    name=REFERENCES,
    blocking=True,
    partitions_def=subject_partitions,
    additional_ins={"benchmark": WIKIPROFILE_BENCHMARK},
    description="Exactly the benchmark's facts are profiled.",
)
def profiles_references(profiles: pl.DataFrame, benchmark: pl.DataFrame) -> dg.AssetCheckResult:
    problems = unmatched(
        profiles, ["fact_id"], benchmark, ["fact_id"], "facts not in eval/wikiprofile_tasks"
    ) + unmatched(benchmark, ["fact_id"], profiles, ["fact_id"], "benchmark facts without a profile")
    return problems_result(problems, profiles.height)


# --- the reports ----------------------------------------------------------------------------

SUMMARY_SCHEMA = {c: t for c, t in TABLE_2_SCHEMA.items() if c != "model"}


def _share(*names: str) -> pl.Expr:
    return pl.sum_horizontal(*names)


def summary_problems(frame: pl.DataFrame, key: Sequence[str]) -> list[str]:
    """Table 2 rows: shares in [0, 1]; the five profiles add up to 1 of the profiled facts
    (direct recall and the two undecided unions, without a thinking run), and the profiled
    and the two excluded kinds to 1 of all facts; Knows and Knows(+Think) count direct
    inference over the gradable facts, the Figure 4 bar does not; the shares that need the
    thinking run are null exactly when it is missing."""
    problems = outside(frame, SUMMARY_SHARES, UNIT, key)
    problems += not_in(frame, "thinking_run", method.THINKING_RUNS, key)
    problems += where(
        frame,
        (pl.col("profiled") < 0) | (pl.col("profiled") > pl.col("facts")),
        "with profiled facts not between 0 and all facts",
        key,
    )
    present, missing = frame.filter(~THINKING_MISSING), frame.filter(THINKING_MISSING)
    profiled = pl.col("profiled") > 0
    problems += where(
        present,
        profiled & ((_share(*method.PROFILES) - 1).abs() > TOLERANCE),
        "whose five profiles do not add up to 1",
        key,
    )
    undecided = method.UNDECIDED
    problems += where(
        missing,
        profiled & ((_share("direct_recall", *undecided.values()) - 1).abs() > TOLERANCE),
        "(without a thinking run) whose direct recall and undecided shares do not add up to 1",
        key,
    )
    problems += differs(
        present,
        undecided[True],
        _share("recall_failure", "recall_with_thinking"),
        f"whose {undecided[True]} is not recall failure + recall with thinking",
        key,
    )
    problems += differs(
        present,
        undecided[False],
        _share("encoding_failure", "inference_without_encoding"),
        f"whose {undecided[False]} is not encoding failure + inference without encoding",
        key,
    )
    covered = pl.col("profiled") / pl.col("facts") + pl.sum_horizontal(f"excluded_{e}" for e in EXCLUDED)
    problems += where(
        frame,
        (pl.col("facts") > 0) & ((covered - 1).abs() > TOLERANCE),
        "whose profiled and excluded shares do not add up to 1",
        key,
    )
    return problems + _knows_problems(frame, present, missing, key)


def _knows_problems(frame: pl.DataFrame, present: pl.DataFrame, missing: pl.DataFrame, key: Sequence[str]) -> list[str]:
    """Table 2's Knows columns and Figure 4's bar against the profiles they are made of; the
    shares that need the thinking run null exactly when it is missing (``present``/``missing``
    split ``frame`` by that run)."""
    profiled = pl.col("profiled") > 0
    problems: list[str] = []
    # Knows over the gradable facts: (direct recall facts + direct inference facts) / (profiled + direct inference)
    inferred = pl.col("excluded_direct_inference") * pl.col("facts")
    gradable = pl.col("profiled") + inferred
    over_gradable = lambda share: pl.when(gradable > 0).then((share * pl.col("profiled") + inferred) / gradable)  # noqa: E731
    problems += differs(
        frame,
        "knows",
        over_gradable(pl.col("direct_recall")).otherwise(math.nan),
        "whose knows is not direct recall + direct inference over the gradable facts",
        key,
    )
    thinking = method.KNOWN_WITH_THINKING
    problems += differs(
        present,
        "knows_thinking",
        over_gradable(_share(*thinking)).otherwise(math.nan),
        "whose knows_thinking is not the known-with-thinking profiles + direct inference over the gradable facts",
        key,
    )
    problems += differs(
        present,
        "knows_thinking_excl_direct",
        pl.when(profiled).then(_share(*thinking)).otherwise(math.nan),
        "whose knows_thinking_excl_direct (Figure 4) is not direct recall + recall with thinking + inference without encoding",
        key,
    )
    needs_thinking = ("knows_thinking", "knows_thinking_excl_direct", *method.THINKING_DEPENDENT)
    problems += where(
        present,
        profiled & pl.any_horizontal(pl.col(c).is_null() for c in needs_thinking),
        f"with a thinking run but a null share among {', '.join(needs_thinking)}",
        key,
    )
    problems += where(
        missing,
        pl.any_horizontal(pl.col(c).is_not_null() for c in needs_thinking),
        f"without a thinking run but with a share among {', '.join(needs_thinking)}",
        key,
    )
    return problems


@dg.asset_check(
    asset=wikiprofile_key("profile_report"),
    name=SHARES,
    description=(
        "Table 2: one row per model; shares in [0, 1], the profiles adding up to the profiled facts; "
        "each interval of Encodes, Knows and Knows(+Think) in [0, 1] and holding its share."
    ),
)
def profile_report_shares(profile_report: pl.DataFrame) -> dg.AssetCheckResult:
    columns = {"model": pl.String, **SUMMARY_SCHEMA}
    problems = table_problems(profile_report, columns, ("model",), not_null=("model", *SUMMARY_COUNTS, "thinking_run"))
    if typed(profile_report, columns):
        problems += summary_problems(profile_report, ("model",))
        ends = [c for c in profile_report.columns if c.endswith((" ci_low", " ci_high"))]
        problems += outside(profile_report, ends, UNIT, ("model",)) + interval_problems(profile_report, ("model",))
    return problems_result(problems, profile_report.height)


POPULARITY_SCHEMA = {
    "model": pl.String,
    "tier": pl.String,
    "facts": pl.Int64,
    "encodes": pl.Float64,
    "recall": pl.Float64,
    "recall_thinking": pl.Float64,
    "thinking_gain": pl.Float64,
}


@dg.asset_check(
    asset=wikiprofile_key("popularity_report"),
    name=SHARES,
    description=(
        "Top and bottom tier per model; rates are shares in [0, 1], recall with thinking at least "
        "recall, the gain their difference."
    ),
)
def popularity_report_shares(popularity_report: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key = popularity_report, ("model", "tier")
    problems = table_problems(frame, POPULARITY_SCHEMA, key, not_null=(*key, "facts"))
    if typed(frame, POPULARITY_SCHEMA):
        problems += not_in(frame, "tier", TIERS, key) + outside(
            frame, ["encodes", "recall", "recall_thinking"], UNIT, key
        )
        problems += where(frame, pl.col("facts") < 0, "with a negative fact count", key)
        problems += where(
            frame,
            pl.col("recall") > pl.col("recall_thinking") + TOLERANCE,
            "recalling more without thinking than with it",
            key,
        )
        problems += differs(
            frame,
            "thinking_gain",
            pl.col("recall_thinking") - pl.col("recall"),
            "whose gain is not recall with minus without thinking",
            key,
        )
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=wikiprofile_key("popularity_report"),
    name=TIERS_FILLED,
    description="Both popularity tiers of every model hold facts (an empty tier leaves Figure 5 blank).",
)
def popularity_report_tiers(popularity_report: pl.DataFrame) -> dg.AssetCheckResult:
    problems = table_problems(popularity_report, {c: POPULARITY_SCHEMA[c] for c in ("model", "tier", "facts")})
    if not problems:
        problems += where(popularity_report, pl.col("facts") == 0, "(tiers) without facts", ("model", "tier"))
    return problems_result(problems, popularity_report.height, WARN)


DIRECTION_SCHEMA = {
    "model": pl.String,
    "condition": pl.String,
    "facts": pl.Int64,
    "direct": pl.Float64,
    "reverse": pl.Float64,
    "delta": pl.Float64,
}


@dg.asset_check(
    asset=wikiprofile_key("direction_report"),
    name=SHARES,
    description=f"One row per model and condition ({', '.join(CONDITIONS)}); direct and reverse shares in [0, 1], delta their difference.",
)
def direction_report_shares(direction_report: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key = direction_report, ("model", "condition")
    problems = table_problems(frame, DIRECTION_SCHEMA, key, not_null=(*key, "facts"))
    if typed(frame, DIRECTION_SCHEMA):
        problems += not_in(frame, "condition", CONDITIONS, key) + outside(frame, ["direct", "reverse"], UNIT, key)
        problems += differs(
            frame, "delta", pl.col("reverse") - pl.col("direct"), "whose delta is not reverse minus direct", key
        )
    return problems_result(problems, frame.height)


THINKING_SCHEMA = {
    "model": pl.String,
    "encoded": pl.Boolean,
    "not_known": pl.Int64,
    "recovered": pl.Int64,
    "recovered_share": pl.Float64,
}


@dg.asset_check(
    asset=wikiprofile_key("thinking_report"),
    name=SHARES,
    description="Encoded and not encoded per model; recovered between 0 and the facts not known, its share of them in [0, 1].",
)
def thinking_report_shares(thinking_report: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key = thinking_report, ("model", "encoded")
    problems = table_problems(frame, THINKING_SCHEMA, key, not_null=(*key, "not_known", "recovered"))
    if typed(frame, THINKING_SCHEMA):
        problems += where(
            frame,
            (pl.col("recovered") < 0) | (pl.col("recovered") > pl.col("not_known")),
            "recovering more facts than are not known",
            key,
        )
        share = pl.when(pl.col("not_known") > 0).then(pl.col("recovered") / pl.col("not_known")).otherwise(math.nan)
        problems += differs(frame, "recovered_share", share, "whose share is not recovered over not known", key)
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=wikiprofile_key("robustness_report"),
    name=SHARES,
    description="Table 2 at every (tau_enc, tau_know) of the grid per model; thresholds in [0, 1], shares as in Table 2.",
)
def robustness_report_shares(robustness_report: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key = robustness_report, ("model", "tau_enc", "tau_know")
    columns = {"model": pl.String, "tau_enc": pl.Float64, "tau_know": pl.Float64, **SUMMARY_SCHEMA}
    problems = table_problems(frame, columns, key, not_null=(*key, *SUMMARY_COUNTS, "thinking_run"))
    if typed(frame, columns):
        problems += outside(frame, ["tau_enc", "tau_know"], UNIT, key, missing_ok=False) + summary_problems(frame, key)
        grid = (
            frame.select("model")
            .unique()
            .join(pl.DataFrame(TAU_GRID, schema=["tau_enc", "tau_know"], orient="row"), how="cross")
        )
        problems += unmatched(grid, list(key), frame, list(key), "model+thresholds of the grid missing")
    return problems_result(problems, frame.height)


wikiprofile_eval_checks = [
    responses_schema,
    responses_sampling,
    responses_references,
    graded_responses_schema,
    graded_responses_references,
    profiles_schema,
    profiles_follow_the_rule,
    profiles_references,
    profile_report_shares,
    popularity_report_shares,
    popularity_report_tiers,
    direction_report_shares,
    thinking_report_shares,
    robustness_report_shares,
    llm_accounting_check(
        wikiprofile_key("responses"), partitions_def=subject_partitions, failed_items=errored, item_column="fact_id"
    ),
    llm_accounting_check(wikiprofile_key("graded_responses"), partitions_def=subject_partitions),
]
