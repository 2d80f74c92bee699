"""WikiProfile's analyses as report assets over every profiled model (all partitions of the
profiling assets): popularity tiers, direct vs reverse with error attribution, thinking as
recovery with the correct>=p curve, and the robustness of the thresholds and of n. The
computations live in :mod:`assets.wikiprofile.analysis`; these assets only plot and show."""

import dagster as dg
import polars as pl

from assets.metadata import md_table, png_markdown, table_metadata
from assets.wikiprofile import analysis, method, sources
from assets.wikiprofile.settings import WikiProfileSettings
from assets.wiring import asset_in, materialized_in

PREFIX = GROUP = "wikiprofile"
REPORT = dict(key_prefix=PREFIX, group_name=GROUP, kinds={"polars"}, code_version="1")


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
        ax.bar([i + j * width for i in range(len(groups))], [v if v == v else 0.0 for v in values], width, label=label)
    ax.set_xticks([i + width * (len(series) - 1) / 2 for i in range(len(groups))], groups, fontsize=8)


@dg.asset(ins={"profiles": materialized_in(PREFIX, "profiles"), "benchmark": asset_in(PREFIX, "benchmark"),
               "source_pages": asset_in(PREFIX, "source_pages")}, **REPORT)
def popularity_report(profiles: pl.DataFrame, benchmark: pl.DataFrame, source_pages: pl.DataFrame) -> dg.Output:
    """Encoding and recall rates of the top and bottom 20% of facts by their page's monthly
    views (Figure 5), with the gain from thinking and the gaps (Delta, Delta_T)."""
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
    axes[0].set_ylabel("% of facts")
    axes[1].legend(fontsize=8, title="page views", title_fontsize=8)
    bounds = views.join(tiers, on="fact_id").group_by("tier").agg(pl.col("mean_monthly_views").min().alias("min_views"),
                                                                   pl.col("mean_monthly_views").max().alias("max_views"),
                                                                   pl.len().alias("facts")).sort("tier")
    return dg.Output(table, metadata={**table_metadata(table), "popularity": dg.MetadataValue.md(md_table(table, 40)),
                                      "gaps": dg.MetadataValue.md(md_table(gaps, 20)),
                                      "tiers": dg.MetadataValue.md(md_table(bounds, 3)),
                                      "popularity_plot": png_markdown(fig)})


@dg.asset(ins={"graded_responses": materialized_in(PREFIX, "graded_responses"), "profiles": materialized_in(PREFIX, "profiles")}, **REPORT)
def direction_report(graded_responses: pl.DataFrame, profiles: pl.DataFrame,
                     wikiprofile_settings: WikiProfileSettings) -> dg.Output:
    """Direct vs reverse over encoded facts, in generation (closed book, without and with
    thinking) and in verification (multiple choice) (Figure 6), and which side fails for the
    facts not known (Figure 14)."""
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
        ax.set_ylim(0, 100)
    axes[0].set_ylabel("% of encoded facts known")
    axes[1].legend(fontsize=8)
    scoped = errors.filter(pl.col("scope") == "all")
    left = [0.0] * len(models)
    for part in ("direct_only", "both", "reverse_only"):
        values = [v if v == v else 0.0 for v in (scoped.filter(pl.col("model") == m)[part][0] for m in models)]
        axes[2].barh(models, values, left=left, label=part.replace("_", " "))
        left = [a + b for a, b in zip(left, values)]
    axes[2].set_title("errors: which side fails", fontsize=9)
    axes[2].set_xlabel("% of facts not known")
    axes[2].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3)
    return dg.Output(table, metadata={**table_metadata(table), "direct_vs_reverse": dg.MetadataValue.md(md_table(table, 40)),
                                      "error_attribution": dg.MetadataValue.md(md_table(errors, 40)),
                                      "direction_plot": png_markdown(fig)})


@dg.asset(ins={"graded_responses": materialized_in(PREFIX, "graded_responses"), "profiles": materialized_in(PREFIX, "profiles")}, **REPORT)
def thinking_report(graded_responses: pl.DataFrame, profiles: pl.DataFrame,
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
                            [recovery.filter((pl.col("model") == m) & (pl.col("encoded") == enc))["recovered_pct"][0] for m in models]
                            for enc in (True, False)})
    axes[0].set_ylabel("% recovered by thinking")
    axes[0].set_ylim(0, 100)
    axes[0].legend(fontsize=8)
    for (model, thinking), part in sorted(curve.group_by("model", "thinking"), key=lambda kv: kv[0]):
        axes[1].plot(part["p"], part["share"], marker="o", linestyle="-" if thinking else "--",
                     label=f"{model} ({'thinking' if thinking else 'no thinking'})")
    axes[1].set_xlabel("p")
    axes[1].set_ylabel("correct>=p (% of questions)")
    axes[1].legend(fontsize=7)
    return dg.Output(recovery, metadata={**table_metadata(recovery), "recovery": dg.MetadataValue.md(md_table(recovery, 40)),
                                         "correct_at_least_p": dg.MetadataValue.md(md_table(curve, 60)),
                                         "thinking_plot": png_markdown(fig)})


@dg.asset(ins={"graded_responses": materialized_in(PREFIX, "graded_responses")}, **REPORT)
def robustness_report(graded_responses: pl.DataFrame, wikiprofile_settings: WikiProfileSettings) -> dg.Output:
    """Table 2 at other thresholds (tau_enc, tau_know) (appendix D.2), and the bootstrap width
    of the share of questions with g > 0.5 for n = 2..16 samples, drawn from each question's
    own samples (appendix D.4)."""
    sweep = analysis.tau_sweep(_grades(graded_responses, wikiprofile_settings), wikiprofile_settings.nan_strategy)
    boot = analysis.bootstrap_stability(graded_responses, resamples=wikiprofile_settings.bootstrap_resamples,
                                        seed=wikiprofile_settings.seed, tau=wikiprofile_settings.tau)
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
    for (model, task), part in sorted(boot.group_by("model", "task"), key=lambda kv: kv[0]):
        axes[0].plot(part["n"], part["width"], marker="o", label=f"{model} {task}")
    axes[0].set_xlabel("samples per question (n)")
    axes[0].set_ylabel("90% interval width (points)")
    axes[0].legend(fontsize=7)
    labels = [f"{e}/{k}" for e, k in analysis.TAU_GRID]
    for (model,), part in sorted(sweep.group_by("model"), key=lambda kv: kv[0]):
        for metric, style in (("encodes", "-"), ("knows", "--"), ("knows_thinking", ":")):
            axes[1].plot(labels, part[metric].fill_nan(0.0), style, marker="o", label=f"{model} {metric}")
    axes[1].set_xlabel("tau_enc / tau_know")
    axes[1].set_ylabel("% of profiled facts")
    axes[1].tick_params(axis="x", labelsize=7)
    axes[1].legend(fontsize=7)
    return dg.Output(sweep, metadata={**table_metadata(sweep), "tau_sweep": dg.MetadataValue.md(md_table(sweep, 60)),
                                      "bootstrap": dg.MetadataValue.md(md_table(boot, 80)),
                                      "bootstrap_resamples": wikiprofile_settings.bootstrap_resamples,
                                      "robustness_plot": png_markdown(fig)})


wikiprofile_analysis_assets = [popularity_report, direction_report, thinking_report, robustness_report]
