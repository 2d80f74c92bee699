"""LLM readers over retrieved passages (QUIT paper section 5.4) as functions of frames.

For every ranked list (a retriever's run, or a reranked one) and every k in ``CUTOFFS`` and
context strategy (Union_norm, Union_freq over the passages' hints, ``assets.eval.quit.rules``),
the reader answers from the context built from the top-k passages. Two exact matches are
kept: ``em``, the answer parsed by ``rules.parse_short_answer`` equal after
``assets.common.text.normalize`` to an answer in the question's valid-answer pool, and
``em_raw``, the QUIT release's (:func:`raw_exact_match`). The judge decides the others
(``correct``).

The rows of QUIT's reports are built here too: each table's metric columns (``TABLE_2`` to
``TABLE_8_KEYS``), the means per split (:func:`scores_by_split`) and their intervals
(:func:`with_intervals`).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from assets.common.prompts import load_prompt
from assets.common.text import exact_match, normalize
from assets.eval import metrics as eval_metrics
from assets.eval import uncertainty
from assets.eval.quit.rules import STRATEGIES, passage_units
from assets.quit import rules, steps
from resources.llm import CallStats, LLMRequest, Model

CUTOFFS = (1, 3, 5)
NO_ANSWER = "NO ANSWER"

ANSWER_SCHEMA = {
    "question_id": pl.String,
    "reader": pl.String,
    "system": pl.String,
    "k": pl.Int32,
    "strategy": pl.String,
    "context": pl.String,
    "raw": pl.String,
    "answer": pl.String,
    "error": pl.String,
    "em": pl.Boolean,
    "em_raw": pl.Boolean,
    "correct": pl.Boolean,
}


def released_answer(raw: str) -> str:
    """A reader's output as the QUIT release's ``clean_responses`` (experiments/vanilla/rag/
    by_server.py) leaves it: stripped, its last line, one leading "(" dropped, NO ANSWER when
    empty or when it mentions "no answer" in any case. The release also turns an answer that
    spaCy parses as a full sentence into NO ANSWER; spaCy's model is not bundled, so that
    step is left out (a sentence-long answer matches no gold anyway, except a gold that is a
    sentence)."""
    line = raw.strip().split("\n")[-1]
    line = line[1:] if line.startswith("(") else line
    return NO_ANSWER if not line or "no answer" in line.lower() else line


def raw_exact_match(raw: str | None, golds: list[str]) -> bool:
    """The release's EM (results/retriever/retriever_rag.py): the cleaned output is one of
    the gold strings as written, case and punctuation included. No output matches nothing."""
    return raw is not None and released_answer(raw) in golds


def with_raw_em(answers: pl.DataFrame, questions: pl.DataFrame) -> pl.DataFrame:
    """``answers`` (``question_id``, ``raw``) with ``em_raw`` against each question's pool."""
    pool = dict(questions.select("question_id", "answers").iter_rows())
    return answers.with_columns(
        pl.Series(
            "em_raw",
            [
                raw_exact_match(raw, pool.get(qid) or [])
                for qid, raw in answers.select("question_id", "raw").iter_rows()
            ],
            dtype=pl.Boolean,
        )
    )


def reader_items(
    runs: pl.DataFrame, corpus: pl.DataFrame, questions: pl.DataFrame | None, cutoffs=CUTOFFS, top: int | None = None
) -> tuple[list[dict], list[str]]:
    """One item per (question, system, k, strategy) with its context, and the ids of the
    passages cut into regex sentences because their id does not encode hints of
    ``questions`` (``question_id``, ``hints``; see ``contexts.passage_units``). ``top`` caps
    Union_freq's units (None: all, as released). Run passages missing from the corpus are
    skipped."""
    known = runs.join(corpus.select("passage_id"), on="passage_id", how="semi").sort("question_id", "system", "rank")
    head = known.group_by(["question_id", "system"], maintain_order=True).head(max(cutoffs))
    units, split = passage_units(
        corpus.join(head.select("passage_id").unique(), on="passage_id", how="semi"), questions
    )
    items = []
    for (qid, system), group in head.group_by(["question_id", "system"], maintain_order=True):
        ranked = [units[p] for p in group["passage_id"]]
        for k in cutoffs:
            for strategy, build in STRATEGIES.items():
                items.append(
                    {
                        "question_id": qid,
                        "system": system,
                        "k": k,
                        "strategy": strategy,
                        "context": build(ranked[:k], top),
                    }
                )
    return sorted(items, key=lambda i: (i["question_id"], i["system"], i["k"], i["strategy"])), sorted(split)


