"""Conversational retrieval and generation evaluation (RECOR section 4) as functions of
frames: the query strategies, per-turn metrics, the two averagings, paired t-tests and
the report tables.

Query texts follow the published retrieval code (RECOR-Benchmark/RECOR,
``experiments/retrieval/ablation_eval.py`` and ``evaluate_last_turn.py``): the question
first, then ``Conversation History:`` and the history the release holds, then
``Reasoning:`` and the retrieval guidance stored with the turn at construction time,
blank lines between. Nothing is cut here: a retriever whose encoder reads a bounded input
cuts the end (the history), and ``recor_runs`` counts how often."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import polars as pl

from assets.eval.metrics import grouped_per_question_metrics
from assets.eval.uncertainty import UncertaintySettings, definitions, summarize
from assets.recor.release import last_turn_query, with_context, with_release_text

STRATEGIES = ["baseline", "query_rewrite", "reasoning", "history", "history_reasoning", "last_turn", "llm_reasoning"]
SHORT = {
    "baseline": "Base",
    "query_rewrite": "QR",
    "reasoning": "Reas",
    "history": "Hist",
    "history_reasoning": "H+R",
    "last_turn": "Prev",
    "llm_reasoning": "LLM-Reas",
}
STRATEGY_TEXT = {
    "baseline": "the question",
    "query_rewrite": "the question made self-contained by the LLM",
    "reasoning": "the question, then the retrieval guidance stored at construction (the release's subquestion_reasoning)",
    "history": "the question, then the whole conversation history",
    "history_reasoning": "the question, the history, then the stored retrieval guidance",
    "last_turn": "the previous question and answer, then the question (published last-turn ablation)",
    "llm_reasoning": "the question, then a search rationale the LLM writes at evaluation time (this project's)",
}
TURN_METRICS = ["ndcg@10", "map@10", "recall@10", "mrr"]
FIGURE_2 = "Figure 2: nDCG@10 by turn position (averaged over retrievers and domains)"
# The paper's text averages turns per domain, then domains; the published ablation scripts
# average turns per conversation, conversations per domain, then domains.
TURN_FIRST, CONVERSATION_FIRST = "turn_first", "conversation_first"
AVERAGING = {
    TURN_FIRST: "turn -> domain -> macro over domains (paper, section 4)",
    CONVERSATION_FIRST: "turn -> conversation -> domain -> macro over domains (published ablation scripts)",
}


def strategy_queries(
    turns: pl.DataFrame, rewrites: dict[str, str | None], rationales: dict[str, str | None]
) -> pl.DataFrame:
    """One query text per turn and strategy (see ``STRATEGY_TEXT``). A failed rewrite falls
    back to the question, a missing rationale or stored guidance to nothing, and the row
    says so (``fallback``)."""
    rows = []
    previous: dict[str, dict] = {}
    for t in with_release_text(turns).iter_rows(named=True):
        qid, q, history, guidance = t["qid"], t["query"], t["history"], t["guidance"]
        rewrite, why = rewrites.get(qid), rationales.get(qid)
        texts = {
            "baseline": (q, False),
            "query_rewrite": (rewrite or q, rewrite is None),
            "reasoning": (with_context(q, reasoning=guidance), not guidance),
            "history": (with_context(q, history=history), False),
            "history_reasoning": (with_context(q, history, guidance), not guidance),
            "last_turn": (last_turn_query(q, previous.get(t["conversation_id"])), False),
            "llm_reasoning": (with_context(q, reasoning=why), why is None),
        }
        previous[t["conversation_id"]] = t
        for strategy, (text, fallback) in texts.items():
            rows.append(
                {
                    "domain": t["domain"],
                    "qid": qid,
                    "conversation_id": t["conversation_id"],
                    "turn_id": t["turn_id"],
                    "strategy": strategy,
                    "query": text,
                    "fallback": fallback,
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            "domain": pl.String,
            "qid": pl.String,
            "conversation_id": pl.String,
            "turn_id": pl.Int32,
            "strategy": pl.String,
            "query": pl.String,
            "fallback": pl.Boolean,
        },
    )


def without_gold(turns: pl.DataFrame, qrels: pl.DataFrame) -> list[str]:
    """The turns with no relevant document in the qrels: no retrieval metric is defined for
    them, so they are left out of the scores (and counted), as the published scripts skip them."""
    golden = set(qrels.filter(pl.col("label") > 0)["question_id"])
    return sorted(q for q in turns["qid"] if q not in golden)


def turn_scores(runs: pl.DataFrame, qrels: pl.DataFrame, turns: pl.DataFrame) -> pl.DataFrame:
    """Per turn, retriever and strategy: nDCG@10, MAP@10, Recall@10 and MRR (ranx). Every
    turn with a gold document gets a row (a turn a run missed scores 0); a turn without
    one gets none (see ``without_gold``)."""
    schema = {
        "domain": pl.String,
        "conversation_id": pl.String,
        "qid": pl.String,
        "turn_id": pl.Int32,
        "retriever": pl.String,
        "strategy": pl.String,
        **{m: pl.Float64 for m in TURN_METRICS},
    }
    skipped = without_gold(turns, qrels)
    meta = turns.select("qid", "domain", "conversation_id", pl.col("turn_id").cast(pl.Int32)).filter(
        ~pl.col("qid").is_in(skipped)
    )
    if not runs.height:
        return pl.DataFrame(schema=schema)
    # every (retriever, strategy) in one ranx evaluation: one per configuration cost seconds each
    values = grouped_per_question_metrics(qrels, runs, ["system", "strategy"], TURN_METRICS)
    return (
        values.rename({"question_id": "qid", "system": "retriever"})
        .join(meta, on="qid", how="inner", maintain_order="left")
        .select(list(schema))
    )


def macro(scores: pl.DataFrame, by: list[str], metric: str = "ndcg@10", averaging: str = TURN_FIRST) -> pl.DataFrame:
    """Mean per domain (of the turns, or of the conversations' means of their turns), then
    the mean over domains (each domain weighs the same)."""
    return _macro(scores, by, [metric], averaging)


def _macro(scores: pl.DataFrame, by: list[str], metrics: list[str], averaging: str) -> pl.DataFrame:
    if averaging not in AVERAGING:
        raise ValueError(f"unknown averaging {averaging!r}; expected one of {sorted(AVERAGING)}")
    frame = scores
    if averaging == CONVERSATION_FIRST:
        frame = frame.group_by([*by, "domain", "conversation_id"]).agg([pl.col(m).mean() for m in metrics])
    per_domain = frame.group_by([*by, "domain"]).agg([pl.col(m).mean() for m in metrics])
    return per_domain.group_by(by).agg([pl.col(m).mean() for m in metrics]).sort(by)


def strategy_table(scores: pl.DataFrame, metric: str = "ndcg@10", averaging: str = TURN_FIRST) -> pl.DataFrame:
    """Table 3: retrievers x strategies, macro-averaged, with the average row."""
    wide = macro(scores, ["retriever", "strategy"], metric, averaging).pivot(
        on="strategy", index="retriever", values=metric
    )
    wide = wide.select("retriever", *[s for s in STRATEGIES if s in wide.columns]).sort("retriever")
    average = wide.select(pl.lit("Average").alias("retriever"), *[pl.col(s).mean() for s in wide.columns[1:]])
    return pl.concat([wide, average]).rename({s: SHORT[s] for s in STRATEGIES if s in wide.columns})


def ablation_table(table3: pl.DataFrame) -> pl.DataFrame:
    """Table 4: Baseline and each context strategy with its gain over Baseline, strategy /
    Base - 1, as a share (the paper prints it in percent: 0.25 is its +25%)."""
    out = table3.select("retriever", "Base")
    for col in ("Reas", "Hist", "H+R", "Prev", "LLM-Reas"):
        if col in table3.columns:
            out = out.with_columns(table3[col], (table3[col] / table3["Base"] - 1).alias(f"{col} gain"))
    return out


T_TEST_PAIRS = (
    ("query_rewrite", "baseline"),
    ("reasoning", "baseline"),
    ("history", "baseline"),
    ("history_reasoning", "baseline"),
    ("history_reasoning", "history"),
    ("last_turn", "baseline"),
    ("llm_reasoning", "baseline"),
)


def t_tests(scores: pl.DataFrame, pairs=T_TEST_PAIRS, metric: str = "ndcg@10") -> pl.DataFrame:
    """Table 17: paired t-tests over turn-level observations (turn x retriever). ``mean
    delta`` is the macro-averaged difference (per retriever, turn -> domain -> macro, then
    the mean over retrievers: the difference of Table 3's Average row); ``turn delta`` is
    the mean of the paired differences the t statistic tests. A comparison without enough
    pairs or variance gets a row whose t and p are NaN and whose ``note`` says why."""
    rows = []
    key = ["qid", "retriever"]
    for b, a in pairs:
        label = f"{SHORT[b]} vs. {SHORT[a]}"
        left = scores.filter(pl.col("strategy") == a).select(*key, "domain", pl.col(metric).alias("a"))
        right = scores.filter(pl.col("strategy") == b).select(*key, pl.col(metric).alias("b"))
        joined = left.join(right, on=key).sort(key)
        test = paired_t(joined["a"].to_list(), joined["b"].to_list(), label)
        delta = float("nan")
        if joined.height:
            diffs = joined.with_columns((pl.col("b") - pl.col("a")).alias("delta"))
            delta = _macro(diffs, ["retriever"], ["delta"], TURN_FIRST)["delta"].mean()
        rows.append(
            {
                "comparison": label,
                "n": test["n"],
                "mean delta": delta,
                "turn delta": test["mean_delta"],
                "se": test["se"],
                "t": test["t"],
                "p": test["p"],
                "note": test["note"],
            }
        )
    schema = {
        "comparison": pl.String,
        "n": pl.Int64,
        "mean delta": pl.Float64,
        "turn delta": pl.Float64,
        "se": pl.Float64,
        "t": pl.Float64,
        "p": pl.Float64,
        "note": pl.String,
    }
    return pl.DataFrame(rows, schema=schema)


def turn_position_table(
    scores: pl.DataFrame, strategies=("history_reasoning", "baseline"), metric: str = "ndcg@10"
) -> pl.DataFrame:
    """Table 19: per strategy and retriever, the metric by turn position (T1 ... T5+),
    turn -> domain -> macro."""
    bucketed = scores.with_columns(pl.col("turn_id").map_elements(turn_bucket, return_dtype=pl.String).alias("turn"))
    sub = bucketed.filter(pl.col("strategy").is_in(list(strategies)))
    table = macro(sub, ["strategy", "retriever", "turn"], metric)
    return table.pivot(on="turn", index=["strategy", "retriever"], values=metric, sort_columns=True).sort(
        "strategy", "retriever"
    )


def domain_table(scores: pl.DataFrame, strategy: str = "history_reasoning", metric: str = "ndcg@10") -> pl.DataFrame:
    """Table 20: domains x retrievers for one strategy, the mean over each domain's turns."""
    sub = scores.filter(pl.col("strategy") == strategy).group_by(["domain", "retriever"]).agg(pl.col(metric).mean())
    return sub.pivot(on="retriever", index="domain", values=metric, sort_columns=True).sort("domain")


def full_metrics(
    scores: pl.DataFrame, strategy: str = "history_reasoning", averaging: str = TURN_FIRST
) -> pl.DataFrame:
    """Table 18: nDCG@10, MAP@10, Recall@10 and MRR for one strategy, macro-averaged."""
    return _macro(scores.filter(pl.col("strategy") == strategy), ["retriever"], TURN_METRICS, averaging)


def _items(scores: pl.DataFrame, by: list[str], metrics: list[str], averaging: str) -> pl.DataFrame:
    """The items an averaging resamples, per ``by`` and domain, each named with its domain
    (``item``: two domains may number their conversations alike): the turns (turn -> domain
    -> macro), or the conversations, each the mean of its turns (turn -> conversation ->
    domain -> macro)."""
    if averaging not in AVERAGING:
        raise ValueError(f"unknown averaging {averaging!r}; expected one of {sorted(AVERAGING)}")
    if averaging == TURN_FIRST:
        return scores.select(*by, "domain", pl.format("{}/{}", "domain", "qid").alias("item"), *metrics)
    conversations = scores.group_by([*by, "domain", "conversation_id"], maintain_order=True).agg(
        pl.col(m).mean() for m in metrics
    )
    return conversations.select(*by, "domain", pl.format("{}/{}", "domain", "conversation_id").alias("item"), *metrics)


def _with_average(scores: pl.DataFrame, metrics: list[str]) -> pl.DataFrame:
    """``scores`` with Table 3's Average row as a retriever of its own: each turn's mean over
    the retrievers (its macro average is the mean of the retrievers' where every retriever
    scores every turn, as every run scores each turn it is asked: a missed turn is 0)."""
    average = scores.group_by(["domain", "conversation_id", "qid", "strategy"], maintain_order=True).agg(
        *(pl.col(m).mean() for m in metrics)
    )
    return pl.concat(
        [
            scores.select("domain", "conversation_id", "qid", "retriever", "strategy", *metrics),
            average.select(
                "domain", "conversation_id", "qid", pl.lit("Average").alias("retriever"), "strategy", *metrics
            ),
        ]
    )


def _resampled(averaging: str) -> str:
    """What an averaging's intervals resample, as its definitions name it."""
    return "turns" if averaging == TURN_FIRST else "conversations (each the mean of its turns)"


def strategy_uncertainty(
    scores: pl.DataFrame, settings: UncertaintySettings, averaging: str = TURN_FIRST
) -> tuple[pl.DataFrame, dict[str, str]]:
    """Table 3's intervals and tests (:func:`assets.eval.uncertainty.summarize`), with its
    columns' definitions: nDCG@10 per retriever (and the Average row) and strategy, the
    strategies of each retriever compared with its best, as the paper compares them."""
    metric = "ndcg@10"
    table3 = _items(_with_average(scores, [metric]), ["retriever", "strategy"], [metric], averaging)
    long = summarize(
        table3.with_columns(pl.col("strategy").replace(SHORT)),
        ["retriever", "strategy"],
        "item",
        [metric],
        settings,
        within=["retriever"],
        strata="domain",
    )
    keys = {
        "retriever": "a retriever alias (resources/retrievers.yaml); Average: each turn's mean over the retrievers",
        "strategy": "a query strategy as Table 3's columns name it, compared with the best strategy of its "
        "retriever (the paper compares the query strategies of each retriever); Table 4's scores are these",
    }
    return long, {
        **definitions(keys, settings, _resampled(averaging)),
        "value": f"nDCG@10 as Table 3 reports it, a share in [0, 1]; averaging: {AVERAGING[averaging]}",
    }


def uncertainty_tables(scores: pl.DataFrame, settings: UncertaintySettings) -> dict[str, tuple[pl.DataFrame, dict]]:
    """Issue 48's intervals and tests of the headline tables (Tables 3, 18, 19 and 20, both
    averagings where the table has both; Table 4's scores are Table 3's), each a
    :func:`assets.eval.uncertainty.summarize` frame by the table's name with its columns'
    definitions. Each table averages as its scores do (a macro average resamples each
    domain's items on their own); the systems compared are those the paper compares: in Table
    3 the strategies of each retriever, in Table 18 and in each domain of Table 20 the
    retrievers, in Table 19 the two strategies at each turn position of each retriever."""
    metric, tables = "ndcg@10", {}
    for averaging, suffix in ((TURN_FIRST, ""), (CONVERSATION_FIRST, "_conversation_first")):
        items, averaged = _resampled(averaging), f"averaging: {AVERAGING[averaging]}"
        tables[f"table_3{suffix}"] = strategy_uncertainty(scores, settings, averaging)
        full = _items(scores.filter(pl.col("strategy") == "history_reasoning"), ["retriever"], TURN_METRICS, averaging)
        tables[f"table_18{suffix}"] = (
            summarize(full, ["retriever"], "item", TURN_METRICS, settings, strata="domain"),
            {
                **definitions(
                    {"retriever": "a retriever alias (resources/retrievers.yaml), compared with the best retriever"},
                    settings,
                    items,
                ),
                "value": f"the metric of the History+Reasoning queries' runs as Table 18 reports it, a share in "
                f"[0, 1]; {averaged}",
            },
        )
    positions = scores.filter(pl.col("strategy").is_in(["history_reasoning", "baseline"])).with_columns(
        pl.col("turn_id").map_elements(turn_bucket, return_dtype=pl.String).alias("turn")
    )
    tables["table_19"] = (
        summarize(
            _items(positions, ["strategy", "retriever", "turn"], [metric], TURN_FIRST),
            ["strategy", "retriever", "turn"],
            "item",
            [metric],
            settings,
            within=["retriever", "turn"],
            strata="domain",
        ).sort("strategy", "retriever", "turn"),
        {
            **definitions(
                {
                    "strategy": "History+Reasoning or Baseline, compared with each other at each turn position of "
                    "each retriever",
                    "retriever": "a retriever alias (resources/retrievers.yaml)",
                    "turn": "the turn position, T1 ... T4, T5+ (Table 19's columns)",
                },
                settings,
                "turns",
            ),
            "value": f"nDCG@10 as Table 19 reports it, a share in [0, 1]; averaging: {AVERAGING[TURN_FIRST]}",
        },
    )
    by_domain = scores.filter(pl.col("strategy") == "history_reasoning")
    tables["table_20"] = (
        summarize(
            by_domain.select("domain", "retriever", "qid", metric),
            ["domain", "retriever"],
            "qid",
            [metric],
            settings,
            within=["domain"],
        ).sort("domain", "retriever"),
        {
            **definitions(
                {
                    "domain": "a RECOR domain (Table 20's rows)",
                    "retriever": "a retriever alias (Table 20's columns), compared with the best retriever of the "
                    "domain",
                },
                settings,
                "turns",
            ),
            "value": "nDCG@10 with History+Reasoning queries as Table 20 reports it, the mean over the domain's "
            "turns, a share in [0, 1]",
        },
    )
    return tables


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
    ax.set_title(FIGURE_2)
    ax.legend(fontsize=7)
    return fig


def domain_plot(scores: pl.DataFrame, metric: str = "ndcg@10"):
    """Baseline against History+Reasoning per domain (best retriever per domain)."""
    from assets.eval.reports import _plt

    plt = _plt()
    best = (
        scores.filter(pl.col("strategy").is_in(["baseline", "history_reasoning"]))
        .group_by(["domain", "strategy", "retriever"])
        .agg(pl.col(metric).mean())
        .group_by(["domain", "strategy"])
        .agg(pl.col(metric).max())
        .sort("domain")
    )
    domains = sorted(best["domain"].unique().to_list())
    fig, ax = plt.subplots(figsize=(7, 3.2))
    for i, strategy in enumerate(["baseline", "history_reasoning"]):
        vals = dict(best.filter(pl.col("strategy") == strategy).select("domain", metric).iter_rows())
        ax.bar(
            [d + i * 0.4 for d in range(len(domains))], [vals.get(d, 0.0) for d in domains], 0.4, label=SHORT[strategy]
        )
    ax.set_xticks([d + 0.2 for d in range(len(domains))], domains, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel(metric)
    ax.set_title("Best retriever per domain: Baseline against History+Reasoning")
    ax.legend(fontsize=7)
    return fig


def macro_average(per_domain: Mapping[str, float]) -> float:
    """Each domain weighs the same regardless of its number of turns."""
    values = [v for v in per_domain.values() if v is not None and not math.isnan(v)]
    return sum(values) / len(values) if values else float("nan")


ZERO_SD = 1e-12


def paired_t(a: Sequence[float], b: Sequence[float], comparison: str = "") -> dict:
    """Paired t-test of b against a over the same observations (turns): the mean
    difference, its standard error, t and the two-sided p (scipy's ``ttest_rel``).

    Documented outcomes instead of scipy's warnings: fewer than two pairs, or differences
    without variance (all equal, their standard deviation at most ``ZERO_SD``), give t and p NaN with the reason in ``note``; a NaN score
    is an error naming the comparison and the pair, since the metrics never produce one."""
    from scipy import stats

    where = f"{comparison}: " if comparison else ""
    if len(a) != len(b):
        raise ValueError(f"{where}paired samples differ in length ({len(a)} vs {len(b)})")
    for i, (x, y) in enumerate(zip(a, b)):
        if math.isnan(x) or math.isnan(y):
            raise ValueError(f"{where}pair {i} has a NaN score ({x}, {y})")
    diffs = [y - x for x, y in zip(a, b)]
    n = len(diffs)
    nan = float("nan")
    mean = sum(diffs) / n if n else nan
    if n < 2:
        return {"n": n, "mean_delta": mean, "se": nan, "t": nan, "p": nan, "note": f"fewer than 2 pairs ({n})"}
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    # Equal differences carry float noise (0.3 - 0.2 != 0.2 - 0.1) that would make t ~1e16.
    if sd <= ZERO_SD:
        return {
            "n": n,
            "mean_delta": mean,
            "se": 0.0,
            "t": nan,
            "p": nan,
            "note": f"no variance: every pair differs by {diffs[0]:.4g}",
        }
    result = stats.ttest_rel(b, a)
    return {
        "n": n,
        "mean_delta": mean,
        "se": sd / math.sqrt(n),
        "t": float(result.statistic),
        "p": float(result.pvalue),
        "note": "",
    }


def turn_bucket(turn_id: int, last: int = 5) -> str:
    """Turn position label for the turn-position table: T1 ... T4, then T5+."""
    return f"T{turn_id}" if turn_id < last else f"T{last}+"


def best_configuration(scores: pl.DataFrame) -> tuple[str, str]:
    """The retriever and strategy with the highest macro-averaged nDCG@10."""
    table = macro(scores, ["retriever", "strategy"]).sort(
        ["ndcg@10", "retriever", "strategy"], descending=[True, False, False]
    )
    row = table.row(0, named=True)
    return row["retriever"], row["strategy"]
