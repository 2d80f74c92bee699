"""WikiProfile's analyses over profiled models (paper section 5 and appendices B and D;
method notes section 4), as pure functions over tables.

Inputs are the per-question grades of every model (``model``, ``fact_id``, ``task``,
``thinking``, ``grade`` and the label counts, see :func:`model_grades`) and the per-fact
profiles (``model``, ``fact_id``, ``encodes``, ``knows``, ``knows_thinking``, ``profile``,
``thinking_run``). Every rate is a share in [0, 1] (the paper prints percent), over
*profiled* facts (neither ungradable nor direct inference), as Table 2's profiles. A model whose thinking run is missing gets null, not
zero, wherever thinking enters (recall with thinking, recovery, generation with thinking).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import polars as pl
from scipy import stats

from assets.eval.wikiprofile import rules as method
from assets.eval.wikiprofile import steps as profiling

# Appendix D.4's draw and claim are rules; their names stay importable from here.
from assets.eval.wikiprofile.rules import (  # noqa: F401
    D4_BOUND,
    D4_MIN_QUESTIONS,
    D4_N,
    above_probability,
    bootstrap_shares,
    d4_claims,
    label_matrix,
)

DIRECT = ("direct", "direct_natural")
REVERSE = ("reverse", "reverse_natural")
MC_DIRECT = ("mc_direct", "mc_direct_natural")
MC_REVERSE = ("mc_reverse", "mc_reverse_natural")
# The thresholds of the paper's robustness panels (D.2), plus the symmetric middle ones.
TAU_GRID = ((0.01, 0.5), (0.25, 0.25), (0.5, 0.5), (0.75, 0.75), (0.5, 0.99), (0.99, 0.99))
# The tasks and sample sizes of the bootstrap of D.4 (n = 2..16).
BOOTSTRAP_TASKS = ("completion", "contextual", "direct", "reverse")
BOOTSTRAP_NS = (2, 4, 6, 8, 10, 12, 14, 16)


PROFILE_SCHEMA = {"model": pl.String, **profiling.PROFILE_SCHEMA}
LABEL_SCHEMA = {
    "model": pl.String,
    "fact_id": pl.String,
    "task": pl.String,
    "thinking": pl.Boolean,
    "sample": pl.Int32,
    "label": pl.String,
}


def with_schema(frame: pl.DataFrame, schema: dict) -> pl.DataFrame:
    """``frame``, or an empty table of ``schema`` when it has no columns (no model profiled
    yet: the reports read every partition, and there are none)."""
    return frame if frame.width else pl.DataFrame(schema=schema)


def _share(n: int, d: int) -> float:
    return n / d if d else math.nan


def model_grades(graded: pl.DataFrame, partial_weight: float | None = None) -> pl.DataFrame:
    """g(q) and label counts per model, fact, task and thinking setting, from the graded
    samples of every model (``graded`` has a ``model`` column)."""
    graded = with_schema(graded, LABEL_SCHEMA)
    frames = [
        profiling.question_grades(group, partial_weight).with_columns(pl.lit(model).alias("model"))
        for (model,), group in graded.group_by("model", maintain_order=True)
    ]
    if not frames:
        return pl.DataFrame(
            schema={
                "model": pl.String,
                "fact_id": pl.String,
                "task": pl.String,
                "thinking": pl.Boolean,
                "grade": pl.Float64,
                "correct": pl.Int64,
                "incorrect": pl.Int64,
                "partially": pl.Int64,
                "other": pl.Int64,
            }
        )
    return pl.concat(frames).select("model", pl.exclude("model"))


def grade_maps(grades: pl.DataFrame) -> dict[tuple[str, str], tuple[dict, dict]]:
    """``(model, fact_id)`` -> (grades without thinking, grades with thinking) by task."""
    out: dict[tuple[str, str], tuple[dict, dict]] = {}
    for r in grades.iter_rows(named=True):
        plain, thinking = out.setdefault((r["model"], r["fact_id"]), ({}, {}))
        (thinking if r["thinking"] else plain)[r["task"]] = math.nan if r["grade"] is None else r["grade"]
    return out


def _profiled(profiles: pl.DataFrame) -> pl.DataFrame:
    """The facts with a profile: one of the five, or undecided for want of a thinking run."""
    kinds = [*method.PROFILES, *method.UNDECIDED.values()]
    return with_schema(profiles, PROFILE_SCHEMA).filter(pl.col("profile").is_in(kinds))


def _thinking_missing(profiles: pl.DataFrame, model: str) -> bool:
    runs = profiles.filter(pl.col("model") == model)["thinking_run"]
    return runs.len() > 0 and (runs == method.THINKING_MISSING).all()


def models_without_thinking(profiles: pl.DataFrame) -> list[str]:
    """The models profiled without their thinking run, for the reports' metadata."""
    profiles = with_schema(profiles, PROFILE_SCHEMA)
    return [m for m in sorted(profiles["model"].unique()) if _thinking_missing(profiles, m)]