def read(
    items: list[dict],
    questions: pl.DataFrame,
    reader: Model,
    judge: Model,
    stats: CallStats,
    log=None,
    parse=rules.parse_last_line_answer,
) -> pl.DataFrame:
    """Answers for every item, read from each reply by ``parse`` (the release's last line by
    default; ``rules.READER_PARSES``) and graded against the answer pool (``answers`` column)."""
    prompt = load_prompt("quit", "reader")
    q = {r["question_id"]: r for r in questions.select("question_id", "question", "answers").iter_rows(named=True)}
    reqs = [
        LLMRequest(
            f"{i['question_id']} {i['system']} k={i['k']} {i['strategy']}",
            prompt.messages(question=q[i["question_id"]]["question"], context=i["context"]),
        )
        for i in items
    ]
    results = reader.run(reqs, parse=parse, stats=stats, log=log)
    graded = [
        (i["question_id"], q[i["question_id"]]["question"], q[i["question_id"]]["answers"], r.value)
        for i, r in zip(items, results)
        if r.ok and r.value
    ]
    verdicts = steps.judge(judge, graded, stats, log)
    rows = []
    for i, r in zip(items, results):
        answer = r.value if r.ok else None
        golds = q[i["question_id"]]["answers"]
        verdict = verdicts.get((i["question_id"], normalize(answer))) if answer else None
        rows.append(
            {
                **i,
                "reader": reader.alias,
                "raw": r.text,
                "answer": answer,
                "error": r.error,
                "em": exact_match(answer, golds),
                "em_raw": raw_exact_match(r.text, golds),
                "correct": rules.is_correct(answer, golds, verdict),
            }
        )
    return pl.DataFrame(rows, schema=ANSWER_SCHEMA)


# Relevant passages read per open question and round by :func:`read_relevant`: enough to
# keep a served model's parallel slots busy across questions, few enough that a question
# answered by its first passages is not read much further.
OPTIMAL_ROUND = 20
# The Optimal bound: its rows' system in the answers, and its row's system and strategy in Table 8.
OPTIMAL_SYSTEM, OPTIMAL_ROW, OPTIMAL_STRATEGY = "optimal", "Optimal", "oracle"
# What the Optimal bound takes the any-of over: normalized EM, the release's raw EM, the judge.
OPTIMAL_FLAGS = ("em", "em_raw", "correct")


