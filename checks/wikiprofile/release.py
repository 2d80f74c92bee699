"""Checks of WikiProfile's release (``assets.wikiprofile.release``, steps 18-19): the
benchmark's ten tasks per fact, their options and lengths, and the final rejects."""

from __future__ import annotations

import dagster as dg
import polars as pl

from assets.wikiprofile import release, rules, steps
from checks.factories import (
    WARN,
    export_check,
    flags,
    llm_accounting_check,
    rejects_check,
    rows_check,
    table_check,
    unmet,
)
from checks.wikiprofile.shared import ins, key, named

TASKS = ("completion", "contextual", *release.CLOSED_BOOK, *(f"mc_{kind}" for kind in release.CLOSED_BOOK))
N_OPTIONS = 1 + rules.N_DISTRACTORS


# --- steps 18-19: the benchmark -----------------------------------------------------------------

benchmark_schema = table_check(
    key("benchmark"),
    release.BENCHMARK_SCHEMA,
    unique=["fact_id", "task"],
    not_null=[c for c in release.BENCHMARK_SCHEMA if c not in ("options", "options_origin")],
)


@dg.asset_check(
    asset=key("benchmark"),
    blocking=True,
    description=f"The ten tasks ({', '.join(TASKS)}) once per fact; {N_OPTIONS} distinct options with the gold once, stored first, on the "
    "multiple-choice tasks and none on the others; no answer in a closed-book question.",
)
def ten_tasks_per_fact(benchmark: pl.DataFrame) -> dg.AssetCheckResult:
    tasks = benchmark.group_by("fact_id").agg(pl.col("task").sort().alias("tasks"))
    wrong = tasks.filter(pl.col("tasks") != pl.lit(sorted(TASKS), pl.List(pl.String))).select(
        "fact_id", pl.lit(None, pl.String).alias("task"), pl.lit(f"the {len(TASKS)} tasks, each once").alias("rule")
    )
    mc = pl.col("task").str.starts_with("mc_")
    bad = unmet(
        benchmark,
        {
            f"{N_OPTIONS} options on a multiple-choice task, none on the others": pl.when(mc)
            .then(pl.col("options").list.len() == N_OPTIONS)
            .otherwise(pl.col("options").is_null()),
            # Profiling shuffles the options per sample around the gold at index 0 (mc_orders).
            "the gold first": ~mc | (pl.col("options").list.first() == pl.col("answer")),
            "the gold once, no option repeated": ~mc
            | (
                pl.col("options").list.eval(pl.element().str.strip_chars().str.to_lowercase()).list.n_unique()
                == pl.col("options").list.len()
            ),
            "a closed-book question does not name its answer": ~pl.col("task").is_in(release.CLOSED_BOOK)
            | ~named("question", "answer"),
        },
        ids=["fact_id", "task"],
    )
    return rows_check(pl.concat([wrong, bad]), "the ten tasks of every fact")


def overlaps_gold(options: list[str]) -> bool:
    """Whether a distractor holds the gold or lies inside it (``rules.overlaps_gold``, the
    rule the distractor steps apply): the model's lists sometimes repeat the gold in a sentence."""
    return any(rules.overlaps_gold(o.strip(), options[0].strip()) for o in options[1:])


@dg.asset_check(
    asset=key("benchmark"),
    description="No distractor holds the gold or lies inside it; a warning, since the "
    "task still has its gold once as an option.",
)
def distractors_apart_from_gold(benchmark: pl.DataFrame) -> dg.AssetCheckResult:
    mc = benchmark.filter(pl.col("task").str.starts_with("mc_") & (pl.col("options").list.len() > 1))
    bad = mc.filter(flags(mc, overlaps_gold, "options")).select("fact_id", "task", "options_origin", "options")
    return rows_check(bad, "distractors apart from the gold", "fact_id", WARN)


@dg.asset_check(
    asset=key("benchmark"),
    blocking=True,
    description=f"Step 18: every question at most {steps.MAX_QUESTION_WORDS} words (the contextual one aside), "
    f"every left context (the completion prompt) at least {steps.MIN_LEFT_CONTEXT_WORDS}.",
)
def lengths(benchmark: pl.DataFrame) -> dg.AssetCheckResult:
    n = pl.col("question").str.count_matches(r"\S+")
    bad = unmet(
        benchmark,
        {
            f"at most {steps.MAX_QUESTION_WORDS} words": pl.col("task").is_in(["completion", "contextual"])
            | (n <= steps.MAX_QUESTION_WORDS),
            f"a left context of at least {steps.MIN_LEFT_CONTEXT_WORDS} words": (pl.col("task") != "completion")
            | (n >= steps.MIN_LEFT_CONTEXT_WORDS),
        },
        ids=["fact_id", "task"],
    )
    return rows_check(bad, "the length filter")


@dg.asset_check(
    asset=key("benchmark"),
    blocking=True,
    additional_ins=ins("facts"),
    description="Every task of a fact, with its page, category, type group and object; the completion prompt is "
    "its left context; the answer is the object on direct tasks and the subject on reverse ones.",
)
def benchmark_of_facts(benchmark: pl.DataFrame, facts: pl.DataFrame) -> dg.AssetCheckResult:
    frame = benchmark.join(
        facts.select("fact_id", "page_id", "category", "type_group", "object", "left_context"),
        on="fact_id",
        how="left",
        suffix="_fact",
    )
    bad = unmet(
        frame,
        {
            "a fact, with its page, category, type group and object": pl.all_horizontal(
                [pl.col(c) == pl.col(f"{c}_fact") for c in ("page_id", "category", "type_group", "object")]
            ),
            "the completion prompt is the left context": (pl.col("task") != "completion")
            | (pl.col("question") == pl.col("left_context")),
            "the answer is the object, or the subject on reverse tasks": pl.col("answer")
            == pl.when(pl.col("task").str.contains("reverse")).then("subject").otherwise("object"),
        },
        ids=["fact_id", "task"],
    )
    return rows_check(bad, "the benchmark's tasks are its facts'")


# The closed-book questions whose distractors came from the sample's names.
benchmark_llm = llm_accounting_check(
    key("benchmark"),
    item_column="fact_id",
    failed_items=lambda t: t.filter(pl.col("options_origin") == "rules").unique("fact_id", maintain_order=True),
)
final_rejects_reasons = rejects_check(key("final_rejects"), release.FINAL_REASONS, steps.REJECTS.keys)


release_checks = [
    benchmark_schema,
    ten_tasks_per_fact,
    distractors_apart_from_gold,
    lengths,
    benchmark_of_facts,
    benchmark_llm,
    final_rejects_reasons,
    export_check(key("export"), beir=False),
]
