"""Profiling subject models on the WikiProfile benchmark as Dagster assets, partitioned by
model alias (dynamic: an alias added to the registry's ``wikiprofile.subjects`` becomes a
partition). The rules live in :mod:`assets.eval.wikiprofile.rules` and
:mod:`assets.eval.wikiprofile.steps`."""

import dagster as dg
import polars as pl

from assets.common.metadata import counts_md, md_table, png_markdown, report_slice, report_table, run_profile, table_metadata, why_empty
from assets.common.prompts import code_version
from assets.common.wiring import Wiring
from assets.eval.wikiprofile import analysis
from assets.eval.wikiprofile import rules as method
from assets.eval.wikiprofile import steps as profiling
from assets.partitions import subject_partitions
from assets.wikiprofile import sources
from assets.wikiprofile.settings import WikiProfileSettings
from resources.llm import CallStats, LLMResource
from resources.llm.registry import llm_pool

# Keyed as QUIT's and RECOR's evaluations are (eval/wikiprofile_<name>), shown beside the build.
PREFIX, GROUP = "eval", "wikiprofile"
wiring = Wiring(PREFIX, GROUP)
STEP = dict(key_prefix=PREFIX, group_name=GROUP, partitions_def=subject_partitions, code_version="2")


def _prompted(rules: str, *prompts: str) -> dict:
    """The step's settings with a code version that follows its rules and its prompts."""
    return {**STEP, "code_version": code_version(rules, *prompts)}
SAMPLE_SCHEMA = {"fact_id": pl.String, "task": pl.String, "thinking": pl.Boolean, "sample": pl.Int32, "gold_slot": pl.Int32,
                 "response": pl.String, "answer": pl.String, "error": pl.String}


def _grader(llm: LLMResource) -> str:
    return llm.role("wikiprofile.grader")[0]


@dg.asset(ins={"benchmark": wiring.input("wikiprofile_tasks")}, kinds={"polars", "litellm"}, pool=llm_pool("wikiprofile.subjects", "wikiprofile.grader"),
          **_prompted("2", "eval/subject_completion", "eval/subject_choice", "eval/subject_choice_cot", "eval/subject_question", "eval/subject_question_cot"))
def wikiprofile_responses(context: dg.AssetExecutionContext, benchmark: pl.DataFrame, llm: LLMResource,
              wikiprofile_settings: WikiProfileSettings) -> dg.Output:
    """The subject model's sampled responses: ``n_samples`` per task at temperature 1, the
    knowledge questions without and with thinking, multiple-choice options shuffled per
    sample (each position holds the gold equally often)."""
    alias = context.partition_key
    spec = llm.spec(alias)
    planned = profiling.sample_requests(benchmark, spec.thinking, wikiprofile_settings.n_samples, wikiprofile_settings.temperature)
    stats, rows = CallStats(), []
    for thinking in (False, True):
        part = [(s, r) for s, r, t in planned if t == thinking]
        if not part:
            continue
        # a registry budget for the kind (thinking / answer) replaces the small model's caps
        results = llm.run(alias, [r for _, r in part], stats=stats, thinking=thinking, log=context.log.info,
                          kind="thinking" if thinking else "answer")
        for (s, _), res in zip(part, results):
            text = res.text if res.ok else None
            rows.append({"fact_id": s.fact_id, "task": s.task, "thinking": s.thinking, "sample": s.sample, "gold_slot": s.gold_slot,
                         "response": text, "answer": profiling.response_answer(text, s.thinking) if text is not None else None,
                         "error": res.error})
    frame = pl.DataFrame(rows, schema=SAMPLE_SCHEMA)
    return dg.Output(frame, metadata={
        **table_metadata(frame.select("fact_id", "task", "thinking", "sample", "answer")), **stats.as_metadata(),
        "model": alias, "thinking_switch": spec.thinking, "samples_per_question": wikiprofile_settings.n_samples,
    })


@dg.asset(ins={"responses": wiring.input("wikiprofile_responses"), "benchmark": wiring.input("wikiprofile_tasks")},
          kinds={"polars", "litellm"}, pool=llm_pool("wikiprofile.subjects", "wikiprofile.grader"), **_prompted("3", "eval/grade_answers", "eval/grade_completions"))