def popularity(profiles: pl.DataFrame, tiers: pl.DataFrame) -> pl.DataFrame:
    """Encoding and recall rates in the top and bottom popularity tiers (Figure 5): encodes
    over the tier's profiled facts; recall = encoded facts known without thinking; with
    thinking = encoded facts known with or without it (null without a thinking run). ``tiers``
    maps ``fact_id`` to top / middle / bottom (:func:`assets.wikiprofile.sources.popularity_tiers`)."""
    profiles = with_schema(profiles, PROFILE_SCHEMA)
    joined = _profiled(profiles).join(tiers, on="fact_id", how="left")
    rows = []
    for model in sorted(joined["model"].unique()):
        missing = _thinking_missing(profiles, model)
        for tier in ("top", "bottom"):
            part = joined.filter((pl.col("model") == model) & (pl.col("tier") == tier))
            enc = part.filter(pl.col("encodes"))
            recall = _share(enc.filter(pl.col("knows")).height, enc.height)
            thinking = (
                None if missing else _share(enc.filter(pl.col("knows") | pl.col("knows_thinking")).height, enc.height)
            )
            rows.append(
                {
                    "model": model,
                    "tier": tier,
                    "facts": part.height,
                    "encodes": _share(enc.height, part.height),
                    "recall": recall,
                    "recall_thinking": thinking,
                    "thinking_gain": None if thinking is None else thinking - recall,
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            "model": pl.String,
            "tier": pl.String,
            "facts": pl.Int64,
            "encodes": pl.Float64,
            "recall": pl.Float64,
            "recall_thinking": pl.Float64,
            "thinking_gain": pl.Float64,
        },
    )


def popularity_gaps(table: pl.DataFrame) -> pl.DataFrame:
    """Top minus bottom per model: the encoding gap, the recall gap and the recall gap with
    thinking (the paper's Delta and Delta_T)."""
    rows = []
    for model in sorted(table["model"].unique()):
        top = table.filter((pl.col("model") == model) & (pl.col("tier") == "top")).row(0, named=True)
        bottom = table.filter((pl.col("model") == model) & (pl.col("tier") == "bottom")).row(0, named=True)
        with_thinking = None if top["recall_thinking"] is None else top["recall_thinking"] - bottom["recall_thinking"]
        rows.append(
            {
                "model": model,
                "encoding_gap": top["encodes"] - bottom["encodes"],
                "recall_gap": top["recall"] - bottom["recall"],
                "recall_gap_thinking": with_thinking,
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "model": pl.String,
            "encoding_gap": pl.Float64,
            "recall_gap": pl.Float64,
            "recall_gap_thinking": pl.Float64,
        },
    )


def _sides(plain: dict, thinking: dict, tau: float) -> dict[str, bool]:
    return {
        "direct": method.knows(plain, tau, DIRECT),
        "reverse": method.knows(plain, tau, REVERSE),
        "mc_direct": method.knows(plain, tau, MC_DIRECT),
        "mc_reverse": method.knows(plain, tau, MC_REVERSE),
        "direct_thinking": method.knows(thinking, tau, DIRECT),
        "reverse_thinking": method.knows(thinking, tau, REVERSE),
    }