def read_relevant(
    relevant: pl.DataFrame,
    questions: pl.DataFrame,
    reader: Model,
    judge: Model,
    stats: CallStats,
    log=None,
    parse=rules.parse_last_line_answer,
    per_round: int = OPTIMAL_ROUND,
) -> pl.DataFrame:
    """The reader's answers from the relevant passages of each question (``relevant``:
    ``passage_id``, ``question_id``, ``text``, ``label``, ``num_hints``), as the Optimal bound
    needs them: one row per passage read (``passage_id``, ``question_id``, ``em``,
    ``em_raw``, ``correct``). The bound is an any-of over a question's passages, so a
    question stops being read once one passage has given each of the three true: reading
    the rest could not change its row of :func:`optimal`. The passages go in rounds of
    ``per_round`` per open question, the likeliest to be answered from first (label 2 before
    1, then the most hints: Figure 6 of the paper finds the answering passages hold five
    most often). A question that no passage answers is read whole."""
    pool = questions.select("question_id", "question", pl.col("answers").alias("aliases"))
    ordered = relevant.sort(
        ["question_id", "label", "num_hints", "passage_id"], descending=[False, True, True, False], nulls_last=True
    ).with_columns(pl.int_range(pl.len()).over("question_id").alias("_order"))
    read, open_ids, start = [], set(ordered["question_id"].unique().to_list()), 0
    while open_ids:
        batch = ordered.filter(
            pl.col("question_id").is_in(list(open_ids)) & pl.col("_order").is_between(start, start + per_round - 1)
        )
        if not batch.height:
            break
        answers = steps.passage_answers(batch, pool, reader, judge, stats, log, parse=parse)
        answers = with_raw_em(answers.with_columns(pl.col("exact_match").alias("em")), questions)
        read.append(answers.select("passage_id", "question_id", "em", "em_raw", "correct"))
        answered = (
            pl.concat(read)
            .group_by("question_id")
            .agg(pl.col(c).fill_null(False).any() for c in OPTIMAL_FLAGS)
            .filter(pl.all_horizontal(OPTIMAL_FLAGS))
        )
        open_ids -= set(answered["question_id"].to_list())
        start += per_round
    empty = {"passage_id": pl.String, "question_id": pl.String} | dict.fromkeys(OPTIMAL_FLAGS, pl.Boolean)
    return pl.concat(read) if read else pl.DataFrame(schema=empty)


def optimal(answers: pl.DataFrame, qrels: pl.DataFrame, reader: str, questions: pl.DataFrame) -> pl.DataFrame:
    """The paper's Optimal upper bound: a question is answerable when the reader answers it
    correctly from at least one of its relevant (label 1 or 2) passages. ``answers`` are the
    reader's per-passage answers (``passage_id``, ``correct``, ``em`` and ``em_raw``; the
    release's results/rag/rag.py counts a raw match on any relevant passage). One row per
    question of ``questions``: the release divides by every test question, so a question
    without a relevant passage is a row no measure answers."""
    per_passage = answers.join(qrels.select("passage_id", "label"), on="passage_id")
    answered = per_passage.group_by("question_id").agg(pl.col(c).fill_null(False).any() for c in OPTIMAL_FLAGS)
    return (
        questions.select("question_id")
        .unique(maintain_order=True)
        .join(answered, on="question_id", how="left")
        .with_columns(
            *(pl.col(c).fill_null(False) for c in OPTIMAL_FLAGS),
            pl.lit(reader).alias("reader"),
            pl.lit(OPTIMAL_SYSTEM).alias("system"),
        )
    )


def em_table(answers: pl.DataFrame, optimal_rows: pl.DataFrame) -> pl.DataFrame:
    """Table 8's shape: per (system, k, strategy) and reader, Optimal first, the share of
    questions with ``em`` (normalized EM), ``em_raw`` (the release's raw EM) and ``judge``
    (judged correct)."""
    shares = [
        pl.col("em").mean().alias("em"),
        pl.col("em_raw").mean().alias("em_raw"),
        pl.col("correct").mean().alias("judge"),
    ]
    # readers in name order: Table 8's reader columns keep one order from run to run
    best = (
        optimal_rows.group_by("reader")
        .agg(shares)
        .sort("reader")
        .with_columns(
            pl.lit(OPTIMAL_ROW).alias("system"),
            pl.lit(None, pl.Int32).alias("k"),
            pl.lit(OPTIMAL_STRATEGY).alias("strategy"),
        )
    )
    rest = answers.group_by("system", "k", "strategy", "reader").agg(shares)
    return pl.concat(
        [best.select(rest.columns), rest.sort("system", "k", "strategy", "reader")], how="vertical_relaxed"
    )


def em_by_split(answers: pl.DataFrame, questions: pl.DataFrame) -> pl.DataFrame:
    """:func:`em_table` for "all" and each split (:func:`split_ids`) of the reader's
    ``answers`` (the Optimal bound's rows among them, system ``optimal``), with its ``split``
    and its ``questions`` count."""
    rows = []
    for part, ids in split_ids(questions):
        answered = answers.filter(pl.col("question_id").is_in(ids))
        shares = em_table(
            answered.filter(pl.col("system") != OPTIMAL_SYSTEM), answered.filter(pl.col("system") == OPTIMAL_SYSTEM)
        )
        rows.append(shares.with_columns(pl.lit(part).alias("split"), pl.lit(len(ids), pl.Int64).alias("questions")))
    return pl.concat(rows, how="vertical_relaxed")