def wikiprofile_graded_responses(context: dg.AssetExecutionContext, responses: pl.DataFrame, benchmark: pl.DataFrame,
                     llm: LLMResource) -> dg.Output:
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
    if not llm.binding(grader):
        labels += [{**r, "label": g} for r, g in zip(free.iter_rows(named=True), profiling.rule_labels(free, benchmark))]
        grader = f"rules ({grader} is advisory)"
    else:
        planned = profiling.grading_requests(free, benchmark)
        results = llm.run(grader, [r for _, r in planned], stats=stats, log=context.log.info)
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
    frame = (pl.DataFrame(labels, schema={**SAMPLE_SCHEMA, "label": pl.String}).sort("fact_id", "task", "thinking", "sample")
             .with_columns(pl.lit(context.partition_key).alias("model")))
    return dg.Output(frame, metadata={
        **table_metadata(frame.select("fact_id", "task", "thinking", "answer", "label")), **stats.as_metadata(),
        "grader": grader, "grader_unparsed": unparsed,
        "by_label": counts_md(dict(frame.group_by("label").len().sort("label").iter_rows()), "label"),
    })


# Table 2's headers name what each share counts (the full wording is in the ``definitions``
# metadata, from :data:`method.DEFINITIONS`).
TABLE_2_HEADERS = {
    "encodes": "Encodes", "knows": "Knows (incl. direct inf.)", "knows_thinking": "Knows(+Think) (incl. direct inf.)",
    "knows_thinking_excl_direct": "Knows, Fig. 4 (excl. direct inf.)", "encoding_failure": "Enc. Fail",
    "recall_failure": "Recall Fail", "direct_recall": "Direct Recall", "recall_with_thinking": "Recall w/ Think",
    "inference_without_encoding": "Inf. w/o Enc", method.UNDECIDED[True]: "E, not K0 (Recall Fail + w/ Think)",
    method.UNDECIDED[False]: "not E, not K0 (Enc. Fail + Inf. w/o Enc)", "excluded_ungradable": "Excluded: ungradable (O/P)",
    "excluded_direct_inference": "Excluded: direct inf.",
}


def _table_2(table: pl.DataFrame, **more: str) -> dg.TableMetadataValue:
    """Table 2 rendered inline, under the paper's headers, each described as
    :data:`method.DEFINITIONS` says (a share over no facts, NaN, is left blank); ``more``
    describes the columns a variant adds (the thresholds of the sweep)."""
    described = {"model": analysis.MODEL, "facts": "the model's facts, the excluded ones included",
                 "profiled": "facts given a profile (one of the five, or an undecided union without a thinking "
                             "run): neither ungradable nor direct inference",
                 **{TABLE_2_HEADERS.get(c, c): d for c, d in method.DEFINITIONS.items()}, **more}
    return report_table(table.rename(TABLE_2_HEADERS), described)


def _definitions(settings: WikiProfileSettings) -> dg.MetadataValue:
    """What every column of Table 2 counts, with the thresholds and the NaN strategy used."""
    rows = [{"column": c, "header": TABLE_2_HEADERS.get(c, c), "definition": d} for c, d in method.DEFINITIONS.items()]
    lines = [f"Thresholds: tau_enc = tau_know = {settings.tau:g}, strict (g(q) > tau); NaN strategy {settings.nan_strategy}.",
             "Knows and Knows(+Think) include direct inference (the method notes' Table 2); the Figure 4 bar excludes it.",
             "", md_table(pl.DataFrame(rows), len(rows))]
    return dg.MetadataValue.md("\n".join(lines))


def _slice(profiles: pl.DataFrame, context) -> str:
    """The subject models and facts a WikiProfile report counts, and the run's profile."""
    models = sorted(profiles["model"].unique().to_list()) if profiles.height else []
    return report_slice(f"{len(models)} subject models ({', '.join(models) or 'none'}), "
                        f"{profiles['fact_id'].n_unique() if profiles.height else 0} facts", run_profile(context))


