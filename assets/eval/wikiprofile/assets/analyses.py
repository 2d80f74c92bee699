"""WikiProfile's analyses as report assets over every profiled model (section 5, appendices B
and D)."""

import dagster as dg
import polars as pl

from assets.common.metadata import png_markdown, report_table, table_metadata, why_empty
from assets.eval.wikiprofile import analysis
from assets.eval.wikiprofile import rules as method
from assets.eval.wikiprofile.assets.common import (
    GROUP,
    NO_GRADED,
    NO_MODEL,
    PREFIX,
    inline_tables,
    plot_widths,
    profiles_slice,
    table_2,
    thinking_metadata,
    wiring,
)
from assets.wikiprofile import sources
from assets.wikiprofile.settings import WikiProfileSettings

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
        ax.bar(
            [i + j * width for i in range(len(groups))],
            [0.0 if v is None or v != v else v for v in values],
            width,
            label=label,
        )
    ax.set_xticks([i + width * (len(series) - 1) / 2 for i in range(len(groups))], groups, fontsize=8)


@dg.asset(
    ins={
        "profiles": wiring.materialized("wikiprofile_profiles"),
        "benchmark": wiring.input("wikiprofile_tasks"),
        "source_pages": wiring.input("wikiprofile_pages"),
    },
    **REPORT,
)
def wikiprofile_popularity_report(
    context: dg.AssetExecutionContext, profiles: pl.DataFrame, benchmark: pl.DataFrame, source_pages: pl.DataFrame
) -> dg.Output:
    """Encoding and recall rates (shares in [0, 1]) of the top and bottom 20% of facts by
    their page's monthly views (Figure 5), with the gain from thinking and the gaps (Delta,
    Delta_T); ``tiers`` gives each tier's views."""
    views = (
        benchmark.select("fact_id", "page_id")
        .unique()
        .join(source_pages.select("page_id", "mean_monthly_views"), on="page_id", how="left")
    )
    tiers = sources.popularity_tiers(views, key="fact_id")
    table = analysis.popularity(profiles, tiers)
    gaps = analysis.popularity_gaps(table)
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
    models = sorted(table["model"].unique())
    for ax, metric, title in ((axes[0], "encodes", "encoding rate"), (axes[1], "recall", "recall rate (of encoded)")):
        _bars(
            ax,
            models,
            {
                tier: [table.filter((pl.col("model") == m) & (pl.col("tier") == tier))[metric][0] for m in models]
                for tier in ("top", "bottom")
            },
        )
        ax.set_title(title, fontsize=9)
    fig.suptitle("Figure 5: encoding and recall by page popularity", fontsize=9)
    axes[0].set_ylabel("share of facts")
    axes[0].set_ylim(0, 1)
    axes[1].legend(fontsize=8, title="page views", title_fontsize=8)
    bounds = (
        views.join(tiers, on="fact_id")
        .group_by("tier")
        .agg(
            pl.col("mean_monthly_views").min().alias("min_views"),
            pl.col("mean_monthly_views").max().alias("max_views"),
            pl.len().alias("facts"),
        )
        .sort("tier")
    )
    no_fact = "the benchmark read (eval/wikiprofile_tasks) has no fact"
    tables = {
        "popularity": (table, analysis.POPULARITY_DEFINITIONS, NO_MODEL),
        "gaps": (gaps, analysis.GAPS_DEFINITIONS, NO_MODEL),
        "tiers": (bounds, analysis.TIERS_DEFINITIONS, no_fact),
    }
    return dg.Output(
        table,
        metadata={
            **table_metadata(table),
            "slice": profiles_slice(profiles, context),
            **inline_tables(tables),
            "figure_5": png_markdown(fig),
            **thinking_metadata(analysis.models_without_thinking(profiles)),
        },
    )


