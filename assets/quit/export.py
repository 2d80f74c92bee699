"""The built QUIT benchmark for sharing (:mod:`assets.common.sharing`): its questions,
corpus and qrels as a Hugging Face dataset and Croissant, and as one BEIR folder.

Hugging Face configurations follow MTEB's retrieval datasets: ``questions`` (a split per
question split), ``corpus`` (one split, ``corpus``) and ``qrels`` (a split per question split,
the graded labels 2/1). The BEIR folder's ``title`` is empty: the release's corpus titles a
passage with its question's id, which would tell a retriever which question a passage
belongs to; ``queries.jsonl`` holds every question, ``qrels/<split>.tsv`` the graded labels of
the split's questions."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from assets.common.sharing import About, BeirTables, Build, BuildRecord, Share, build_card
from assets.quit.release import CORPUS_COLUMNS, SPLITS
from resources.storage import StoredTable, as_table

PREFIX = "quit"
VERSION = "1.0.0"
LICENSE = "cc-by-4.0"
# The paper's text names its title and dataset only (no authors, year or venue): the entry
# says what it gives, so no reader takes a guess for the record.
CITATION = """@misc{quit,
  title = {Inferential Question Answering},
  note = {The QUIT dataset (QUestions requiring Inference from Texts); authors, year and venue as the published paper gives them}
}"""
SUMMARY = (
    "QUIT (QUestions requiring Inference from Texts), built by benchfoundry following the paper "
    "*Inferential Question Answering*: questions whose passages, concatenated from hints, support the "
    "answer without containing it. Every passage is labeled 2 (the answer can be inferred), 1 (it points "
    "to the answer without enough to infer it) or 0 (implicit: any other passage). Configurations: "
    "`questions` (per split), `corpus`, `qrels` (per split)."
)
ABOUT = About(
    "QUIT (benchfoundry build)",
    SUMMARY,
    CITATION,
    LICENSE,
    ("question-answering", "text-retrieval"),
    ("inferential-qa", "retrieval", "benchfoundry"),
)
DESCRIPTIONS = {
    "questions": "The benchmark's questions with their answer pool, hints, type, difficulty and source.",
    "corpus": "The passages: hint permutations of the benchmark's questions.",
    "qrels": "Graded labels: 2 (answer inferable) and 1 (partially relevant) per question and passage.",
}
# The build's stages whose row counts the card's funnel gives, in build order.
FUNNEL = (
    ("questions read", "quit/source_questions"),
    ("after the leakage screen", "quit/screened_questions"),
    ("selected (hint convergence)", "quit/selected_questions"),
    ("passages generated", "quit/passages"),
    ("benchmark questions", "quit/benchmark_questions"),
    ("benchmark passages", "quit/benchmark_corpus"),
    ("graded qrels", "quit/benchmark_qrels"),
)
# The built tables (the card names the run of the first), the steps before them, the build's roles.
BUILD = Build(
    PREFIX,
    (
        "benchmark_questions",
        "benchmark_corpus",
        "benchmark_qrels",
        "source_questions",
        "screened_questions",
        "selected_questions",
        "question_metadata",
        "passages",
        "verified_labels",
    ),
    ("labelers", "judge"),
)


def share(
    questions: pl.DataFrame,
    corpus: pl.DataFrame | StoredTable,
    qrels: pl.DataFrame,
    record: BuildRecord,
    models: Mapping[str, str],
    sizes: Mapping[str, int | str],
) -> Share:
    """What QUIT's export writes, from the built ``quit/benchmark_*`` tables and the build's
    record. The corpus is read a batch at a time, once per format."""
    table = as_table(corpus)
    splits = [s for s in SPLITS if s in set(questions["split"])]
    of_split = {s: questions.filter(pl.col("split") == s) for s in splits}
    split_qrels = {s: qrels.filter(pl.col("question_id").is_in(of_split[s]["question_id"])) for s in splits}
    card = build_card(
        ABOUT,
        record,
        models,
        {
            "questions": questions.height,
            **{f"{s} questions": of_split[s].height for s in splits},
            "passages": table.height,
            "graded qrels": qrels.height,
            **sizes,
        },
        FUNNEL,
    )
    beir = BeirTables(
        corpus=(
            b.select(pl.col("passage_id").alias("_id"), pl.lit("").alias("title"), "text")
            for b in table.batches("passage_id", "text")
        ),
        queries=questions.select(
            pl.col("question_id").alias("_id"), pl.col("question").alias("text"), pl.struct("split").alias("metadata")
        ),
        qrels={
            s: q.select(
                pl.col("question_id").alias("query-id"),
                pl.col("passage_id").alias("corpus-id"),
                pl.col("label").cast(pl.Int64).alias("score"),
            )
            for s, q in split_qrels.items()
        },
    )
    return Share(
        configs={"questions": of_split, "corpus": {"corpus": table.batches(*CORPUS_COLUMNS)}, "qrels": split_qrels},
        descriptions=DESCRIPTIONS,
        card=card,
        name="quit",
        url="https://huggingface.co/datasets",
        version=VERSION,
        beir={"": beir},
    )