NO_MODEL = "no model is profiled: materialize eval/wikiprofile_profiles for a subject model"
NO_GRADED = "no question is graded: materialize eval/wikiprofile_graded_responses for a subject model"


def _inline(tables: dict[str, tuple[pl.DataFrame, dict[str, str], str]]) -> dict:
    """Each analysis table inline under its name, its columns described, with ``why_empty``
    naming the empty ones and their reason."""
    return {**{name: report_table(frame, definitions) for name, (frame, definitions, _) in tables.items()},
            **why_empty({name: (frame, reason) for name, (frame, _, reason) in tables.items()})}


def _thinking_metadata(missing: list[str]) -> dict:
    """Names the models profiled without their thinking run: their Knows(+Think) and the
    profiles that need it are null, not zero."""
    if not missing:
        return {"thinking_run_missing": "none"}
    return {"thinking_run_missing": ", ".join(missing),
            "thinking_run_missing_reason": "no knowledge question was graded with thinking (a model without a thinking "
                                           "setting, or a run not asked); KT is unknown, so Knows(+Think), the Figure 4 "
                                           "bar and the four profiles that KT separates are null"}


@dg.asset(ins={"graded_responses": wiring.input("wikiprofile_graded_responses")}, kinds={"polars"}, **{**STEP, "code_version": "3"})
def wikiprofile_profiles(context: dg.AssetExecutionContext, graded_responses: pl.DataFrame, wikiprofile_settings: WikiProfileSettings) -> dg.Output:
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
    return dg.Output(facts, metadata={
        **table_metadata(facts), "strategy": strategy, "tau": wikiprofile_settings.tau, **_thinking_metadata(missing),
        "table_2_row": _table_2(row),
        **{f"share/{k}": round(float(v), 4) for k, v in summary.items() if k in method.SUMMARY_SHARES and v is not None},
    })


def _segment(row: dict, name: str, undecided: bool) -> float:
    """A bar segment's length: a share, 0 where it is null or NaN; the undecided unions only
    for a model without a thinking run (with one, its parts are drawn instead)."""
    value = row[name]
    if value is None or value != value or (undecided and row["thinking_run"] != method.THINKING_MISSING):
        return 0.0
    return value


@dg.asset(key_prefix=PREFIX, group_name=GROUP, kinds={"polars"}, code_version="3",
          ins={"profiles": wiring.materialized("wikiprofile_profiles")})
