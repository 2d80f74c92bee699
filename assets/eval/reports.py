"""Report tables and plots in the shapes of the papers' tables and figures."""

from __future__ import annotations

import dagster as dg
import polars as pl

from assets.common.metadata import report_table
from assets.eval import metrics as eval_metrics
from assets.eval.metrics import per_question
from assets.eval.uncertainty import LONG_COLUMNS, UncertaintySettings, definitions

HIT_CUTS = [1, 5, 10, 20, 50, 100]
# The QUIT paper's figures, by the numbers and captions it gives them.
FIGURE_4_LEFT = "Figure 4 (left): Hit@k by retriever"
FIGURE_4_RIGHT = "Figure 4 (right): Hit@100 by number of relevant (label 2) passages"
FIGURE_6 = "Figure 6: passages by number of hints"


def caption(figure: str, split: str) -> str:
    """A QUIT figure's title with the split it is drawn on (the split of the tables beside it)."""
    return f"{figure}, {split} split"


def metric_definition(metric: str) -> str:
    """What a QUIT metric column holds: its gain for nDCG, what counts as relevant otherwise."""
    name, _ = eval_metrics.parse_metric(metric)
    if name in eval_metrics.GAIN_LABELS:
        return f"{eval_metrics.metric_label(metric)}, over the graded labels 0-2; a share in [0, 1]"
    return f"{metric}; {eval_metrics.RELEVANCE}; a share in [0, 1]"


def definition_metadata() -> dict[str, str]:
    """What the QUIT retrieval reports' nDCG and relevance mean, beside their tables."""
    gain = eval_metrics.GAINS[eval_metrics.QUIT_GAIN]
    return {
        "ndcg_gain": f"tables: {gain}@k, {eval_metrics.GAIN_LABELS[gain]} (results/retriever/retriever.py); "
        f"ndcg@k columns: {eval_metrics.GAIN_LABELS['ndcg']}",
        "relevance": eval_metrics.RELEVANCE,
    }


def share_table(frame: pl.DataFrame, key: str, metrics: list[str], key_definition: str) -> dg.TableMetadataValue:
    """One row per ``key`` value with its QUIT metrics as shares in [0, 1] (the papers print
    percent), each header described by :func:`metric_definition`; rendered inline in the UI."""
    return report_table(
        frame.select(key, *metrics), {key: key_definition, **{m: metric_definition(m) for m in metrics}}
    )


def with_method(definition: str, table: str, settings: UncertaintySettings) -> str:
    """A headline table's key definition with where its intervals and tests are and how
    they are computed."""
    return f"{definition}; intervals and tests in {table}_uncertainty: {settings.describe('questions')}"


def uncertainty_table(
    long: pl.DataFrame, metrics: list[str], keys: dict[str, str], settings: UncertaintySettings
) -> dg.TableMetadataValue:
    """A headline table's intervals and tests: its ``metrics``' rows of the summary ``long``
    (``summarize``), keyed by the table's row keys (``keys``: name -> definition)."""
    frame = long.filter(pl.col("metric").is_in(metrics)).select(*keys, *LONG_COLUMNS)
    return report_table(frame, definitions(keys, settings, "questions"))


def headline_tables(
    headline: pl.DataFrame,
    long: pl.DataFrame,
    key: str,
    key_definition: str,
    tables: dict[str, list[str]],
    settings: UncertaintySettings,
) -> dict[str, dg.TableMetadataValue]:
    """Each headline table of ``tables`` (name -> its metric columns), one row per ``key`` of
    ``headline`` (:func:`share_table`), then each one's intervals and tests from the summary
    ``long`` as ``<name>_uncertainty`` (:func:`uncertainty_table`)."""
    return {
        **{
            name: share_table(headline, key, columns, with_method(key_definition, name, settings))
            for name, columns in tables.items()
        },
        **{
            f"{name}_uncertainty": uncertainty_table(long, columns, {key: key_definition}, settings)
            for name, columns in tables.items()
        },
    }


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def hit_curves(runs: pl.DataFrame, qrels: pl.DataFrame, split: str):
    """Hit@k for k in 1..100 per retriever (Figure 4, left), over the ``split`` questions'
    ``runs`` and ``qrels``."""
    from assets.eval.metrics import evaluate_run

    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for system in sorted(runs["system"].unique().to_list()):
        run = runs.filter(pl.col("system") == system)
        scores = evaluate_run(qrels, run, [f"hit_rate@{k}" for k in HIT_CUTS])
        ax.plot(HIT_CUTS, [scores[f"hit_rate@{k}"] for k in HIT_CUTS], marker="o", label=system)
    ax.set_xscale("log")
    ax.set_xlabel("k")
    ax.set_ylabel("Hit@k (share of questions)")
    ax.legend()
    ax.set_title(caption(FIGURE_4_LEFT, split))
    return fig


