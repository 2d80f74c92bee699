"""What the evaluation's checks share: the check names, the keys and inputs of the
benchmarks the evaluation reads, the rules of metric tables and TREC-style runs, and the
systems the retriever and reranker registries name."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import dagster as dg
import polars as pl

from assets.eval.quit.assets import wiring
from assets.eval.runs import RUN_SCHEMA
from checks.factories import TOLERANCE, UNIT, not_in, outside, table_problems, typed, where
from resources.retrieval import load_rerankers, load_retrievers

# Check names, unique per asset.
RANKS = "ranks"
REFERENCES = "references"
SCHEMA = "schema"
METRICS = "metrics"

# ranx metric names (ndcg@10, ndcg_burges@10, recall@100, mrr, map@10): every such column is a mean in [0, 1].
RANX_METRIC = re.compile(r"^(hit_rate|recall|precision|ndcg|ndcg_burges|map|mrr|f1|r_precision)(@\d+)?$")
# Metrics that cannot fall as the cut-off grows.
MONOTONE = ("hit_rate", "recall")
ORACLE_KIND = "oracle"


eval_key = wiring.key


def wikiprofile_key(name: str) -> dg.AssetKey:
    return dg.AssetKey(["eval", f"wikiprofile_{name}"])


# The benchmarks as the evaluation reads them (assets.eval.sources).
QUIT_QUESTIONS = dg.AssetIn(key=eval_key("quit_questions"))
QUIT_CORPUS = dg.AssetIn(key=eval_key("quit_corpus"))
RECOR_BENCHMARK = dg.AssetIn(key=eval_key("recor_turns"))
WIKIPROFILE_BENCHMARK = dg.AssetIn(key=eval_key("wikiprofile_tasks"))


def monotone(frame: pl.DataFrame, ids: Sequence[str]) -> list[str]:
    """hit_rate@k and recall@k never fall as k grows."""
    problems = []
    for name in MONOTONE:
        cuts = sorted(int(c.split("@")[1]) for c in frame.columns if RANX_METRIC.match(c) and c.startswith(f"{name}@"))
        for a, b in zip(cuts, cuts[1:]):
            problems += where(
                frame,
                pl.col(f"{name}@{a}") > pl.col(f"{name}@{b}") + TOLERANCE,
                f"with {name}@{a} above {name}@{b}",
                ids,
            )
    return problems


def metric_problems(frame: pl.DataFrame, columns: dict, unique: Sequence[str], required: Iterable[str]) -> list[str]:
    """A metric table: its columns, the required ranx metrics, every ranx metric in [0, 1]
    and the cut-off metrics monotone."""
    columns = {**columns, **{m: pl.Float64 for m in required}}
    problems = table_problems(frame, columns, unique, not_null=tuple(columns))
    if not typed(frame, columns):
        return problems
    metrics = [c for c in frame.columns if RANX_METRIC.match(c)]
    return problems + outside(frame, metrics, UNIT, unique, missing_ok=False) + monotone(frame, unique)


def run_problems(
    run: pl.DataFrame, systems: Iterable[str], per: Sequence[str] = ("question_id",), columns: dict = RUN_SCHEMA
) -> list[str]:
    """A TREC-style run: ranks 1..n per query without gaps or repeats, each passage once per
    query, scores never rising down the ranking, a registered system."""
    per = list(per)
    problems = table_problems(run, columns, unique=(*per, "rank"), not_null=tuple(columns))
    if not typed(run, columns):
        return problems
    ids = (*per, "rank")
    problems += table_problems(run, {}, unique=(*per, "passage_id"))
    problems += where(run, pl.col("rank") < 1, "with a rank below 1", ids)
    lists = run.group_by(per).agg(pl.len().alias("passages"), pl.col("rank").max().alias("last"))
    problems += where(lists, pl.col("last") != pl.col("passages"), "(queries) whose ranks are not 1..n", per)
    rises = run.sort(*per, "rank").with_columns(pl.col("score").diff().over(per).alias("rise"))
    problems += where(rises, pl.col("rise") > 0, "scored above the passage ranked before them", ids)
    return problems + not_in(run, "system", systems, ("system",))


def retriever_aliases(with_oracle: bool = True) -> list[str]:
    return sorted(a for a, s in load_retrievers().items() if with_oracle or s.kind != ORACLE_KIND)


def oracle_aliases() -> list[str]:
    return sorted(a for a, s in load_retrievers().items() if s.kind == ORACLE_KIND)


def reranked_systems() -> list[str]:
    """``<retriever>+<reranker>``, as the reranked runs name themselves."""
    return sorted(f"{r}+{k}" for r in load_retrievers() for k in load_rerankers())


def same_passages_problems(reranked: pl.DataFrame, retrieved: pl.DataFrame) -> list[str]:
    """What is wrong with one reranker's run (``system`` ``<retriever>+<reranker>``) against
    the run it reordered: a passage reranked but never retrieved, one retrieved but lost, one
    below the reranker's ``top_k`` moved from its retrieved rank."""
    columns = {"question_id": pl.String, "passage_id": pl.String, "rank": pl.Int32}
    problems = table_problems(reranked, {**columns, "system": pl.String}) + table_problems(retrieved, columns)
    if problems:
        return problems
    rerankers = load_rerankers()
    top_k = {
        s: rerankers[s.split("+", 1)[-1]].top_k
        for s in reranked["system"].unique().drop_nulls()
        if s.split("+", 1)[-1] in rerankers
    }
    joined = (
        reranked.select(*columns, "system")
        .join(
            retrieved.select("question_id", "passage_id", pl.col("rank").alias("retrieved_rank")),
            on=["question_id", "passage_id"],
            how="full",
            coalesce=True,
        )
        .with_columns(pl.col("system").replace_strict(top_k, default=None, return_dtype=pl.Int64).alias("top_k"))
    )
    ids = ("question_id", "passage_id")
    return (
        where(joined, pl.col("retrieved_rank").is_null(), "reranked but never retrieved", ids)
        + where(joined, pl.col("rank").is_null(), "retrieved but missing from the reranked run", ids)
        + where(
            joined,
            (pl.col("retrieved_rank") > pl.col("top_k")) & (pl.col("rank") != pl.col("retrieved_rank")),
            "below the reranked top_k but moved from their retrieved rank",
            ids,
        )
    )


def interval_problems(frame: pl.DataFrame, keys: Sequence[str]) -> list[str]:
    """A report's intervals (issue 48, ``assets.eval.uncertainty.attach``): for every metric
    with ``<metric> ci_low`` and ``<metric> ci_high`` columns, the interval holds the value
    and lies in [0, 1] where the value is a share; a row without an interval (another split
    than the headline one) has neither end."""
    problems = []
    for low in [c for c in frame.columns if c.endswith(" ci_low")]:
        metric = low.removesuffix(" ci_low")
        high = f"{metric} ci_high"
        if metric not in frame.columns or high not in frame.columns:
            problems.append(f"column {low!r} without {metric!r} and {high!r}")
            continue
        problems += where(
            frame, pl.col(low).is_null() != pl.col(high).is_null(), f"with one end of {metric}'s interval", keys
        )
        problems += where(
            frame,
            (pl.col(low) > pl.col(metric) + TOLERANCE) | (pl.col(high) < pl.col(metric) - TOLERANCE),
            f"whose {metric} interval does not hold the value",
            keys,
        )
    return problems
