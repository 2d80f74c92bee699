"""Retrieval metrics through ranx, with the paper's cut-offs and named gains.

Relevance: a passage labelled 1 or 2 is relevant for Hit, Recall, MRR and MAP (ranx's
default ``rel_lvl=1``, the QUIT release's ``label > 0``); a label 0 never counts.

nDCG comes in two gains, named by their ranx metric:

- ``ndcg_burges@k``: exponential gain ``2^rel - 1`` (a label-2 passage is worth 3, a
  label-1 passage 1), discount ``log2(rank + 1)``, the ideal ranking made of every labelled
  passage of the question (not only the retrieved ones), 0 where that ideal is 0. This is the
  ``ndcg`` function of the QUIT release (``results/retriever/retriever.py`` and its copies for
  rerankers), so QUIT's tables report it.
- ``ndcg@k``: linear gain ``rel``, same discount and ideal: trec_eval's ``ndcg_cut`` (and so
  RECOR's published ``pytrec_eval`` evaluation; with RECOR's 0/1 labels both gains agree).

Averages run over the questions that have qrels; a question the run has no passage for
scores 0 on every metric (trec_eval's ``-c``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import polars as pl

from assets.eval.runs import qrels_dict, run_dict

# ranx metric names the project evaluates; each takes an optional ``@k`` cut-off.
METRIC_NAMES = ("hit_rate", "recall", "precision", "f1", "mrr", "map", "ndcg", "ndcg_burges")
METRIC = re.compile(rf"^({'|'.join(METRIC_NAMES)})(?:@([1-9]\d*))?$")

EXPONENTIAL, LINEAR = "exponential", "linear"
GAINS = {EXPONENTIAL: "ndcg_burges", LINEAR: "ndcg"}
GAIN_LABELS = {"ndcg_burges": "exp. gain 2^rel-1, as the QUIT release", "ndcg": "linear gain rel, as trec_eval"}
# QUIT's released evaluation code scores nDCG with exponential gains.
QUIT_GAIN = EXPONENTIAL
RELEVANCE = "relevant: label 1 or 2 (label > 0), for Hit, Recall and MRR, as the QUIT release"


def ndcg(k: int, gain: str = QUIT_GAIN) -> str:
    """The ranx name of nDCG@k with ``gain`` ("exponential" or "linear")."""
    if gain not in GAINS:
        raise ValueError(f"unknown nDCG gain {gain!r}: use one of {sorted(GAINS)}")
    return f"{GAINS[gain]}@{k}"


def retrieval_metrics(gain: str = QUIT_GAIN, cuts: tuple[int, ...] = (10, 100)) -> list[str]:
    """The metrics of QUIT's Tables 2 and 4, nDCG with ``gain``."""
    return [
        "hit_rate@1",
        "hit_rate@5",
        "hit_rate@10",
        "hit_rate@50",
        "hit_rate@100",
        "recall@5",
        "recall@10",
        "recall@50",
        "mrr",
        *(ndcg(k, gain) for k in cuts),
    ]


# QUIT's metric columns: the release's exponential-gain nDCG for the tables, and the linear
# gain beside it for comparison with trec_eval-based numbers.
RETRIEVAL_METRICS = [*retrieval_metrics(QUIT_GAIN), *(ndcg(k, LINEAR) for k in (10, 100))]


def parse_metric(name: str) -> tuple[str, int]:
    """``(metric, k)`` of a ranx metric name, k 0 without a cut-off; a ValueError naming the
    metric and the valid names otherwise (ranx would fail deep inside, or on a typo such as
    ``hit@5`` with a message naming only part of it)."""
    match = METRIC.match(name) if isinstance(name, str) else None
    if match is None:
        raise ValueError(
            f"metric {name!r} does not parse: use one of {', '.join(METRIC_NAMES)}, "
            f"optionally with a cut-off @k (k >= 1), e.g. ndcg_burges@10 or recall@100"
        )
    return match.group(1), int(match.group(2) or 0)


def metric_label(name: str) -> str:
    """A table header: the ranx name, and for nDCG the gain it uses."""
    metric, _ = parse_metric(name)
    return f"{name} ({GAIN_LABELS[metric]})" if metric in GAIN_LABELS else name


def _comparable(qrels: pl.DataFrame, run: pl.DataFrame, metrics: list[str]) -> tuple[dict, dict]:
    """Qrels and run as ranx dicts over the qrels' questions, after the checks that make
    ranx's own failures (an empty max(), an int() of a cut-off) clear errors."""
    for m in metrics:
        parse_metric(m)
    q = qrels_dict(qrels)
    if not q:
        raise ValueError("the qrels are empty: there is no question to average over")
    r = run_dict(run.filter(pl.col("question_id").is_in(list(q))))
    if not r:
        # Some questions without passages score 0, but a run that covers none of them is a
        # filter or id mismatch: its zeros would read as a result.
        seen = sorted(run["question_id"].unique().to_list())[:3]
        raise ValueError(
            f"the run has no passage for any of the {len(q)} questions of the qrels "
            f"(run questions: {seen or 'none, the run is empty'}; qrels questions e.g. {sorted(q)[:3]})"
        )
    return q, r