def direction(grades: pl.DataFrame, profiles: pl.DataFrame, tau: float = method.TAU) -> pl.DataFrame:
    """Direct vs reverse over the encoded profiled facts (Figure 6): a side is known when both
    of its phrasings have g > tau (an ungradable phrasing is left out, as in S2), in generation
    (closed-book, without and with thinking) and in verification (multiple choice). Without
    a thinking run, generation with thinking is null."""
    profiles = with_schema(profiles, PROFILE_SCHEMA)
    maps = grade_maps(grades)
    rows = []
    for model in sorted(profiles["model"].unique()):
        encoded = _profiled(profiles).filter((pl.col("model") == model) & pl.col("encodes"))["fact_id"].to_list()
        sides = [_sides(*maps.get((model, f), ({}, {})), tau) for f in encoded]
        for condition, (d, r) in {
            "generate": ("direct", "reverse"),
            "generate_thinking": ("direct_thinking", "reverse_thinking"),
            "verify": ("mc_direct", "mc_reverse"),
        }.items():
            if condition == "generate_thinking" and _thinking_missing(profiles, model):
                rows.append(
                    {
                        "model": model,
                        "condition": condition,
                        "facts": len(sides),
                        "direct": None,
                        "reverse": None,
                        "delta": None,
                    }
                )
                continue
            direct, reverse = _share(sum(s[d] for s in sides), len(sides)), _share(sum(s[r] for s in sides), len(sides))
            rows.append(
                {
                    "model": model,
                    "condition": condition,
                    "facts": len(sides),
                    "direct": direct,
                    "reverse": reverse,
                    "delta": reverse - direct,
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            "model": pl.String,
            "condition": pl.String,
            "facts": pl.Int64,
            "direct": pl.Float64,
            "reverse": pl.Float64,
            "delta": pl.Float64,
        },
    )


def error_attribution(grades: pl.DataFrame, profiles: pl.DataFrame, tau: float = method.TAU) -> pl.DataFrame:
    """Which side fails for the facts not known without thinking (Figure 14): direct only,
    both, or reverse only, over all profiled facts and over the encoded ones."""
    profiles = with_schema(profiles, PROFILE_SCHEMA)
    maps = grade_maps(grades)
    rows = []
    for model in sorted(profiles["model"].unique()):
        profiled = _profiled(profiles).filter((pl.col("model") == model) & ~pl.col("knows"))
        for scope, part in (("all", profiled), ("encoded", profiled.filter(pl.col("encodes")))):
            counts = {"direct_only": 0, "both": 0, "reverse_only": 0}
            for f in part["fact_id"]:
                s = _sides(*maps.get((model, f), ({}, {})), tau)
                if not s["direct"] and not s["reverse"]:
                    counts["both"] += 1
                elif not s["direct"]:
                    counts["direct_only"] += 1
                elif not s["reverse"]:
                    counts["reverse_only"] += 1
            rows.append(
                {
                    "model": model,
                    "scope": scope,
                    "not_known": part.height,
                    **{k: _share(v, part.height) for k, v in counts.items()},
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            "model": pl.String,
            "scope": pl.String,
            "not_known": pl.Int64,
            "direct_only": pl.Float64,
            "both": pl.Float64,
            "reverse_only": pl.Float64,
        },
    )


def thinking_recovery(profiles: pl.DataFrame) -> pl.DataFrame:
    """Of the profiled facts not known without thinking, the share thinking recovers, for
    encoded facts (recall with thinking) and not encoded ones (inference without encoding),
    as in Figure 8. A model without a thinking run has nothing to recover and no rows
    (:func:`models_without_thinking` names them)."""
    profiles = with_schema(profiles, PROFILE_SCHEMA)
    rows = []
    for model in sorted(profiles["model"].unique()):
        if _thinking_missing(profiles, model):
            continue
        missed = _profiled(profiles).filter((pl.col("model") == model) & ~pl.col("knows"))
        for encoded, recovered in ((True, "recall_with_thinking"), (False, "inference_without_encoding")):
            part = missed.filter(pl.col("encodes") == encoded)
            got = part.filter(pl.col("profile") == recovered).height
            rows.append(
                {
                    "model": model,
                    "encoded": encoded,
                    "not_known": part.height,
                    "recovered": got,
                    "recovered_share": _share(got, part.height),
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            "model": pl.String,
            "encoded": pl.Boolean,
            "not_known": pl.Int64,
            "recovered": pl.Int64,
            "recovered_share": pl.Float64,
        },
    )


def prob_at_least(k: int, n: int, p: float) -> float:
    """P(K >= ceil(p n)) for K ~ Binomial(n, k/n): how likely a question answered correctly
    k times in n is answered correctly at least a share p of the time (appendix B.2)."""
    if n == 0:
        return math.nan
    m = math.ceil(p * n - 1e-9)
    return float(stats.binom.sf(m - 1, n, k / n))