def wikiprofile_profile_report(context: dg.AssetExecutionContext, profiles: pl.DataFrame, wikiprofile_settings: WikiProfileSettings) -> dg.Output:
    """Table 2 over every profiled model, shares in [0, 1]: Encodes, Knows(+Think) and Knows
    (both including direct inference), the Figure 4 Knows bar (excluding it), the five
    profiles and the excluded shares, as ``definitions`` says; with Figure 4's stacked bars
    of the profiles (a model without a thinking run shows its undecided shares hatched)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    profiles = analysis.with_schema(profiles, analysis.PROFILE_SCHEMA)
    rows = [{"model": alias, **method.profile_summary(frame.to_dicts())}
            for (alias,), frame in sorted(profiles.group_by("model"), key=lambda kv: kv[0])]
    table = profiling.summary_table(rows)
    fig, ax = plt.subplots(figsize=(7, 0.6 + 0.5 * max(1, len(rows))))
    left = [0.0] * len(rows)
    # Without a thinking run only the unions are known; they stand where their parts would.
    segments = [("encoding_failure", None), ("recall_failure", None), (method.UNDECIDED[True], "//"),
                (method.UNDECIDED[False], "\\\\"), ("direct_recall", None), ("recall_with_thinking", None),
                ("inference_without_encoding", None)]
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
    ax.set_xlabel("share of profiled facts (Knows = direct recall + recall w/ thinking + inference w/o encoding, excl. direct inference)",
                  fontsize=7)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3)
    ax.set_title("Figure 4: knowledge profiles per model", fontsize=9)
    return dg.Output(table, metadata={
        **table_metadata(table), "slice": _slice(profiles, context), "table_2": _table_2(table),
        **why_empty({"table_2": (table, NO_MODEL)}),
        "definitions": _definitions(wikiprofile_settings), **_thinking_metadata(analysis.models_without_thinking(profiles)),
        "figure_4": png_markdown(fig)})


wikiprofile_profile_assets = [wikiprofile_responses, wikiprofile_graded_responses, wikiprofile_profiles, wikiprofile_profile_report]


# WikiProfile's analyses as report assets over every profiled model (all partitions of the
# profiling assets): popularity tiers, direct vs reverse with error attribution, thinking as
# recovery with the correct>=p curve, and the robustness of the thresholds and of n. The
# computations live in :mod:`assets.eval.wikiprofile.analysis`; these assets only plot and show.

# Version 3: shares in [0, 1] (a stored table of version 2 holds a hundred times those).
REPORT = dict(key_prefix=PREFIX, group_name=GROUP, kinds={"polars"}, code_version="3")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _grades(graded: pl.DataFrame, settings: WikiProfileSettings) -> pl.DataFrame:
    return analysis.model_grades(graded, method.PARTIAL_WEIGHT_S3 if settings.nan_strategy == "S3" else None)


def _bars(ax, groups: list[str], series: dict[str, list[float]]) -> None:
    """Grouped bars: one group per entry of ``groups``, one bar per series."""
    width = 0.8 / max(1, len(series))
    for j, (label, values) in enumerate(series.items()):
        ax.bar([i + j * width for i in range(len(groups))], [0.0 if v is None or v != v else v for v in values], width, label=label)
    ax.set_xticks([i + width * (len(series) - 1) / 2 for i in range(len(groups))], groups, fontsize=8)


@dg.asset(ins={"profiles": wiring.materialized("wikiprofile_profiles"), "benchmark": wiring.input("wikiprofile_tasks"),
               "source_pages": wiring.input("wikiprofile_pages")}, **REPORT)
def wikiprofile_popularity_report(context: dg.AssetExecutionContext, profiles: pl.DataFrame, benchmark: pl.DataFrame,
                      source_pages: pl.DataFrame) -> dg.Output:
    """Encoding and recall rates (shares in [0, 1]) of the top and bottom 20% of facts by
    their page's monthly views (Figure 5), with the gain from thinking and the gaps (Delta,
    Delta_T); ``tiers`` gives each tier's views."""
    views = (benchmark.select("fact_id", "page_id").unique()
             .join(source_pages.select("page_id", "mean_monthly_views"), on="page_id", how="left"))
    tiers = sources.popularity_tiers(views, key="fact_id")
    table = analysis.popularity(profiles, tiers)
    gaps = analysis.popularity_gaps(table)
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
    models = sorted(table["model"].unique())
    for ax, metric, title in ((axes[0], "encodes", "encoding rate"), (axes[1], "recall", "recall rate (of encoded)")):
        _bars(ax, models, {tier: [table.filter((pl.col("model") == m) & (pl.col("tier") == tier))[metric][0] for m in models]
                           for tier in ("top", "bottom")})
        ax.set_title(title, fontsize=9)
    fig.suptitle("Figure 5: encoding and recall by page popularity", fontsize=9)
    axes[0].set_ylabel("share of facts")
    axes[0].set_ylim(0, 1)
    axes[1].legend(fontsize=8, title="page views", title_fontsize=8)
    bounds = views.join(tiers, on="fact_id").group_by("tier").agg(pl.col("mean_monthly_views").min().alias("min_views"),
                                                                   pl.col("mean_monthly_views").max().alias("max_views"),
                                                                   pl.len().alias("facts")).sort("tier")
    no_fact = "the benchmark read (eval/wikiprofile_tasks) has no fact"
    tables = {"popularity": (table, analysis.POPULARITY_DEFINITIONS, NO_MODEL), "gaps": (gaps, analysis.GAPS_DEFINITIONS, NO_MODEL),
              "tiers": (bounds, analysis.TIERS_DEFINITIONS, no_fact)}
    return dg.Output(table, metadata={**table_metadata(table), "slice": _slice(profiles, context),
                                      **_inline(tables), "figure_5": png_markdown(fig),
                                      **_thinking_metadata(analysis.models_without_thinking(profiles))})


