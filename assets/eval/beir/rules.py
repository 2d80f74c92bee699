"""Pure rules of the evaluation on datasets in BEIR's layout: what a retriever indexes of a
document, the metrics reported, and the metric tables."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from assets.eval import metrics as eval_metrics

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


def metric_rows(
    runs: pl.DataFrame, qrels: pl.DataFrame, labels: Callable[[str], dict], metrics: list[str] = BEIR_METRICS
) -> list[dict]:
    """One row per dataset and system of ``runs`` (``dataset``, ``system`` and RUN_SCHEMA's
    columns): the dataset, ``labels(system)``, the judged queries averaged over and each
    metric, over the dataset's judged queries (one the run misses scores 0)."""
    rows = []
    for (dataset, system), run in runs.group_by("dataset", "system", maintain_order=True):
        judged = qrels.filter(pl.col("dataset") == dataset)
        scores = eval_metrics.evaluate_run(judged, run, metrics)
        rows.append({"dataset": dataset, **labels(system), "queries": judged["question_id"].n_unique(), **scores})
    return rows


def metric_table(rows: list[dict], labels: dict, metrics: list[str] = BEIR_METRICS) -> pl.DataFrame:
    """``metric_rows`` as a table, by dataset, then its first label; the columns stay when
    there is no row, so the report and its checks still show them."""
    schema = {"dataset": pl.String, **labels, "queries": pl.Int64, **{m: pl.Float64 for m in metrics}}
    return pl.DataFrame(rows, schema=schema).sort("dataset", next(iter(labels)))


def leaderboard_columns(dataset: str) -> list[str]:
    """The leaderboard's columns of one dataset: ``beir/<dataset>/<metric>``."""
    return [f"beir/{dataset}/{m}" for m in LEADERBOARD_METRICS]


def leaderboard_rows(table: pl.DataFrame, system: str) -> pl.DataFrame:
    """A metric table as the leaderboard reads it: a row per ``system`` (its column renamed
    ``system``) and dataset, with ``benchmark`` ``beir/<dataset>`` and that dataset's
    ``beir/<dataset>/<metric>`` columns (the other datasets' columns null)."""
    parts = [
        group.select(
            pl.col(system).alias("system"),
            pl.lit(f"beir/{dataset}").alias("benchmark"),
            *[pl.col(m).alias(c) for m, c in zip(LEADERBOARD_METRICS, leaderboard_columns(dataset))],
        )
        for (dataset,), group in table.sort("dataset").group_by("dataset", maintain_order=True)
    ]
    if not parts:
        return pl.DataFrame(schema={"system": pl.String, "benchmark": pl.String})
    return pl.concat(parts, how="diagonal_relaxed")
