"""Pure rules of the evaluation on datasets in BEIR's layout: what a retriever indexes of a
document, the metrics reported, and the metric tables."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from assets.eval import metrics as eval_metrics
from assets.eval import uncertainty

# BEIR's own report (EvaluateRetrieval: NDCG, MAP, Recall, P at cut-offs, MRR@k), at the cut-offs
# its papers and MTEB headline: nDCG@10 first. nDCG with linear gain (``ndcg``), as pytrec_eval
# computes it for BEIR; relevant means a score of 1 or more.
BEIR_METRICS = ["ndcg@10", "ndcg@100", "map@100", "recall@10", "recall@100", "precision@10", "mrr@10"]
# The leaderboard's column group per dataset: the headline metric and the first stage's recall.
LEADERBOARD_METRICS = ("ndcg@10", "recall@100")
RELEVANCE = "relevant: a qrels score of 1 or more (BEIR's and trec_eval's relevance level 1)"


def contents(corpus: pl.DataFrame) -> pl.DataFrame:
    """Documents as a retriever indexes them (``id``, ``contents``): the title, a space and the
    text, as BEIR's dense and lexical baselines join them; a document without a title is its
    text."""
    joined = pl.concat_str(pl.col("title").fill_null(""), pl.lit(" "), pl.col("text").fill_null(""))
    return corpus.select(pl.col("passage_id").alias("id"), joined.str.strip_chars().alias("contents"))


def per_query(runs: pl.DataFrame, qrels: pl.DataFrame, metrics: list[str] = BEIR_METRICS) -> pl.DataFrame:
    """Each metric of every judged query of each dataset for every system of ``runs``
    (``dataset``, ``system`` and RUN_SCHEMA's columns) run on it, 0 where the run missed the
    query: the items a table averages and its intervals resample."""
    parts = []
    for (dataset,), run in runs.group_by("dataset", maintain_order=True):
        judged = qrels.filter(pl.col("dataset") == dataset).drop("dataset")
        scores = eval_metrics.grouped_per_question_metrics(judged, run.drop("dataset"), ["system"], metrics)
        parts.append(scores.select(pl.lit(dataset).alias("dataset"), pl.all()))
    schema = {"dataset": pl.String, "system": pl.String, "question_id": pl.String, **{m: pl.Float64 for m in metrics}}
    return pl.concat(parts) if parts else pl.DataFrame(schema=schema)


def metric_table(
    scores: pl.DataFrame,
    labels: Callable[[str], dict],
    schema: dict,
    settings: uncertainty.UncertaintySettings,
    metrics: list[str] = BEIR_METRICS,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A metric table from :func:`per_query`'s scores, one row per dataset and system: the
    dataset, ``labels(system)`` (typed by ``schema``, its first column the system's key), the
    judged queries and each metric's mean, each with its interval and its test against the
    dataset's best system (``<metric> ci_low``, ``ci_high``, ``tied_best``); and the long
    summary (:func:`assets.eval.uncertainty.summarize`) they come from."""
    means = scores.group_by("dataset", "system", maintain_order=True).agg(
        pl.len().cast(pl.Int64).alias("queries"), *[pl.col(m).mean() for m in metrics]
    )
    rows = [{"dataset": r["dataset"], **labels(r["system"]), **r} for r in means.iter_rows(named=True)]
    columns = {"dataset": pl.String, **schema, "queries": pl.Int64, **{m: pl.Float64 for m in metrics}}
    table = pl.DataFrame([{c: r[c] for c in columns} for r in rows], schema=columns).sort("dataset", next(iter(schema)))
    key = next(iter(schema))
    long = uncertainty.summarize(scores, ["dataset", "system"], "question_id", metrics, settings, within=["dataset"])
    long = long.rename({"system": key}) if key != "system" else long
    return uncertainty.attach(table, long, ["dataset", key]), long


def leaderboard_columns(dataset: str) -> list[str]:
    """The leaderboard's columns of one dataset: ``beir/<dataset>/<metric>``."""
    return [f"beir/{dataset}/{m}" for m in LEADERBOARD_METRICS]


def leaderboard_rows(table: pl.DataFrame, system: str) -> pl.DataFrame:
    """A metric table as the leaderboard reads it: a row per ``system`` (its column renamed
    ``system``) and dataset, with ``benchmark`` ``beir/<dataset>`` and that dataset's
    ``beir/<dataset>/<metric>`` columns with their intervals' ends (``ci_low``, ``ci_high``;
    the other datasets' columns null)."""
    parts = [
        group.select(
            pl.col(system).alias("system"),
            pl.lit(f"beir/{dataset}").alias("benchmark"),
            *[
                (pl.col(m + end) if m + end in table.columns else pl.lit(None, pl.Float64)).alias(c + end)
                for m, c in zip(LEADERBOARD_METRICS, leaderboard_columns(dataset))
                for end in ("", " ci_low", " ci_high")
            ],
        )
        for (dataset,), group in table.sort("dataset").group_by("dataset", maintain_order=True)
    ]
    if not parts:
        return pl.DataFrame(schema={"system": pl.String, "benchmark": pl.String})
    return pl.concat(parts, how="diagonal_relaxed")
