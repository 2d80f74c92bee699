"""Profiling subject models on the WikiProfile benchmark as Dagster assets, partitioned by
model alias (dynamic: an alias added to the registry's ``wikiprofile.subjects`` becomes a
partition). The rules live in :mod:`assets.eval.wikiprofile.rules` and
:mod:`assets.eval.wikiprofile.steps`."""

import dagster as dg
import polars as pl

from assets.common.metadata import counts_md, md_table, png_markdown, report_table, table_metadata, why_empty
from assets.common.prompts import code_version
from assets.eval import uncertainty as intervals
from assets.eval.uncertainty import UncertaintySettings
from assets.eval.wikiprofile import analysis
from assets.eval.wikiprofile import rules as method
from assets.eval.wikiprofile import steps as profiling
from assets.eval.wikiprofile.assets.common import (
    GROUP,
    NO_GRADED,
    NO_MODEL,
    PREFIX,
    TABLE_2_HEADERS,
    plot_widths,
    profiles_slice,
    table_2,
    thinking_metadata,
    wiring,
)
from assets.partitions import subject_partitions
from assets.wikiprofile.settings import WikiProfileSettings
from resources.llm import CallStats, LLMResource, Model
from resources.llm.registry import llm_pool

STEP = dict(key_prefix=PREFIX, group_name=GROUP, partitions_def=subject_partitions, code_version="2")


def _prompted(rules: str, *prompts: str) -> dict:
    """The step's settings with a code version that follows its rules and its prompts."""
    return {**STEP, "code_version": code_version(rules, *prompts)}


SAMPLE_SCHEMA = {
    "fact_id": pl.String,
    "task": pl.String,
    "thinking": pl.Boolean,
    "sample": pl.Int32,
    "gold_slot": pl.Int32,
    "response": pl.String,
    "answer": pl.String,
    "error": pl.String,
}


def _grader(llm: LLMResource) -> Model:
    return llm.model("wikiprofile.grader")


@dg.asset(
    ins={"benchmark": wiring.input("wikiprofile_tasks")},
    kinds={"polars", "litellm"},
    pool=llm_pool("wikiprofile.subjects", "wikiprofile.grader"),
    **_prompted(
        "2",
        "eval/subject_completion",
        "eval/subject_choice",
        "eval/subject_choice_cot",
        "eval/subject_question",
        "eval/subject_question_cot",
    ),
)
def wikiprofile_responses(
    context: dg.AssetExecutionContext,
    benchmark: pl.DataFrame,
    llm: LLMResource,
    wikiprofile_settings: WikiProfileSettings,
) -> dg.Output:
    """The subject model's sampled responses: ``n_samples`` per task at temperature 1, the
    knowledge questions without and with thinking, multiple-choice options shuffled per
    sample (each position holds the gold equally often)."""
    subject = llm.named(context.partition_key)
    planned = profiling.sample_requests(
        benchmark, subject.spec.thinking, wikiprofile_settings.n_samples, wikiprofile_settings.temperature
    )
    stats, rows = CallStats(), []
    for thinking in (False, True):
        part = [(s, r) for s, r, t in planned if t == thinking]
        if not part:
            continue
        # a registry budget for the kind (thinking / answer) replaces the small model's caps
        results = subject.run(
            [r for _, r in part],
            stats=stats,
            thinking=thinking,
            log=context.log.info,
            kind="thinking" if thinking else "answer",
        )
        for (s, _), res in zip(part, results):
            text = res.text if res.ok else None
            rows.append(
                {
                    "fact_id": s.fact_id,
                    "task": s.task,
                    "thinking": s.thinking,
                    "sample": s.sample,
                    "gold_slot": s.gold_slot,
                    "response": text,
                    "answer": profiling.response_answer(text, s.thinking) if text is not None else None,
                    "error": res.error,
                }
            )
    frame = pl.DataFrame(rows, schema=SAMPLE_SCHEMA)
    return dg.Output(
        frame,
        metadata={
            **table_metadata(frame.select("fact_id", "task", "thinking", "sample", "answer")),
            **stats.as_metadata(),
            "model": subject.alias,
            "thinking_switch": subject.spec.thinking,
            "samples_per_question": wikiprofile_settings.n_samples,
        },
    )


