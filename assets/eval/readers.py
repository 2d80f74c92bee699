"""LLM readers over retrieved passages (QUIT paper section 5.4) as functions of frames.

For every ranked list (a retriever's run, or a reranked one) and every k in ``CUTOFFS`` and
context strategy (Union_norm, Union_freq), the reader answers from the context built from the
top-k passages. An answer counts as an exact match when it equals, after normalization, an
answer in the question's valid-answer pool; the judge decides the others (``correct``).
"""

from __future__ import annotations

import polars as pl

from assets.common.prompts import load_prompt
from assets.common.text import exact_match, normalize
from assets.eval.contexts import STRATEGIES
from assets.quit import rules, steps
from resources.llm import CallStats, LLMRequest

CUTOFFS = (1, 3, 5)

ANSWER_SCHEMA = {
    "question_id": pl.String, "reader": pl.String, "system": pl.String, "k": pl.Int32, "strategy": pl.String,
    "context": pl.String, "raw": pl.String, "answer": pl.String, "error": pl.String, "em": pl.Boolean,
    "correct": pl.Boolean,
}


def reader_items(runs: pl.DataFrame, corpus: pl.DataFrame, cutoffs=CUTOFFS, top_sentences: int = 5) -> list[dict]:
    """One item per (question, system, k, strategy) with its context."""
    text = dict(corpus.select("passage_id", "text").iter_rows())
    items = []
    for (qid, system), group in runs.sort("rank").group_by(["question_id", "system"], maintain_order=True):
        ranked = [text[p] for p in group["passage_id"] if p in text]
        for k in cutoffs:
            for strategy, build in STRATEGIES.items():
                items.append({"question_id": qid, "system": system, "k": k, "strategy": strategy,
                              "context": build(ranked[:k], top_sentences)})
    return sorted(items, key=lambda i: (i["question_id"], i["system"], i["k"], i["strategy"]))


def read(items: list[dict], questions: pl.DataFrame, llm, reader: str, judge_alias: str, stats: CallStats, log=None) -> pl.DataFrame:
    """Answers for every item, graded against the answer pool (``answers`` column)."""
    prompt = load_prompt("quit", "reader")
    q = {r["question_id"]: r for r in questions.select("question_id", "question", "answers").iter_rows(named=True)}
    reqs = [LLMRequest(f"{i['question_id']} {i['system']} k={i['k']} {i['strategy']}",
                       prompt.messages(question=q[i["question_id"]]["question"], context=i["context"])) for i in items]
    results = llm.run(reader, reqs, parse=rules.parse_short_answer, stats=stats, log=log)
    graded = [(i["question_id"], q[i["question_id"]]["question"], q[i["question_id"]]["answers"], r.value)
              for i, r in zip(items, results) if r.ok and r.value]
    verdicts = steps.judge(llm, judge_alias, graded, stats, log)
    rows = []
    for i, r in zip(items, results):
        answer = r.value if r.ok else None
        golds = q[i["question_id"]]["answers"]
        verdict = verdicts.get((i["question_id"], normalize(answer))) if answer else None
        rows.append({**i, "reader": reader, "raw": r.text, "answer": answer, "error": r.error,
                     "em": exact_match(answer, golds), "correct": rules.is_correct(answer, golds, verdict)})
    return pl.DataFrame(rows, schema=ANSWER_SCHEMA)


def optimal(answers: pl.DataFrame, qrels: pl.DataFrame, reader: str) -> pl.DataFrame:
    """The paper's Optimal upper bound: a question is answerable when the reader answers it
    correctly from at least one of its relevant (label 1 or 2) passages. ``answers`` are the
    reader's per-passage answers (``passage_id``, ``correct``, ``em``)."""
    per_passage = answers.join(qrels.select("passage_id", "label"), on="passage_id")
    return (
        per_passage.group_by("question_id")
        .agg(pl.col("em").fill_null(False).any().alias("em"), pl.col("correct").fill_null(False).any().alias("correct"))
        .with_columns(pl.lit(reader).alias("reader"), pl.lit("optimal").alias("system"))
    )


def em_table(answers: pl.DataFrame, optimal_rows: pl.DataFrame) -> pl.DataFrame:
    """Table 8's shape: EM per (system, k, strategy) and reader, Optimal first."""
    best = (optimal_rows.group_by("reader").agg(pl.col("em").mean().alias("em"), pl.col("correct").mean().alias("judge"))
            .with_columns(pl.lit("Optimal").alias("system"), pl.lit(None, pl.Int32).alias("k"), pl.lit("oracle").alias("strategy")))
    rest = answers.group_by("system", "k", "strategy", "reader").agg(
        pl.col("em").mean().alias("em"), pl.col("correct").mean().alias("judge"))
    return pl.concat([best.select(rest.columns), rest.sort("system", "k", "strategy")], how="vertical_relaxed")