@dg.asset(
    ins={
        "graded_responses": wiring.materialized("wikiprofile_graded_responses"),
        "profiles": wiring.materialized("wikiprofile_profiles"),
    },
    **REPORT,
)
def wikiprofile_direction_report(
    context: dg.AssetExecutionContext,
    graded_responses: pl.DataFrame,
    profiles: pl.DataFrame,
    wikiprofile_settings: WikiProfileSettings,
) -> dg.Output:
    """Direct vs reverse over encoded facts, in generation (closed book, without and with
    thinking) and in verification (multiple choice) (Figure 6), and which side fails for the
    facts not known (Figure 14); every rate a share in [0, 1]."""
    grades = _grades(graded_responses, wikiprofile_settings)
    table = analysis.direction(grades, profiles, wikiprofile_settings.tau)
    errors = analysis.error_attribution(grades, profiles, wikiprofile_settings.tau)
    plt = _pyplot()
    models = sorted(table["model"].unique())
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2), gridspec_kw={"width_ratios": [1, 1, 1.2]})
    for ax, condition, title in (
        (axes[0], "verify", "verify (multiple choice)"),
        (axes[1], "generate", "generate (closed book)"),
    ):
        rows = table.filter(pl.col("condition") == condition)
        _bars(
            ax,
            models,
            {side: [rows.filter(pl.col("model") == m)[side][0] for m in models] for side in ("direct", "reverse")},
        )
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
    tables = {
        "direct_vs_reverse": (table, analysis.DIRECTION_DEFINITIONS, NO_MODEL),
        "error_attribution": (errors, analysis.ERROR_DEFINITIONS, NO_MODEL),
    }
    return dg.Output(
        table,
        metadata={
            **table_metadata(table),
            "slice": profiles_slice(profiles, context),
            **inline_tables(tables),
            "figures_6_14": png_markdown(fig),
            **thinking_metadata(analysis.models_without_thinking(profiles)),
        },
    )


@dg.asset(
    ins={
        "graded_responses": wiring.materialized("wikiprofile_graded_responses"),
        "profiles": wiring.materialized("wikiprofile_profiles"),
    },
    **REPORT,
)
def wikiprofile_thinking_report(
    context: dg.AssetExecutionContext,
    graded_responses: pl.DataFrame,
    profiles: pl.DataFrame,
    wikiprofile_settings: WikiProfileSettings,
) -> dg.Output:
    """Thinking as recovery: the share of facts not known directly that thinking recovers,
    encoded or not (Figure 8), and the correct>=p curves without and with thinking over the
    knowledge questions (Figure 12: availability at low p, robustness at high p)."""
    recovery = analysis.thinking_recovery(profiles)
    curve = analysis.correct_at_least(_grades(graded_responses, wikiprofile_settings))
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
    models = sorted(recovery["model"].unique())
    _bars(
        axes[0],
        models,
        {
            ("encoded" if enc else "not encoded"): [
                recovery.filter((pl.col("model") == m) & (pl.col("encoded") == enc))["recovered_share"][0]
                for m in models
            ]
            for enc in (True, False)
        },
    )
    axes[0].set_ylabel("share of facts recovered by thinking")
    axes[0].set_title("Figure 8: thinking as recovery", fontsize=9)
    axes[1].set_title("Figure 12: correct>=p without and with thinking", fontsize=9)
    axes[0].set_ylim(0, 1)
    axes[0].legend(fontsize=8)
    for (model, thinking), part in sorted(curve.group_by("model", "thinking"), key=lambda kv: kv[0]):
        axes[1].plot(
            part["p"],
            part["share"],
            marker="o",
            linestyle="-" if thinking else "--",
            label=f"{model} ({'thinking' if thinking else 'no thinking'})",
        )
    axes[1].set_xlabel("p")
    axes[1].set_ylabel("correct>=p (share of questions)")
    axes[1].set_ylim(0, 1)
    axes[1].legend(fontsize=7)
    no_thinking = (
        NO_MODEL
        if profiles.is_empty()
        else "no profiled model has a thinking run (thinking_run_missing names them): there is nothing recovered to count"
    )
    tables = {
        "recovery": (recovery, analysis.RECOVERY_DEFINITIONS, no_thinking),
        "correct_at_least_p": (curve, analysis.CURVE_DEFINITIONS, NO_GRADED),
    }
    return dg.Output(
        recovery,
        metadata={
            **table_metadata(recovery),
            "slice": profiles_slice(profiles, context),
            **inline_tables(tables),
            "figures_8_12": png_markdown(fig),
            **thinking_metadata(analysis.models_without_thinking(profiles)),
        },
    )


