"""Assembling the final benchmark and exporting it in the public release's format.

At the paper's size (2.4M passages) no step holds the corpus's texts twice: the corpus is cut
from the passages a batch at a time, and each release file is written as it is encoded."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

import polars as pl

from resources.storage import join, open_output, write_bytes

SPLITS = ("train", "dev", "test")
CORPUS_COLUMNS = ("passage_id", "question_id", "num_hints", "hint_order", "text")
# Passages encoded or copied at a time: about 45 MB of text at the papers' ~58 words a passage.
BATCH_ROWS = 100_000


def assemble(selected, splits, metadata, passages, labels, pools, rejects) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Questions (labeled, in a split, not removed by verification), their corpus and qrels,
    each one frame (the ``benchmark`` asset streams the corpus: :func:`corpus_batches`)."""
    questions = benchmark_questions(selected, splits, metadata, pools, rejects)
    corpus = pl.concat(list(corpus_batches(passages, in_corpus(passages, questions, labels))))
    return questions, corpus, benchmark_qrels(questions, labels)


def benchmark_questions(selected, splits, metadata, pools, rejects) -> pl.DataFrame:
    """The labeled questions of a split that verification did not remove, with their pools."""
    removed = rejects["question_id"].to_list() if rejects.height else []
    return (
        selected.join(splits.filter(pl.col("labeled") & pl.col("split").is_in(SPLITS)), on="question_id")
        .filter(~pl.col("question_id").is_in(removed))
        .join(pools.select("question_id", pl.col("answer_pool").alias("answers")), on="question_id")
        .join(metadata.select("question_id", "question_type", "difficulty", "reference_complexity"), on="question_id", how="left")
        .select("question_id", "split", "question", "answer", "answers", "hints", "hint_convergence",
                "question_type", "difficulty", "reference_complexity", "source", "source_id", "parametric_answerable")
        .sort("split", "question_id")
    )


def in_corpus(passages: pl.DataFrame, questions: pl.DataFrame, labels: pl.DataFrame) -> pl.Series:
    """Which passages are in the corpus: the labeled passages of the benchmark's questions. A
    run that labels a slice of each question's passages must not leave the rest in the
    corpus, where they would read as irrelevant (label 0)."""
    return passages.select(
        pl.col("question_id").is_in(questions["question_id"]) & pl.col("passage_id").is_in(labels["passage_id"])).to_series()


def corpus_batches(passages: pl.DataFrame, keep: pl.Series, batch_rows: int = BATCH_ROWS) -> Iterator[pl.DataFrame]:
    """The corpus in passage order, cut from ``batch_rows`` passages at a time, so that only
    one batch's texts are copied; one empty frame when no passage is kept."""
    table = passages.select(CORPUS_COLUMNS)
    empty = True
    for start in range(0, table.height, batch_rows):
        batch = table.slice(start, batch_rows).filter(keep.slice(start, batch_rows))
        if batch.height:
            empty = False
            yield batch
    if empty:
        yield table.clear()


def benchmark_qrels(questions: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """The labels of the benchmark's questions, by question and passage."""
    return labels.filter(pl.col("question_id").is_in(questions["question_id"])).select("question_id", "passage_id", "label").sort(
        "question_id", "passage_id")


def question_record(row: dict) -> dict:
    return {
        "id": row["question_id"],
        "question": row["question"],
        "answers": row["answers"],
        "hints": [{"hint": h, "convergence": c} for h, c in zip(row["hints"], row["hint_convergence"])],
        "question_type": row["question_type"],
        "difficulty": row["difficulty"],
        "source": row["source"],
    }


def export(questions: pl.DataFrame, corpus: pl.DataFrame, qrels: pl.DataFrame, target: str,
           batch_rows: int = BATCH_ROWS) -> pl.DataFrame:
    """Writes corpus.jsonl, {train,dev,test}.json and qrels.{split}.txt under ``target``
    (a local folder or an s3:// prefix); returns a manifest of what was written. The corpus
    and the qrels are written ``batch_rows`` lines at a time."""
    files = [("corpus.jsonl", _write_lines(join(target, "corpus.jsonl"), _corpus_lines(corpus, batch_rows)))]
    for split in SPLITS:
        part = questions.filter(pl.col("split") == split)
        records = [question_record(r) for r in part.iter_rows(named=True)]
        write_bytes(join(target, f"{split}.json"), json.dumps(records, ensure_ascii=False, indent=1).encode())
        files.append((f"{split}.json", len(records)))
        split_qrels = qrels.filter(pl.col("question_id").is_in(part["question_id"]))
        files.append((f"qrels.{split}.txt", _write_lines(join(target, f"qrels.{split}.txt"), _qrel_lines(split_qrels, batch_rows))))
    return pl.DataFrame({"file": [f for f, _ in files], "records": [n for _, n in files],
                         "path": [join(target, f) for f, _ in files]})


def _corpus_lines(corpus: pl.DataFrame, batch_rows: int) -> Iterator[list[str]]:
    """The release's corpus records, one JSON object a line (``json.dumps``'s spacing)."""
    for batch in corpus.iter_slices(batch_rows):
        yield [json.dumps({"id": p, "contents": t, "title": q}, ensure_ascii=False)
               for p, t, q in zip(batch["passage_id"].to_list(), batch["text"].to_list(), batch["question_id"].to_list())]


def _qrel_lines(qrels: pl.DataFrame, batch_rows: int) -> Iterator[list[str]]:
    """TREC qrels lines: ``<question_id> 0 <passage_id> <label>``."""
    for batch in qrels.iter_slices(batch_rows):
        yield batch.select(pl.format("{} 0 {} {}", "question_id", "passage_id", "label")).to_series().to_list()


def _write_lines(uri: str, batches: Iterable[list[str]]) -> int:
    """Writes each line with its newline, a batch at a time; returns the line count."""
    written = 0
    with open_output(uri) as f:
        for lines in batches:
            if lines:
                f.write(("\n".join(lines) + "\n").encode())
                written += len(lines)
    return written