@dg.asset(ins={"graded_responses": wiring.materialized("wikiprofile_graded_responses"), "profiles": wiring.materialized("wikiprofile_profiles")}, **REPORT)
def wikiprofile_direction_report(context: dg.AssetExecutionContext, graded_responses: pl.DataFrame, profiles: pl.DataFrame,
                     wikiprofile_settings: WikiProfileSettings) -> dg.Output:
    """Direct vs reverse over encoded facts, in generation (closed book, without and with
    thinking) and in verification (multiple choice) (Figure 6), and which side fails for the
    facts not known (Figure 14); every rate a share in [0, 1]."""
    grades = _grades(graded_responses, wikiprofile_settings)
    table = analysis.direction(grades, profiles, wikiprofile_settings.tau)
    errors = analysis.error_attribution(grades, profiles, wikiprofile_settings.tau)
    plt = _pyplot()
    models = sorted(table["model"].unique())
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2), gridspec_kw={"width_ratios": [1, 1, 1.2]})
    for ax, condition, title in ((axes[0], "verify", "verify (multiple choice)"), (axes[1], "generate", "generate (closed book)")):
        rows = table.filter(pl.col("condition") == condition)
        _bars(ax, models, {side: [rows.filter(pl.col("model") == m)[side][0] for m in models] for side in ("direct", "reverse")})
        ax.set_title(title, fontsize=9)
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("share of encoded facts known")
    axes[1].legend(fontsize=8)
    scoped = errors.filter(pl.col("scope") == "all")
    left = [0.0] * len(models)
    for part in ("direct_only", "both", "reverse_only"):
        values = [v if v == v else 0.0 for v in (scoped.filter(pl.col("model") == m)[part][0] for m in models)]
        axes[2].barh(models, values, left=left, label=part.replace("_", " "))
        left = [a + b for a, b in zip(left, values)]
    axes[2].set_title("Figure 14: which side fails", fontsize=9)
    fig.suptitle("Figure 6: direct vs reverse over encoded facts", fontsize=9)
    axes[2].set_xlabel("share of facts not known")
    axes[2].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3)
    tables = {"direct_vs_reverse": (table, analysis.DIRECTION_DEFINITIONS, NO_MODEL),
              "error_attribution": (errors, analysis.ERROR_DEFINITIONS, NO_MODEL)}
    return dg.Output(table, metadata={**table_metadata(table), "slice": _slice(profiles, context),
                                      **_inline(tables), "figures_6_14": png_markdown(fig),
                                      **_thinking_metadata(analysis.models_without_thinking(profiles))})


@dg.asset(ins={"graded_responses": wiring.materialized("wikiprofile_graded_responses"), "profiles": wiring.materialized("wikiprofile_profiles")}, **REPORT)
def wikiprofile_thinking_report(context: dg.AssetExecutionContext, graded_responses: pl.DataFrame, profiles: pl.DataFrame,
                    wikiprofile_settings: WikiProfileSettings) -> dg.Output:
    """Thinking as recovery: the share of facts not known directly that thinking recovers,
    encoded or not (Figure 8), and the correct>=p curves without and with thinking over the
    knowledge questions (Figure 12: availability at low p, robustness at high p)."""
    recovery = analysis.thinking_recovery(profiles)
    curve = analysis.correct_at_least(_grades(graded_responses, wikiprofile_settings))
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
    models = sorted(recovery["model"].unique())
    _bars(axes[0], models, {("encoded" if enc else "not encoded"):
                            [recovery.filter((pl.col("model") == m) & (pl.col("encoded") == enc))["recovered_share"][0] for m in models]
                            for enc in (True, False)})
    axes[0].set_ylabel("share of facts recovered by thinking")
    axes[0].set_title("Figure 8: thinking as recovery", fontsize=9)
    axes[1].set_title("Figure 12: correct>=p without and with thinking", fontsize=9)
    axes[0].set_ylim(0, 1)
    axes[0].legend(fontsize=8)
    for (model, thinking), part in sorted(curve.group_by("model", "thinking"), key=lambda kv: kv[0]):
        axes[1].plot(part["p"], part["share"], marker="o", linestyle="-" if thinking else "--",
                     label=f"{model} ({'thinking' if thinking else 'no thinking'})")
    axes[1].set_xlabel("p")
    axes[1].set_ylabel("correct>=p (share of questions)")
    axes[1].set_ylim(0, 1)
    axes[1].legend(fontsize=7)
    no_thinking = (NO_MODEL if profiles.is_empty() else
                   "no profiled model has a thinking run (thinking_run_missing names them): there is nothing recovered to count")
    tables = {"recovery": (recovery, analysis.RECOVERY_DEFINITIONS, no_thinking),
              "correct_at_least_p": (curve, analysis.CURVE_DEFINITIONS, NO_GRADED)}
    return dg.Output(recovery, metadata={**table_metadata(recovery), "slice": _slice(profiles, context),
                                         **_inline(tables), "figures_8_12": png_markdown(fig),
                                         **_thinking_metadata(analysis.models_without_thinking(profiles))})