@dg.asset(
    ins={"responses": wiring.input("wikiprofile_responses"), "benchmark": wiring.input("wikiprofile_tasks")},
    kinds={"polars", "litellm"},
    pool=llm_pool("wikiprofile.subjects", "wikiprofile.grader"),
    **_prompted("3", "eval/grade_answers", "eval/grade_completions"),
)
def wikiprofile_graded_responses(
    context: dg.AssetExecutionContext, responses: pl.DataFrame, benchmark: pl.DataFrame, llm: LLMResource
) -> dg.Output:
    """Every response labelled CORRECT, INCORRECT, PARTIALLY or OTHER: multiple choice by
    its letter, the rest by the autorater (the registry's ``wikiprofile.grader``) with all
    samples of a question in one call. A reply the autorater's parser cannot read leaves
    those samples OTHER, counted in ``grader_unparsed``. An autorater whose verdicts are
    advisory (the embedded model cannot judge answers) is not asked: the samples are graded
    by rule (:func:`method.rule_grade`), and ``grader`` says so."""
    stats = CallStats()
    mc = responses.filter(pl.col("task").str.starts_with("mc_"))
    labels = [{**r, "label": method.mc_grade(r["response"] or "", r["gold_slot"])} for r in mc.iter_rows(named=True)]
    free = responses.filter(~pl.col("task").str.starts_with("mc_"))
    unparsed, grader = 0, _grader(llm)
    if not grader.binding:
        labels += [
            {**r, "label": g} for r, g in zip(free.iter_rows(named=True), profiling.rule_labels(free, benchmark))
        ]
        graded_by = f"rules ({grader.alias} is advisory)"
    else:
        planned = profiling.grading_requests(free, benchmark)
        graded_by = grader.alias
        results = grader.run([r for _, r in planned], stats=stats, log=context.log.info)
        groups = {key: g.sort("sample") for key, g in free.group_by("fact_id", "task", "thinking", maintain_order=True)}
        for (key, _), res in zip(planned, results):
            group = groups[key]
            try:
                got = method.parse_grades(res.text or "", group.height) if res.ok else None
            except ValueError:
                got = None
            if got is None:
                unparsed += 1
                got = [method.OTHER] * group.height
            labels += [{**r, "label": g} for r, g in zip(group.iter_rows(named=True), got)]
    # The model column lets the reports read every partition as one table.
    frame = (
        pl.DataFrame(labels, schema={**SAMPLE_SCHEMA, "label": pl.String})
        .sort("fact_id", "task", "thinking", "sample")
        .with_columns(pl.lit(context.partition_key).alias("model"))
    )
    return dg.Output(
        frame,
        metadata={
            **table_metadata(frame.select("fact_id", "task", "thinking", "answer", "label")),
            **stats.as_metadata(),
            "grader": graded_by,
            "grader_unparsed": unparsed,
            "by_label": counts_md(dict(frame.group_by("label").len().sort("label").iter_rows()), "label"),
        },
    )


def _definitions(settings: WikiProfileSettings, uncertainty: UncertaintySettings) -> dg.MetadataValue:
    """What every column of Table 2 counts, with the thresholds and the NaN strategy used,
    and how its intervals and tests are computed."""
    rows = [{"column": c, "header": TABLE_2_HEADERS.get(c, c), "definition": d} for c, d in method.DEFINITIONS.items()]
    shares = ", ".join(TABLE_2_HEADERS[c] for c in analysis.TABLE_2_INTERVALS)
    lines = [
        f"Thresholds: tau_enc = tau_know = {settings.tau:g}, strict (g(q) > tau); NaN strategy {settings.nan_strategy}.",
        "Knows and Knows(+Think) include direct inference (the method notes' Table 2); the Figure 4 bar excludes it.",
        f"{shares} (table_2_uncertainty; the stored table's '<share> ci_low', '<share> ci_high' and "
        f"'<share> tied_best'): {uncertainty.describe(analysis.TABLE_2_ITEMS)}; a share's facts are {analysis.TABLE_2_ITEMS_OF}.",
        "",
        md_table(pl.DataFrame(rows), len(rows)),
    ]
    return dg.MetadataValue.md("\n".join(lines))


