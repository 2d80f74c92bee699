"""Table 1 of the QUIT paper: the benchmark's statistical summary."""

from __future__ import annotations

import numpy as np
import polars as pl

from assets.text import contains_phrase, tokens, word_count


def lexical_overlap(question: str, passage: str) -> float:
    """Jaccard overlap of the normalized word sets of question and passage."""
    q, p = set(tokens(question)), set(tokens(passage))
    return len(q & p) / len(q | p) if q | p else 0.0


def table1(questions: pl.DataFrame, corpus: pl.DataFrame, qrels: pl.DataFrame, encode) -> pl.DataFrame:
    """Counts, average lengths in words, query-passage lexical overlap, answer containment
    (share of a question's passages containing any valid answer) and query-passage semantic
    overlap (mean cosine similarity of question and passage embeddings)."""
    q = {r["question_id"]: r for r in questions.select("question_id", "question", "answers").iter_rows(named=True)}
    pairs = corpus.select("question_id", "text")
    overlaps, contained = [], []
    for r in pairs.iter_rows(named=True):
        question = q[r["question_id"]]
        overlaps.append(lexical_overlap(question["question"], r["text"]))
        contained.append(any(contains_phrase(r["text"], a) for a in question["answers"]))
    semantic = []
    for qid, group in pairs.group_by("question_id", maintain_order=True):
        vecs = encode([q[qid[0]]["question"]] + group["text"].to_list())
        semantic.extend((vecs[1:] @ vecs[0]).tolist())
    answers = [a for r in q.values() for a in r["answers"][:1]]

    def avg(values) -> float:
        return float(np.mean(values)) if len(values) else 0.0

    rows = [
        ("Total Questions", questions.height),
        ("Total Passages", corpus.height),
        ("Avg. Question Length (words)", avg([word_count(r["question"]) for r in q.values()])),
        ("Avg. Passage Length (words)", avg([word_count(t) for t in corpus["text"]])),
        ("Avg. Answer Length (words)", avg([word_count(a) for a in answers])),
        ("Query-Passage Lexical Overlap", avg(overlaps)),
        ("Answer Containment", avg(contained)),
        ("Query-Passage Semantic Overlap", avg(semantic)),
        ("Label-2 Passages", int((qrels["label"] == 2).sum()) if qrels.height else 0),
        ("Label-1 Passages", int((qrels["label"] == 1).sum()) if qrels.height else 0),
    ]
    return pl.DataFrame({"metric": [m for m, _ in rows], "value": [float(v) for _, v in rows]})


def hint_count_plot(corpus: pl.DataFrame, qrels: pl.DataFrame):
    """Share of label-2 passages by number of hints (the shape behind Figure 6)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    joined = corpus.select("passage_id", "num_hints").join(qrels.select("passage_id", "label"), on="passage_id")
    by = joined.group_by("num_hints").agg(pl.len().alias("n"), (pl.col("label") == 2).mean().alias("share")).sort("num_hints")
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.bar(by["num_hints"].to_list(), by["share"].to_list(), color="#4c72b0")
    ax.set_xlabel("hints in passage")
    ax.set_ylabel("share labeled 2")
    ax.set_title("Fully relevant passages by number of hints")
    return fig
