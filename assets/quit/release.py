"""Assembling the final benchmark and exporting it in the public release's format."""

from __future__ import annotations

import json

import polars as pl

from resources.storage import join, write_bytes

SPLITS = ("train", "dev", "test")


def assemble(selected, splits, metadata, passages, labels, pools, rejects) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Questions (labeled, in a split, not removed by verification), their corpus and qrels."""
    removed = rejects["question_id"].to_list() if rejects.height else []
    questions = (
        selected.join(splits.filter(pl.col("labeled") & pl.col("split").is_in(SPLITS)), on="question_id")
        .filter(~pl.col("question_id").is_in(removed))
        .join(pools.select("question_id", pl.col("answer_pool").alias("answers")), on="question_id")
        .join(metadata.select("question_id", "question_type", "difficulty", "reference_complexity"), on="question_id", how="left")
        .select("question_id", "split", "question", "answer", "answers", "hints", "hint_convergence",
                "question_type", "difficulty", "reference_complexity", "source", "source_id", "parametric_answerable")
        .sort("split", "question_id")
    )
    keep = questions["question_id"]
    # Only labeled passages: a run that labels a slice of each question's passages must not
    # leave the rest in the corpus, where they would read as irrelevant (label 0).
    corpus = passages.filter(pl.col("question_id").is_in(keep) & pl.col("passage_id").is_in(labels["passage_id"])).select(
        "passage_id", "question_id", "num_hints", "hint_order", "text")
    qrels = labels.filter(pl.col("question_id").is_in(keep)).select("question_id", "passage_id", "label").sort("question_id", "passage_id")
    return questions, corpus, qrels


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


def export(questions: pl.DataFrame, corpus: pl.DataFrame, qrels: pl.DataFrame, target: str) -> pl.DataFrame:
    """Writes corpus.jsonl, {train,dev,test}.json and qrels.{split}.txt under ``target``
    (a local folder or an s3:// prefix); returns a manifest of what was written."""
    files = []
    lines = (json.dumps({"id": r["passage_id"], "contents": r["text"], "title": r["question_id"]}, ensure_ascii=False)
             for r in corpus.iter_rows(named=True))
    body = ("\n".join(lines) + "\n").encode()
    write_bytes(join(target, "corpus.jsonl"), body)
    files.append(("corpus.jsonl", corpus.height))
    split_of = dict(questions.select("question_id", "split").iter_rows())
    for split in SPLITS:
        part = questions.filter(pl.col("split") == split)
        records = [question_record(r) for r in part.iter_rows(named=True)]
        write_bytes(join(target, f"{split}.json"), json.dumps(records, ensure_ascii=False, indent=1).encode())
        files.append((f"{split}.json", len(records)))
        rows = [f"{r['question_id']} 0 {r['passage_id']} {r['label']}" for r in qrels.iter_rows(named=True)
                if split_of.get(r["question_id"]) == split]
        write_bytes(join(target, f"qrels.{split}.txt"), ("\n".join(rows) + ("\n" if rows else "")).encode())
        files.append((f"qrels.{split}.txt", len(rows)))
    return pl.DataFrame({"file": [f for f, _ in files], "records": [n for _, n in files],
                         "path": [join(target, f) for f, _ in files]})