@dg.asset(ins={"graded_responses": wiring.materialized("wikiprofile_graded_responses")}, **REPORT)
def wikiprofile_robustness_report(context: dg.AssetExecutionContext, graded_responses: pl.DataFrame,
                      wikiprofile_settings: WikiProfileSettings) -> dg.Output:
    """Table 2 at other thresholds (tau_enc, tau_know) (appendix D.2), and the bootstrap width
    of the share of questions with g > 0.5 for n = 2..16 samples, drawn from each question's
    own samples (appendix D.4); shares in [0, 1]."""
    sweep = analysis.tau_sweep(_grades(graded_responses, wikiprofile_settings), wikiprofile_settings.nan_strategy)
    boot = analysis.bootstrap_stability(graded_responses, resamples=wikiprofile_settings.bootstrap_resamples,
                                        seed=wikiprofile_settings.seed, tau=wikiprofile_settings.tau)
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
    for (model, task), part in sorted(boot.group_by("model", "task"), key=lambda kv: kv[0]):
        axes[0].plot(part["n"], part["width"], marker="o", label=f"{model} {task}")
    axes[0].set_xlabel("samples per question (n)")
    axes[0].set_ylabel("90% interval width (share of questions)")
    axes[0].set_title("Figure 19: bootstrap width by n", fontsize=9)
    axes[1].set_title("Figure 18: Table 2 at other thresholds", fontsize=9)
    axes[0].legend(fontsize=7)
    labels = [f"{e}/{k}" for e, k in analysis.TAU_GRID]
    for (model,), part in sorted(sweep.group_by("model"), key=lambda kv: kv[0]):
        for metric, style in (("encodes", "-"), ("knows", "--"), ("knows_thinking", ":")):
            axes[1].plot(labels, part[metric].fill_nan(0.0).fill_null(0.0), style, marker="o", label=f"{model} {metric}")
    axes[1].set_xlabel("tau_enc / tau_know")
    axes[1].set_ylabel("share of facts")
    axes[1].set_ylim(0, 1)
    axes[1].tick_params(axis="x", labelsize=7)
    axes[1].legend(fontsize=7)
    thresholds = {"tau_enc": "the encoding threshold: E needs an encoding task with g > tau_enc",
                  "tau_know": "the knowing threshold: K0 and KT need every gradable knowledge question with g > tau_know"}
    return dg.Output(sweep, metadata={**table_metadata(sweep), "slice": _slice(graded_responses, context),
                                      "tau_sweep": _table_2(sweep, **thresholds),
                                      "bootstrap": report_table(boot, analysis.BOOTSTRAP_DEFINITIONS),
                                      **why_empty({"tau_sweep": (sweep, NO_GRADED),
                                                   "bootstrap": (boot, f"{NO_GRADED} (of the tasks {', '.join(analysis.BOOTSTRAP_TASKS)})")}),
                                      "bootstrap_resamples": wikiprofile_settings.bootstrap_resamples,
                                      "figures_18_19": png_markdown(fig),
                                      **_thinking_metadata(sorted(sweep.filter(pl.col("thinking_run") == method.THINKING_MISSING)["model"].unique()))})


wikiprofile_analysis_assets = [wikiprofile_popularity_report, wikiprofile_direction_report, wikiprofile_thinking_report,
                               wikiprofile_robustness_report]