def correct_at_least(
    grades: pl.DataFrame, ps: Sequence[float] | None = None, tasks: Iterable[str] = method.KNOWLEDGE_TASKS
) -> pl.DataFrame:
    """The correct>=p curve per model and thinking setting: the share of knowledge questions
    whose estimated P(K >= ceil(p n)) exceeds 0.5, for each p (default 1/8 .. 8/8). Low p
    measures availability, high p robustness."""
    part = grades.filter(pl.col("task").is_in(list(tasks)))
    if ps is None:
        n_max = int(part.select(pl.sum_horizontal("correct", "incorrect", "partially", "other")).max().item() or 8)
        ps = [j / n_max for j in range(1, n_max + 1)]
    rows = []
    for (model, thinking), group in sorted(part.group_by("model", "thinking"), key=lambda kv: (kv[0][0], kv[0][1])):
        counts = [
            (r["correct"], r["correct"] + r["incorrect"] + r["partially"] + r["other"])
            for r in group.iter_rows(named=True)
        ]
        for p in ps:
            hits = sum(prob_at_least(k, n, p) > 0.5 for k, n in counts if n)
            rows.append(
                {
                    "model": model,
                    "thinking": thinking,
                    "p": float(p),
                    "questions": len(counts),
                    "share": _share(hits, len(counts)),
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            "model": pl.String,
            "thinking": pl.Boolean,
            "p": pl.Float64,
            "questions": pl.Int64,
            "share": pl.Float64,
        },
    )


def tau_sweep(
    grades: pl.DataFrame, strategy: str = "S2", grid: Sequence[tuple[float, float]] = TAU_GRID
) -> pl.DataFrame:
    """Table 2's row of every model at each (tau_enc, tau_know) of the grid (appendix D.2)."""
    rows = []
    for (model,), group in sorted(grades.group_by("model"), key=lambda kv: kv[0]):
        for tau_enc, tau_know in grid:
            facts = profiling.fact_profiles(group, strategy, tau_enc, tau_know)
            rows.append(
                {"model": model, "tau_enc": tau_enc, "tau_know": tau_know, **method.profile_summary(facts.to_dicts())}
            )
    return pl.DataFrame(
        rows,
        schema={
            "model": pl.String,
            "tau_enc": pl.Float64,
            "tau_know": pl.Float64,
            **{c: t for c, t in profiling.SUMMARY_SCHEMA.items() if c != "model"},
        },
    )


def bootstrap_stability(
    graded: pl.DataFrame,
    ns: Sequence[int] = BOOTSTRAP_NS,
    tasks: Sequence[str] = BOOTSTRAP_TASKS,
    resamples: int = 1000,
    seed: int = 0,
    tau: float = method.TAU,
) -> pl.DataFrame:
    """How stable the share of questions with g > tau is for n samples per question
    (appendix D.4): the 5th and 95th percentiles over bootstrap resamples and their width,
    per model, task (without thinking) and n. The draw and the paper's claim over this table
    are rules (:func:`method.bootstrap_shares`, :func:`method.d4_claims`)."""
    rng = np.random.default_rng(seed)
    rows = []
    graded = with_schema(graded, LABEL_SCHEMA)
    for (model,), group in sorted(graded.group_by("model"), key=lambda kv: kv[0]):
        for task in tasks:
            labels = method.label_matrix(group, task)
            if labels.shape[0] == 0:
                continue
            for n in ns:
                shares = method.bootstrap_shares(labels, n, resamples, rng, tau)
                lo, hi = np.percentile(shares, [5, 95])
                rows.append(
                    {
                        "model": model,
                        "task": task,
                        "n": n,
                        "questions": labels.shape[0],
                        "mean": float(shares.mean()),
                        "p5": float(lo),
                        "p95": float(hi),
                        "width": float(hi - lo),
                    }
                )
    return pl.DataFrame(
        rows,
        schema={
            "model": pl.String,
            "task": pl.String,
            "n": pl.Int64,
            "questions": pl.Int64,
            "mean": pl.Float64,
            "p5": pl.Float64,
            "p95": pl.Float64,
            "width": pl.Float64,
        },
    )


# Table 2's shares with intervals (issue 48), each a mean over its own facts.
TABLE_2_INTERVALS = ("encodes", "knows", "knows_thinking")
TABLE_2_ITEMS = "facts"
TABLE_2_ITEMS_OF = (
    "the profiled ones for Encodes, the gradable ones (profiled or direct inference) for Knows and Knows(+Think)"
)