def table_8_scores(answers: pl.DataFrame) -> pl.DataFrame:
    """The per-question scores behind :func:`em_table`'s shares, as its rows name them: one
    row per answer (``system``, ``k``, ``strategy``, ``reader``, ``question_id``) with ``em``,
    ``em_raw`` and ``judge`` (judged correct) as 0 or 1; the Optimal bound's rows (system
    ``optimal``) as the Optimal row of each reader."""
    optimal = pl.col("system") == OPTIMAL_SYSTEM
    return answers.select(
        pl.when(optimal).then(pl.lit(OPTIMAL_ROW)).otherwise(pl.col("system")).alias("system"),
        pl.col("k").cast(pl.Int32),
        pl.when(optimal).then(pl.lit(OPTIMAL_STRATEGY)).otherwise(pl.col("strategy")).alias("strategy"),
        "reader",
        "question_id",
        pl.col("em", "em_raw").cast(pl.Float64),
        pl.col("correct").cast(pl.Float64).alias("judge"),
    )


# Tables 4 and 6 share their columns; Table 7 is nDCG alone. nDCG with QUIT's gain.
TABLE_4 = [
    "hit_rate@1",
    "hit_rate@5",
    "recall@5",
    "recall@10",
    "recall@50",
    "mrr",
    *(eval_metrics.ndcg(k) for k in (10, 100)),
]
TABLE_7 = [eval_metrics.ndcg(k) for k in (5, 10, 50, 100)]
# Tables 2 and 5: the Hit@k and MRR columns.
TABLE_2 = ["hit_rate@1", "hit_rate@10", "hit_rate@50", "hit_rate@100", "mrr"]
TABLE_5 = ["hit_rate@1", "hit_rate@10", "hit_rate@50", "mrr"]
# The metrics whose values carry an interval and a test in each stored report: those its
# headline tables show (Table 6 has Table 4's columns; Table 8 each share of questions).
RETRIEVAL_UNCERTAINTY = list(dict.fromkeys([*TABLE_2, *TABLE_4]))
RERANKED_UNCERTAINTY = list(dict.fromkeys([*TABLE_5, *TABLE_4]))
RERANK_UNCERTAINTY = list(dict.fromkeys([*RERANKED_UNCERTAINTY, *TABLE_7]))
READER_UNCERTAINTY = ["em", "em_raw", "judge"]
# The rerank report's columns: the retrieval metrics, and nDCG@5 and @50 for Table 7.
RERANK_METRICS = [
    *eval_metrics.RETRIEVAL_METRICS,
    *(eval_metrics.ndcg(k, gain) for gain in eval_metrics.GAINS for k in (5, 50)),
]
# A Table 8 row's keys in the stored report (its system is the table's retriever column).
TABLE_8_KEYS = ["system", "k", "strategy", "reader"]


def over_oracle(oracles: list[str]) -> pl.Expr:
    """Whether a row's system reads the passages of an Oracle retriever (``oracles``): the
    retriever itself or ``<oracle>+<reranker>``."""
    return pl.col("system").str.split("+").list.first().is_in(oracles)