# Version 4: D.4's bootstrap draws the questions above tau by their label counts
# (analysis.bootstrap_shares), the same distribution as before by other draws; Figure 19 marks
# the paper's bound.
@dg.asset(
    ins={"graded_responses": wiring.materialized("wikiprofile_graded_responses")}, **{**REPORT, "code_version": "4"}
)
def wikiprofile_robustness_report(
    context: dg.AssetExecutionContext, graded_responses: pl.DataFrame, wikiprofile_settings: WikiProfileSettings
) -> dg.Output:
    """Table 2 at other thresholds (tau_enc, tau_know) (appendix D.2), and the bootstrap width
    of the share of questions with g > 0.5 for n = 2..16 samples, drawn from each question's
    own samples (appendix D.4); shares in [0, 1]."""
    sweep = analysis.tau_sweep(_grades(graded_responses, wikiprofile_settings), wikiprofile_settings.nan_strategy)
    boot = analysis.bootstrap_stability(
        graded_responses,
        resamples=wikiprofile_settings.bootstrap_resamples,
        seed=wikiprofile_settings.seed,
        tau=wikiprofile_settings.tau,
    )
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
    plot_widths(axes[0], boot)
    axes[1].set_title("Figure 18: Table 2 at other thresholds", fontsize=9)
    labels = [f"{e}/{k}" for e, k in analysis.TAU_GRID]
    for (model,), part in sorted(sweep.group_by("model"), key=lambda kv: kv[0]):
        for metric, style in (("encodes", "-"), ("knows", "--"), ("knows_thinking", ":")):
            axes[1].plot(
                labels, part[metric].fill_nan(0.0).fill_null(0.0), style, marker="o", label=f"{model} {metric}"
            )
    axes[1].set_xlabel("tau_enc / tau_know")
    axes[1].set_ylabel("share of facts")
    axes[1].set_ylim(0, 1)
    axes[1].tick_params(axis="x", labelsize=7)
    axes[1].legend(fontsize=7)
    thresholds = {
        "tau_enc": "the encoding threshold: E needs an encoding task with g > tau_enc",
        "tau_know": "the knowing threshold: K0 and KT need every gradable knowledge question with g > tau_know",
    }
    return dg.Output(
        sweep,
        metadata={
            **table_metadata(sweep),
            "slice": profiles_slice(graded_responses, context),
            "tau_sweep": table_2(sweep, **thresholds),
            "bootstrap": report_table(boot, analysis.BOOTSTRAP_DEFINITIONS),
            **why_empty(
                {
                    "tau_sweep": (sweep, NO_GRADED),
                    "bootstrap": (boot, f"{NO_GRADED} (of the tasks {', '.join(analysis.BOOTSTRAP_TASKS)})"),
                }
            ),
            "bootstrap_resamples": wikiprofile_settings.bootstrap_resamples,
            "figures_18_19": png_markdown(fig),
            **thinking_metadata(
                sorted(sweep.filter(pl.col("thinking_run") == method.THINKING_MISSING)["model"].unique())
            ),
        },
    )


wikiprofile_analysis_assets = [
    wikiprofile_popularity_report,
    wikiprofile_direction_report,
    wikiprofile_thinking_report,
    wikiprofile_robustness_report,
]