def evaluate_run(qrels: pl.DataFrame, run: pl.DataFrame, metrics: list[str] = RETRIEVAL_METRICS) -> dict[str, float]:
    """Mean of each metric over the questions that have qrels (a question the run missed
    scores 0)."""
    from ranx import Qrels, Run, evaluate

    q, r = _comparable(qrels, run, metrics)
    scores = evaluate(Qrels(q), Run(r), metrics, make_comparable=True)
    return {m: float(scores[m]) for m in metrics} if len(metrics) > 1 else {metrics[0]: float(scores)}


# Joins a group's number to a question id in one ranx evaluation of many runs: a character no
# question id of a TREC-style table holds.
GROUP_SEPARATOR = "\x1f"
# Run lines per ranx evaluation. ranx holds a run as Python dicts: 4.2M lines (RECOR's 14
# configurations at the release's size) peaked at 8.3 GB in one evaluation, 4.4 GB in
# evaluations of 1M lines.
LINES_PER_EVALUATION = 500_000


def grouped_per_question_metrics(
    qrels: pl.DataFrame,
    run: pl.DataFrame,
    by: Sequence[str],
    metrics: list[str],
    lines_per_evaluation: int = LINES_PER_EVALUATION,
) -> pl.DataFrame:
    """Each of ``metrics`` for every question of ``qrels`` and every group of ``run`` (its
    ``by`` columns, such as a system and a query strategy): one row per group and question,
    0 where the group's run has no passage for it. ``qrels`` holds either one set for every
    group or, with the ``by`` columns, each group's own. The groups share ranx evaluations,
    their question ids kept apart, up to ``lines_per_evaluation`` run lines each: ranx costs
    seconds a call before its first line, and its memory grows with the lines."""
    by = list(by)
    groups = run.group_by(by, maintain_order=True).len().with_row_index("_group")
    groups = groups.with_columns(
        (pl.col("len").cum_sum() - pl.col("len")).floordiv(max(lines_per_evaluation, 1)).alias("_batch")
    ).drop("len")
    own = all(c in qrels.columns for c in by)
    keyed_qrels = groups.join(qrels, on=by, how="inner") if own else groups.join(qrels, how="cross")
    key = (pl.col("_group").cast(pl.String) + GROUP_SEPARATOR + pl.col("question_id")).alias("_key")
    keyed_qrels = keyed_qrels.with_columns(key)
    values: dict[str, dict[str, float]] = {m: {} for m in metrics}
    # a group of more lines than an evaluation holds is an evaluation alone, and the batch
    # numbers after it skip: only the numbers taken are evaluations
    for batch in groups["_batch"].unique().sort().to_list():
        q = keyed_qrels.filter(pl.col("_batch") == batch).drop("question_id").rename({"_key": "question_id"})
        # keyed a batch at a time: a keyed copy of the whole run would double the step's peak
        r = (
            run.join(groups.filter(pl.col("_batch") == batch), on=by, how="inner")
            .with_columns(key)
            .drop("question_id")
            .rename({"_key": "question_id"})
        )
        for m, scores in per_question_metrics(q, r, metrics).items():
            values[m].update(scores)
    # the groups in the run's order, each one's questions sorted
    rows = keyed_qrels.select("_group", *by, "question_id", "_key").unique().sort("_group", "question_id")
    return rows.select(
        *by,
        "question_id",
        *(pl.col("_key").replace_strict(values[m], default=0.0, return_dtype=pl.Float64).alias(m) for m in metrics),
    )


def per_question(qrels: pl.DataFrame, run: pl.DataFrame, metric: str) -> dict[str, float]:
    """``metric`` of every question that has qrels (0 where the run has no passage for it)."""
    return per_question_metrics(qrels, run, [metric])[metric]


def per_question_metrics(qrels: pl.DataFrame, run: pl.DataFrame, metrics: list[str]) -> dict[str, dict[str, float]]:
    """Each of ``metrics`` for every question that has qrels, from one ranx run: a run of
    300k lines costs a second and most of a gigabyte to convert, once instead of per metric."""
    from ranx import Qrels, Run, evaluate

    q, r = _comparable(qrels, run, metrics)
    run_obj = Run(r)
    evaluate(Qrels(q), run_obj, metrics, make_comparable=True)
    return {m: {qid: float(v) for qid, v in run_obj.scores[m].items()} for m in metrics}


def compile_metrics(metrics: list[str] | None = None) -> list[str]:
    """Evaluates every metric the reports compute once, on a toy run: ranx compiles each
    metric with numba on its first use (about a minute for the set on 2 cores) and caches
    the machine code beside the package, so a new environment pays that once, here, and
    not inside the first evaluation of a real run. Returns the metrics compiled."""
    metrics = metrics or sorted(
        {*RETRIEVAL_METRICS, *(ndcg(k, g) for g in GAINS for k in (5, 50)), "map@10", "recall@10", "recall@100", "mrr"}
    )
    qrels = pl.DataFrame({"question_id": ["q1", "q1", "q2"], "passage_id": ["a", "b", "c"], "label": [2, 1, 1]})
    run = pl.DataFrame(
        {"question_id": ["q1", "q1", "q2"], "passage_id": ["a", "x", "c"], "rank": [1, 2, 1], "score": [1.0, 0.5, 1.0]}
    )
    evaluate_run(qrels, run, metrics)
    for metric in metrics:
        per_question(qrels, run, metric)
    return metrics