def table_2_scores(profiles: pl.DataFrame) -> pl.DataFrame:
    """One row per model and fact: 1.0 or 0.0 for each of :data:`TABLE_2_INTERVALS`, null
    where the fact is not in that share's denominator, so that a model's mean over the non-null
    facts is its share in Table 2 (:func:`method.profile_summary`): encodes over the profiled
    facts; knows and knows_thinking over the gradable ones (the profiled and the direct
    inferences); knows_thinking null throughout without a thinking run. The NaN strategy
    has already set which facts are ungradable."""
    profiles = with_schema(profiles, PROFILE_SCHEMA)
    profile = pl.col("profile")
    profiled = profile.is_in([*method.PROFILES, *method.UNDECIDED.values()])
    inferred = profile == method.EXCLUDED_DIRECT_INFERENCE
    gradable = profiled | inferred
    thinking = pl.col("thinking_run") != method.THINKING_MISSING
    as_float = lambda flag: flag.cast(pl.Float64)  # noqa: E731
    return profiles.select(
        "model",
        "fact_id",
        pl.when(profiled).then(as_float(pl.col("encodes").fill_null(False))).alias("encodes"),
        pl.when(gradable).then(as_float((profile == "direct_recall") | inferred)).alias("knows"),
        pl.when(gradable & thinking)
        .then(as_float(profile.is_in(list(method.KNOWN_WITH_THINKING)) | inferred))
        .alias("knows_thinking"),
    ).sort("model", "fact_id")


# What each column of the analysis tables counts, shown as the inline tables' header
# descriptions. Rates are shares in [0, 1] (where the paper prints percent); differences of shares
# lie in [-1, 1].
MODEL = "a subject model alias (resources/models.yaml)"
POPULARITY_DEFINITIONS = {
    "model": MODEL,
    "tier": "top or bottom 20% of the benchmark's facts by their page's mean monthly views",
    "facts": "the tier's profiled facts",
    "encodes": "E, a share of the tier's profiled facts",
    "recall": "known without thinking (K0), a share of the tier's encoded facts",
    "recall_thinking": "known without or with thinking (K0 or KT), a share of the tier's encoded facts; null without a "
    "thinking run",
    "thinking_gain": "recall_thinking - recall, a difference of shares",
}
GAPS_DEFINITIONS = {
    "model": MODEL,
    "encoding_gap": "encodes of the top tier minus the bottom tier's, a difference of shares",
    "recall_gap": "Delta: recall of the top tier minus the bottom tier's, a difference of shares",
    "recall_gap_thinking": "Delta_T: recall_thinking of the top tier minus the bottom tier's; null without a thinking run",
}
TIERS_DEFINITIONS = {
    "tier": "top and bottom: the 20% most and least viewed of the benchmark's facts; middle: the rest",
    "min_views": "the least mean monthly views of a fact's page in the tier",
    "max_views": "the most mean monthly views of a fact's page in the tier",
    "facts": "the benchmark's facts in the tier",
}
DIRECTION_DEFINITIONS = {
    "model": MODEL,
    "condition": "generate (closed book, no thinking), generate_thinking (closed book, with thinking) or "
    "verify (multiple choice)",
    "facts": "the model's encoded profiled facts",
    "direct": "direct side known (both phrasings with g > tau; an ungradable one left out), a share of the encoded facts; "
    "null for generate_thinking without a thinking run",
    "reverse": "reverse side known, as direct, a share of the encoded facts",
    "delta": "reverse - direct, a difference of shares",
}
ERROR_DEFINITIONS = {
    "model": MODEL,
    "scope": "all: the profiled facts not known without thinking; encoded: those of them encoded",
    "not_known": "the scope's facts",
    "direct_only": "only the direct side unknown (without thinking), a share of not_known",
    "both": "both sides unknown, a share of not_known",
    "reverse_only": "only the reverse side unknown, a share of not_known",
}
RECOVERY_DEFINITIONS = {
    "model": MODEL,
    "encoded": "true: encoded facts (recall with thinking recovers them); false: not encoded ones "
    "(inference without encoding)",
    "not_known": "profiled facts not known without thinking",
    "recovered": "those of them known with thinking",
    "recovered_share": "recovered / not_known, a share",
}
CURVE_DEFINITIONS = {
    "model": MODEL,
    "thinking": "whether the knowledge questions were asked with thinking",
    "p": "the share of a question's samples that must be correct",
    "questions": "the model's knowledge questions (direct, reverse and their natural phrasings) in this setting",
    "share": "correct>=p: the share of the questions whose estimated P(K >= ceil(p n)) exceeds 0.5",
}
BOOTSTRAP_DEFINITIONS = {
    "model": MODEL,
    "task": "a task asked without thinking",
    "n": "samples drawn per question (with replacement)",
    "questions": "the task's questions",
    "mean": "the share of the questions with g > tau, the mean over the resamples",
    "p5": "its 5th percentile over the resamples",
    "p95": "its 95th percentile over the resamples",
    "width": "p95 - p5, a difference of shares (the paper gives it in points)",
}