@dg.asset(
    ins={"graded_responses": wiring.input("wikiprofile_graded_responses")},
    kinds={"polars"},
    **{**STEP, "code_version": "3"},
)
def wikiprofile_profiles(
    context: dg.AssetExecutionContext, graded_responses: pl.DataFrame, wikiprofile_settings: WikiProfileSettings
) -> dg.Output:
    """Each fact's question grades g(q), encodes / knows without and with thinking, and its
    profile under the configured NaN strategy (S2 by default), with the model's row of
    Table 2. A model without a thinking run is profiled from its plain run: its facts say
    ``thinking_run`` missing, KT null, and a fact not known without thinking gets the union
    of the two profiles KT would separate."""
    strategy = wikiprofile_settings.nan_strategy
    weight = method.PARTIAL_WEIGHT_S3 if strategy == "S3" else None
    grades = profiling.question_grades(graded_responses, weight)
    facts = profiling.fact_profiles(grades, strategy, wikiprofile_settings.tau, wikiprofile_settings.tau)
    summary = method.profile_summary(facts.to_dicts())
    facts = facts.with_columns(pl.lit(context.partition_key).alias("model"))
    row = profiling.summary_table([{"model": context.partition_key, **summary}])
    missing = [context.partition_key] if summary["thinking_run"] == method.THINKING_MISSING else []
    return dg.Output(
        facts,
        metadata={
            **table_metadata(facts),
            "strategy": strategy,
            "tau": wikiprofile_settings.tau,
            **thinking_metadata(missing),
            "table_2_row": table_2(row),
            **{
                f"share/{k}": round(float(v), 4)
                for k, v in summary.items()
                if k in method.SUMMARY_SHARES and v is not None
            },
        },
    )


def _segment(row: dict, name: str, undecided: bool) -> float:
    """A bar segment's length: a share, 0 where it is null or NaN; the undecided unions only
    for a model without a thinking run (with one, its parts are drawn instead)."""
    value = row[name]
    if value is None or value != value or (undecided and row["thinking_run"] != method.THINKING_MISSING):
        return 0.0
    return value


def _figure_4(rows: list[dict], plt) -> dg.MetadataValue:
    """Figure 4: each model's profiles as one stacked bar over its profiled facts, its Knows
    share (excluding direct inference) written beside it."""
    fig, ax = plt.subplots(figsize=(7, 0.6 + 0.5 * max(1, len(rows))))
    left = [0.0] * len(rows)
    # Without a thinking run only the unions are known; they stand where their parts would.
    segments = [
        ("encoding_failure", None),
        ("recall_failure", None),
        (method.UNDECIDED[True], "//"),
        (method.UNDECIDED[False], "\\\\"),
        ("direct_recall", None),
        ("recall_with_thinking", None),
        ("inference_without_encoding", None),
    ]
    for name, hatch in segments:
        values = [_segment(r, name, undecided=hatch is not None) for r in rows]
        if hatch and not any(values):
            continue
        ax.barh([r["model"] for r in rows], values, left=left, label=TABLE_2_HEADERS[name], hatch=hatch)
        left = [a + b for a, b in zip(left, values)]
    for i, r in enumerate(rows):
        bar = r["knows_thinking_excl_direct"]
        if bar is not None and bar == bar:
            ax.text(1.01, i, f"Knows {bar:.2f}", va="center", fontsize=7)
    ax.set_xlim(0, 1.15)
    ax.set_xlabel(
        "share of profiled facts (Knows = direct recall + recall w/ thinking + inference w/o encoding, excl. direct inference)",
        fontsize=7,
    )
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3)
    ax.set_title("Figure 4: knowledge profiles per model", fontsize=9)
    return png_markdown(fig)


# The stored table's interval columns, present (null) even for a share no model has, such as
# Knows(+Think) when no model has a thinking run: the leaderboard reads them by name.
INTERVAL_COLUMNS = {
    f"{share} {end}": dtype
    for share in analysis.TABLE_2_INTERVALS
    for end, dtype in (("ci_low", pl.Float64), ("ci_high", pl.Float64), ("tied_best", pl.Boolean))
}
NO_BOOTSTRAP = f"{NO_GRADED} (of the tasks {', '.join(analysis.BOOTSTRAP_TASKS)})"


def _with_intervals(table: pl.DataFrame, long: pl.DataFrame) -> pl.DataFrame:
    """Table 2 with each share's interval and tied_best beside it, keyed by model."""
    attached = intervals.attach(table, long, ["model"])
    missing = [pl.lit(None, dtype=t).alias(c) for c, t in INTERVAL_COLUMNS.items() if c not in attached.columns]
    return attached.with_columns(missing).select(*table.columns, *INTERVAL_COLUMNS)