def hit_by_relevant(runs: pl.DataFrame, qrels: pl.DataFrame, split: str):
    """Hit@100 against the number of fully relevant (label 2) passages a question has
    (Figure 4, right), over the ``split`` questions' ``runs`` and ``qrels``."""
    plt = _plt()
    relevant = dict(qrels.filter(pl.col("label") == 2).group_by("question_id").len().iter_rows())
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for system in sorted(runs["system"].unique().to_list()):
        hits = per_question(qrels, runs.filter(pl.col("system") == system), "hit_rate@100")
        xs = [relevant.get(q, 0) for q in hits]
        ax.scatter(xs, list(hits.values()), label=system, alpha=0.7)
    ax.set_xlabel("label-2 passages of the question")
    ax.set_ylabel("Hit@100 (0 or 1 per question)")
    ax.legend()
    ax.set_title(caption(FIGURE_4_RIGHT, split))
    return fig


def table_8(table: pl.DataFrame, values: str) -> pl.DataFrame:
    """Table 8: one row per (retriever, k, strategy), Optimal first, one column per reader
    holding its ``values`` (a share of questions)."""
    return table.pivot(on="reader", index=["system", "k", "strategy"], values=values, maintain_order=True).rename(
        {"system": "retriever"}
    )


# Table 8's row keys and their definitions.
TABLE_8_ROWS = {
    "retriever": "a retriever alias, <retriever>+<reranker>, or Optimal (the reader on every relevant passage)",
    "k": "passages given to the reader (blank for Optimal)",
    "strategy": "how the top-k passages' hints become the context: union_norm or union_freq (equation 1); "
    "oracle for Optimal",
}


def table_8_definitions(wide: pl.DataFrame, em: str) -> dict[str, str]:
    """Table 8's headers: the row keys, and each reader's column as ``em`` defines it."""
    readers = [c for c in wide.columns if c not in TABLE_8_ROWS]
    return {**TABLE_8_ROWS, **{r: f"reader {r}: {em}; a share of questions in [0, 1]" for r in readers}}


# What Table 8's two exact matches count, as each of its tables defines its reader columns.
EM_DEFINITION = (
    "EM (normalized): answer and gold equal after assets.common.text.normalize "
    "(lower case; accents, punctuation, possessive 's and articles removed)"
)
EM_RAW_DEFINITION = (
    "EM (raw, as released): the reader's output after the release's "
    "clean_responses equals a gold answer as written, case included"
)


def table_8_tables(
    headline: pl.DataFrame, long: pl.DataFrame, split: str, settings: UncertaintySettings
) -> dict[str, dg.TableMetadataValue]:
    """Table 8 of ``em`` (``table_8``) and of ``em_raw`` (``table_8_em_raw``) from the rows of
    the headline ``split`` (``system``, ``k``, ``strategy``, ``reader`` and the shares), then
    each one's intervals and tests from the summary ``long`` (``table_8_uncertainty``,
    ``table_8_em_raw_uncertainty``), each setting compared with its reader's best."""
    method = f"intervals and tests in table_8_uncertainty: {settings.describe('questions')}"
    keys = {**TABLE_8_ROWS, "reader": "the reader (a model alias): each setting is compared with its best"}
    tables, intervals = {}, {}
    for name, values, definition in (("table_8", "em", EM_DEFINITION), ("table_8_em_raw", "em_raw", EM_RAW_DEFINITION)):
        wide = table_8(headline, values)
        tables[name] = report_table(wide, table_8_definitions(wide, f"{definition}; on the {split} split; {method}"))
        intervals[f"{name}_uncertainty"] = uncertainty_table(
            long.rename({"system": "retriever"}), [values], keys, settings
        )
    return {**tables, **intervals}


def hint_distribution(runs: pl.DataFrame, corpus: pl.DataFrame, qrels: pl.DataFrame, split: str):
    """Share of passages by number of hints: each retriever's top-5 against the fully
    relevant passages (Figure 6), over the ``split`` questions' ``runs`` and ``qrels``."""
    plt = _plt()
    hints = corpus.select("passage_id", "num_hints")
    series = {
        system: runs.filter((pl.col("system") == system) & (pl.col("rank") <= 5)).join(hints, on="passage_id")
        for system in sorted(runs["system"].unique().to_list())
    }
    series["label 2 (optimal)"] = qrels.filter(pl.col("label") == 2).join(hints, on="passage_id")
    fig, ax = plt.subplots(figsize=(6, 3.2))
    width = 0.8 / len(series)
    for i, (name, frame) in enumerate(series.items()):
        counts = dict(frame.group_by("num_hints").len().iter_rows())
        total = max(sum(counts.values()), 1)
        ax.bar([h + i * width for h in range(1, 6)], [counts.get(h, 0) / total for h in range(1, 6)], width, label=name)
    ax.set_xlabel("hints in passage")
    ax.set_ylabel("share of passages")
    ax.legend(fontsize=7)
    ax.set_title(caption(FIGURE_6, split))
    return fig