def table_8_summary(
    scores: pl.DataFrame, oracles: list[str], metrics: list[str], settings: uncertainty.UncertaintySettings
) -> pl.DataFrame:
    """Table 8's intervals and tests (``uncertainty.summarize`` of :func:`table_8_scores`),
    each reader's settings against that reader's best: the settings over retrieved passages
    against the best of those; the settings over the Oracle retriever's passages (``oracles``)
    against the best of those, kept apart as Table 7 keeps them, since they read the passages
    the qrels name; the Optimal bound an interval alone (p and ``tied_best`` null: a bound
    is compared with nothing)."""
    bound, oracle = pl.col("system") == OPTIMAL_ROW, over_oracle(oracles)

    def summary(rows: pl.DataFrame) -> pl.DataFrame:
        return uncertainty.summarize(rows, TABLE_8_KEYS, "question_id", metrics, settings, within=["reader"])

    return pl.concat(
        [
            summary(scores.filter(~bound & ~oracle)),
            summary(scores.filter(oracle)),
            summary(scores.filter(bound)).with_columns(
                pl.lit(None, pl.Float64).alias("p"), pl.lit(None, pl.Boolean).alias("tied_best")
            ),
        ]
    )


def split_ids(questions: pl.DataFrame) -> list[tuple[str, list[str]]]:
    """("all", every question id), then each split with its question ids, in name order."""
    per_split = [
        (s, g["question_id"].to_list()) for (s,), g in questions.sort("split").group_by("split", maintain_order=True)
    ]
    return [("all", questions["question_id"].to_list()), *per_split]


def on_split(table: pl.DataFrame, split: str) -> pl.DataFrame:
    """A report's rows of one split, without the split column (a headline table's)."""
    return table.filter(pl.col("split") == split).drop("split")


def of_split(frame: pl.DataFrame, questions: pl.DataFrame, split: str) -> pl.DataFrame:
    """The rows of ``frame`` (a run, qrels) whose question is of ``split``: what a figure
    beside a headline table is drawn from."""
    return frame.join(questions.filter(pl.col("split") == split).select("question_id"), on="question_id", how="semi")


