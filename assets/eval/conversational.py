"""Conversational retrieval and generation evaluation (RECOR section 4) as functions of
frames: the five query strategies, per-turn metrics, macro-averages over domains, paired
t-tests and the report tables."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import polars as pl

from assets.eval.metrics import per_question

STRATEGIES = ["baseline", "query_rewrite", "reasoning", "history", "history_reasoning"]
SHORT = {"baseline": "Base", "query_rewrite": "QR", "reasoning": "Reas", "history": "Hist", "history_reasoning": "H+R"}
TURN_METRICS = ["ndcg@10", "map@10", "recall@10", "mrr"]
# Dense encoders read a few hundred tokens; the history kept in front of a query is cut to
# its last words so that the current question is never truncated away.
HISTORY_WORDS = 300


def recent(history: str, words: int = HISTORY_WORDS) -> str:
    parts = history.split()
    return " ".join(parts[-words:])


def strategy_queries(turns: pl.DataFrame, rewrites: dict[str, str | None], rationales: dict[str, str | None]) -> pl.DataFrame:
    """One query text per turn and strategy. A failed rewrite falls back to the question
    and a failed rationale to nothing, and the row says so (``fallback``)."""
    rows = []
    for t in turns.iter_rows(named=True):
        qid, q = t["qid"], t["query"]
        history = "" if t["turn_id"] == 1 else recent(t["conversation_history"])
        rewrite, why = rewrites.get(qid), rationales.get(qid)
        texts = {
            "baseline": (q, False),
            "query_rewrite": (rewrite or q, rewrite is None),
            "reasoning": (f"{q} {why}" if why else q, why is None),
            "history": (f"{history} {q}".strip(), False),
            "history_reasoning": (f"{history} {q} {why or ''}".strip(), why is None),
        }
        for strategy, (text, fallback) in texts.items():
            rows.append({"domain": t["domain"], "qid": qid, "conversation_id": t["conversation_id"], "turn_id": t["turn_id"],
                         "strategy": strategy, "query": text, "fallback": fallback})
    return pl.DataFrame(rows, schema={"domain": pl.String, "qid": pl.String, "conversation_id": pl.String, "turn_id": pl.Int32,
                                      "strategy": pl.String, "query": pl.String, "fallback": pl.Boolean})


def turn_scores(runs: pl.DataFrame, qrels: pl.DataFrame, turns: pl.DataFrame) -> pl.DataFrame:
    """Per turn, retriever and strategy: nDCG@10, MAP@10, Recall@10 and MRR (ranx). Every
    turn with qrels gets a row; a turn a run missed scores 0."""
    rows = []
    meta = {t["qid"]: t for t in turns.select("qid", "domain", "turn_id").iter_rows(named=True)}
    for (retriever, strategy), run in runs.group_by(["system", "strategy"], maintain_order=True):
        values = {m: per_question(qrels, run, m) for m in TURN_METRICS}
        for qid in sorted(meta):
            rows.append({"domain": meta[qid]["domain"], "qid": qid, "turn_id": meta[qid]["turn_id"], "retriever": retriever,
                         "strategy": strategy, **{m: values[m].get(qid, 0.0) for m in TURN_METRICS}})
    schema = {"domain": pl.String, "qid": pl.String, "turn_id": pl.Int32, "retriever": pl.String, "strategy": pl.String,
              **{m: pl.Float64 for m in TURN_METRICS}}
    return pl.DataFrame(rows, schema=schema)


def macro(scores: pl.DataFrame, by: list[str], metric: str = "ndcg@10") -> pl.DataFrame:
    """Mean per domain, then the mean over domains (each domain weighs the same)."""
    per_domain = scores.group_by([*by, "domain"]).agg(pl.col(metric).mean())
    return per_domain.group_by(by).agg(pl.col(metric).mean()).sort(by)


def strategy_table(scores: pl.DataFrame, metric: str = "ndcg@10") -> pl.DataFrame:
    """Table 3: retrievers x strategies, macro-averaged, with the average row."""
    wide = macro(scores, ["retriever", "strategy"], metric).pivot(on="strategy", index="retriever", values=metric)
    wide = wide.select("retriever", *[s for s in STRATEGIES if s in wide.columns]).sort("retriever")
    average = wide.select(pl.lit("Average").alias("retriever"), *[pl.col(s).mean() for s in wide.columns[1:]])
    return pl.concat([wide, average]).rename({s: SHORT[s] for s in STRATEGIES if s in wide.columns})


def ablation_table(table3: pl.DataFrame) -> pl.DataFrame:
    """Table 4: Baseline, +Reasoning, +History, History+Reasoning with the change over
    Baseline in percent."""
    out = table3.select("retriever", "Base")
    for col in ("Reas", "Hist", "H+R"):
        if col in table3.columns:
            out = out.with_columns(table3[col], ((table3[col] / table3["Base"] - 1) * 100).alias(f"{col} %"))
    return out


def t_tests(scores: pl.DataFrame, pairs=(("query_rewrite", "baseline"), ("reasoning", "baseline"), ("history", "baseline"),
                                         ("history_reasoning", "baseline"), ("history_reasoning", "history")),
            metric: str = "ndcg@10") -> pl.DataFrame:
    """Table 17: paired t-tests over turn-level observations (turn x retriever)."""
    rows = []
    key = ["qid", "retriever"]
    for b, a in pairs:
        left = scores.filter(pl.col("strategy") == a).select(*key, pl.col(metric).alias("a"))
        right = scores.filter(pl.col("strategy") == b).select(*key, pl.col(metric).alias("b"))
        joined = left.join(right, on=key).sort(key)
        if joined.height < 2:
            continue
        rows.append({"comparison": f"{SHORT[b]} vs. {SHORT[a]}", **paired_t(joined["a"].to_list(), joined["b"].to_list())})
    return pl.DataFrame(rows)


def turn_position_table(scores: pl.DataFrame, strategies=("history_reasoning", "baseline"), metric: str = "ndcg@10") -> pl.DataFrame:
    """Table 19: per strategy and retriever, the metric by turn position (T1 ... T5+)."""
    bucketed = scores.with_columns(pl.col("turn_id").map_elements(turn_bucket, return_dtype=pl.String).alias("turn"))
    sub = bucketed.filter(pl.col("strategy").is_in(list(strategies)))
    table = macro(sub, ["strategy", "retriever", "turn"], metric)
    return table.pivot(on="turn", index=["strategy", "retriever"], values=metric, sort_columns=True).sort("strategy", "retriever")


def domain_table(scores: pl.DataFrame, strategy: str = "history_reasoning", metric: str = "ndcg@10") -> pl.DataFrame:
    """Table 20: domains x retrievers for one strategy."""
    sub = scores.filter(pl.col("strategy") == strategy).group_by(["domain", "retriever"]).agg(pl.col(metric).mean())
    return sub.pivot(on="retriever", index="domain", values=metric, sort_columns=True).sort("domain")


def full_metrics(scores: pl.DataFrame, strategy: str = "history_reasoning") -> pl.DataFrame:
    """Table 18: nDCG@10, MAP@10, Recall@10 and MRR for one strategy, macro-averaged."""
    sub = scores.filter(pl.col("strategy") == strategy)
    per_domain = sub.group_by(["retriever", "domain"]).agg([pl.col(m).mean() for m in TURN_METRICS])
    return per_domain.group_by("retriever").agg([pl.col(m).mean() for m in TURN_METRICS]).sort("retriever")


def turn_curve(scores: pl.DataFrame, metric: str = "ndcg@10"):
    """Figure 2: the metric by turn position per strategy, averaged over retrievers and
    domains."""
    from assets.eval.reports import _plt

    plt = _plt()
    bucketed = scores.with_columns(pl.col("turn_id").map_elements(turn_bucket, return_dtype=pl.String).alias("turn"))
    table = macro(bucketed, ["strategy", "turn"], metric)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for strategy in STRATEGIES:
        sub = table.filter(pl.col("strategy") == strategy).sort("turn")
        if sub.height:
            ax.plot(sub["turn"].to_list(), sub[metric].to_list(), marker="o", label=SHORT[strategy])
    ax.set_xlabel("turn")
    ax.set_ylabel(metric)
    ax.set_title("Retrieval by turn position")
    ax.legend(fontsize=7)
    return fig


def domain_plot(scores: pl.DataFrame, metric: str = "ndcg@10"):
    """Baseline against History+Reasoning per domain (best retriever per domain)."""
    from assets.eval.reports import _plt

    plt = _plt()
    best = (scores.filter(pl.col("strategy").is_in(["baseline", "history_reasoning"]))
            .group_by(["domain", "strategy", "retriever"]).agg(pl.col(metric).mean())
            .group_by(["domain", "strategy"]).agg(pl.col(metric).max()).sort("domain"))
    domains = sorted(best["domain"].unique().to_list())
    fig, ax = plt.subplots(figsize=(7, 3.2))
    for i, strategy in enumerate(["baseline", "history_reasoning"]):
        vals = dict(best.filter(pl.col("strategy") == strategy).select("domain", metric).iter_rows())
        ax.bar([d + i * 0.4 for d in range(len(domains))], [vals.get(d, 0.0) for d in domains], 0.4, label=SHORT[strategy])
    ax.set_xticks([d + 0.2 for d in range(len(domains))], domains, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel(metric)
    ax.set_title("Best retriever per domain")
    ax.legend(fontsize=7)
    return fig


def macro_average(per_domain: Mapping[str, float]) -> float:
    """Each domain weighs the same regardless of its number of turns."""
    values = [v for v in per_domain.values() if v is not None and not math.isnan(v)]
    return sum(values) / len(values) if values else float("nan")


def paired_t(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    """Paired t-test of b against a over the same observations (turns): mean difference,
    its standard error, t and the two-sided p (scipy's ``ttest_rel``)."""
    from scipy import stats

    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length ({len(a)} vs {len(b)})")
    diffs = [y - x for x, y in zip(a, b)]
    n = len(diffs)
    mean = sum(diffs) / n if n else float("nan")
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1)) if n > 1 else float("nan")
    result = stats.ttest_rel(b, a) if n > 1 else None
    return {"n": n, "mean_delta": mean, "se": sd / math.sqrt(n) if n > 1 else float("nan"),
            "t": float(result.statistic) if result is not None else float("nan"),
            "p": float(result.pvalue) if result is not None else float("nan")}


def turn_bucket(turn_id: int, last: int = 5) -> str:
    """Turn position label for the turn-position table: T1 ... T4, then T5+."""
    return f"T{turn_id}" if turn_id < last else f"T{last}+"