def _d4(stability: pl.DataFrame, plt) -> dict:
    """Appendix D.4's metadata: the widths of :func:`analysis.bootstrap_stability`, their
    figure, and the paper's claim (under 1% at n = 8) per model and task, checked where the
    questions suffice."""
    claims = analysis.d4_claims(stability)
    fig, ax = plt.subplots(figsize=(6, 3.2))
    plot_widths(ax, stability)
    rule = (
        f"The claim is checked on a task of at least {analysis.D4_MIN_QUESTIONS:,} questions: a share over q "
        f"questions moves in steps of 1/q, and a {analysis.D4_BOUND:.0%} width is measured only when it spans "
        "several of them (the paper's D.4 ran on 5,000 facts)."
    )
    lines = [f"- {r['model']}, {r['task']}: {r['claim']}" for r in claims.iter_rows(named=True)]
    return {
        "d4_stability": report_table(stability, analysis.BOOTSTRAP_DEFINITIONS),
        "figure_19": png_markdown(fig),
        "d4_claim": dg.MetadataValue.md("\n".join([*(lines or [NO_BOOTSTRAP]), "", rule])),
    }


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    kinds={"polars"},
    code_version="4",
    ins={
        "profiles": wiring.materialized("wikiprofile_profiles"),
        "graded_responses": wiring.materialized("wikiprofile_graded_responses"),
    },
)
def wikiprofile_profile_report(
    context: dg.AssetExecutionContext,
    profiles: pl.DataFrame,
    graded_responses: pl.DataFrame,
    wikiprofile_settings: WikiProfileSettings,
    uncertainty: UncertaintySettings,
) -> dg.Output:
    """Table 2 over every profiled model, shares in [0, 1]: Encodes, Knows(+Think) and Knows
    (both including direct inference), the Figure 4 Knows bar (excluding it), the five
    profiles and the excluded shares, as ``definitions`` says; with Figure 4's stacked bars
    of the profiles (a model without a thinking run shows its undecided shares hatched).
    Encodes, Knows and Knows(+Think) carry their interval over facts and whether each model
    is tied with the best (``table_2_uncertainty``); ``d4_stability``, ``figure_19`` and
    ``d4_claim`` show how stable the share of questions above tau is for n samples per
    question (appendix D.4)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    profiles = analysis.with_schema(profiles, analysis.PROFILE_SCHEMA)
    rows = [
        {"model": alias, **method.profile_summary(frame.to_dicts())}
        for (alias,), frame in sorted(profiles.group_by("model"), key=lambda kv: kv[0])
    ]
    table = profiling.summary_table(rows)
    long = intervals.summarize(
        analysis.table_2_scores(profiles), ["model"], "fact_id", analysis.TABLE_2_INTERVALS, uncertainty
    ).sort("model", maintain_order=True)
    stability = analysis.bootstrap_stability(
        graded_responses,
        resamples=wikiprofile_settings.bootstrap_resamples,
        seed=wikiprofile_settings.seed,
        tau=wikiprofile_settings.tau,
    )
    stored = _with_intervals(table, long)
    return dg.Output(
        stored,
        metadata={
            **table_metadata(stored),
            "slice": profiles_slice(profiles, context),
            "table_2": table_2(table),
            "table_2_uncertainty": report_table(
                long,
                {
                    **intervals.definitions({"model": analysis.MODEL}, uncertainty, analysis.TABLE_2_ITEMS),
                    "items": f"the facts averaged over: {analysis.TABLE_2_ITEMS_OF}",
                },
            ),
            **why_empty(
                {
                    "table_2": (table, NO_MODEL),
                    "table_2_uncertainty": (long, NO_MODEL),
                    "d4_stability": (stability, NO_BOOTSTRAP),
                }
            ),
            "definitions": _definitions(wikiprofile_settings, uncertainty),
            **thinking_metadata(analysis.models_without_thinking(profiles)),
            "figure_4": _figure_4(rows, plt),
            **_d4(stability, plt),
            "bootstrap_resamples": wikiprofile_settings.bootstrap_resamples,
        },
    )


wikiprofile_profile_assets = [
    wikiprofile_responses,
    wikiprofile_graded_responses,
    wikiprofile_profiles,
    wikiprofile_profile_report,
]