def by_oracle(scores: pl.DataFrame, oracles: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``scores``' rows over retrieved passages, and those over an Oracle retriever's
    (:func:`over_oracle`): a report compares each part within itself, since the Oracle's
    passages are the ones the qrels name."""
    oracle = over_oracle(oracles)
    return scores.filter(~oracle), scores.filter(oracle)


def figure_6_runs(runs: pl.DataFrame, reranked: pl.DataFrame, oracles: list[str]) -> pl.DataFrame:
    """Figure 6's series: retrievers without a reranker and the Oracle retriever (``oracles``)
    with each reranker (the shuffled Oracle list alone says nothing about hints)."""
    return pl.concat([runs.filter(~pl.col("system").is_in(oracles)), reranked.filter(over_oracle(oracles))])


def no_rows(questions: pl.DataFrame, split: str, otherwise: str) -> str:
    """Why a headline table is empty: its split has no question in the evaluated slice, or
    ``otherwise``."""
    if questions.filter(pl.col("split") == split).is_empty():
        return f"no {split} question in the evaluated questions (report another split with the report's config: split)"
    return otherwise


def questions_covered(questions: pl.DataFrame) -> str:
    """How many QUIT questions a report counts, per split."""
    splits = ", ".join(f"{s}: {n}" for s, n in sorted(questions.group_by("split").len().iter_rows()))
    return f"{questions.height} QUIT questions ({splits or 'no split'})"


def per_question_scores(
    runs: pl.DataFrame, qrels: pl.DataFrame, questions: pl.DataFrame, metrics: list[str]
) -> pl.DataFrame:
    """Each system of ``runs`` on each question of ``questions`` that has qrels (``system``,
    ``question_id``, a column per metric; 0 where its run has no passage for the question),
    in one set of ranx evaluations for every system: a report's means per split and its
    intervals are both taken from these scores, so the questions are scored once. A system
    whose run has no passage for any question of a split, or a split without qrels, is an
    error as ``evaluate_run`` makes it: zeros there would read as a result."""
    schema = {"system": pl.String, "question_id": pl.String, **dict.fromkeys(metrics, pl.Float64)}
    if runs.is_empty():
        return pl.DataFrame(schema=schema)
    judged = qrels.join(questions.select("question_id"), on="question_id", how="semi")
    _refuse_uncovered(runs, judged, questions)
    return eval_metrics.grouped_per_question_metrics(judged, runs, ["system"], metrics).select(list(schema))


def _refuse_uncovered(runs: pl.DataFrame, judged: pl.DataFrame, questions: pl.DataFrame) -> None:
    """The errors :func:`per_question_scores` raises: one evaluation of every split together
    no longer meets ``evaluate_run``'s refusals split by split."""
    judged_ids = judged.select("question_id").unique()
    retrieved = runs.select("system", "question_id").unique().join(judged_ids, on="question_id", how="semi")
    systems = sorted(runs["system"].unique().to_list())
    for part, ids in split_ids(questions):
        n = judged_ids.filter(pl.col("question_id").is_in(ids)).height
        if not n:
            raise ValueError(f"no {part} question has qrels: there is no question to average over")
        covered = set(retrieved.filter(pl.col("question_id").is_in(ids))["system"].to_list())
        if missing := [s for s in systems if s not in covered]:
            raise ValueError(
                f"the run of {', '.join(missing)} has no passage for any of the {n} {part} questions with "
                "qrels (a filter or id mismatch: its zeros would read as a result)"
            )


def scores_by_split(
    per_question: pl.DataFrame, questions: pl.DataFrame, labels: Callable[[str], dict], metrics: list[str]
) -> list[dict]:
    """The rows of a QUIT metrics table: for "all" and each split (:func:`split_ids`), each
    system of ``per_question`` (:func:`per_question_scores`) with its ``labels`` columns, the
    split, its question count and the mean of each of ``metrics`` over the split's questions
    that have qrels (``evaluate_run``'s mean)."""
    rows = []
    for part, ids in split_ids(questions):
        on_part = per_question.filter(pl.col("question_id").is_in(ids))
        for system in sorted(per_question["system"].unique().to_list()):
            means = on_part.filter(pl.col("system") == system).select(pl.col(metrics).mean()).row(0, named=True)
            rows.append({**labels(system), "split": part, "questions": len(ids), **means})
    return rows


def metrics_table(rows: list[dict], keys: dict[str, type[pl.DataType]], metrics: list[str]) -> pl.DataFrame:
    """A QUIT metrics table of :func:`scores_by_split`'s ``rows``: its row ``keys`` (name ->
    dtype), ``split``, ``questions`` and ``metrics``. With no row the columns stay, so the
    headline tables and ``why_empty`` still show."""
    return pl.DataFrame(
        rows, schema={**keys, "split": pl.String, "questions": pl.Int64, **dict.fromkeys(metrics, pl.Float64)}
    )


# A reranked run's row keys in the rerank report.
RERANKED_KEYS = {"system": pl.String, "retriever": pl.String, "reranker": pl.String, "oracle": pl.Boolean}


def reranked_labels(system: str, oracles: list[str]) -> dict:
    """A ``<retriever>+<reranker>`` run's :data:`RERANKED_KEYS`; ``oracle``: its retriever is
    one of ``oracles``."""
    retriever, reranker = system.split("+", 1)
    return {"system": system, "retriever": retriever, "reranker": reranker, "oracle": retriever in oracles}


def with_intervals(
    table: pl.DataFrame, long: pl.DataFrame, keys: list[str], split: str, metrics: list[str]
) -> pl.DataFrame:
    """A stored report with, after its own columns, each of ``metrics``' ``<metric> ci_low``,
    ``ci_high`` and ``tied_best`` (``uncertainty.attach`` of the summary ``long`` of the
    headline ``split``): filled on that split's rows, null on the others and on every row of
    a report with nothing to summarize, so the columns a reader of the table expects are
    always there."""
    attached = uncertainty.attach(table, long.with_columns(pl.lit(split).alias("split")), [*keys, "split"])
    columns = {
        f"{m} {c}": dtype
        for m in metrics
        for c, dtype in (("ci_low", pl.Float64), ("ci_high", pl.Float64), ("tied_best", pl.Boolean))
    }
    return attached.select(
        *table.columns,
        *(pl.col(c) if c in attached.columns else pl.lit(None, dtype).alias(c) for c, dtype in columns.items()),
    )
