"""QUIT's fine-tuning data (paper section 5.2, issue 18): the (question, positive, negative)
pairs of the train split that the fine-tuned retrievers and reranker are trained on, drawn by
the rule of :mod:`assets.eval.finetune_rules` from the benchmark as the evaluation reads it
(built or released)."""

from __future__ import annotations

import dagster as dg
import polars as pl

from assets.common.metadata import counts_md, table_metadata
from assets.common.wiring import Wiring
from assets.eval import finetune_rules as rules
from assets.quit.settings import FinetuneSettings
from resources.lucene import LuceneResource
from resources.storage import StorageResource

PREFIX = GROUP = "eval"
wiring = Wiring(PREFIX, GROUP)
# The Lucene index of the train passages, beside the evaluation's indexes.
INDEX = "quit_finetune_train"
PREVIEW = ("question", "pair", "positive_label", "positive", "negative_source", "negative_rank", "negative")


def bm25_hits(lucene: LuceneResource, where: str, train: pl.DataFrame, passages: pl.DataFrame, depth: int) -> dict[str, list[str]]:
    """Each train question's BM25 hits over the train passages (indexed at ``where``), best
    first. A question's own passages are written from its hints and fill the head of its
    list, so each is searched ``depth`` hits past the most passages any one question has:
    ``depth`` hits of other questions remain to draw hard negatives from."""
    lucene.build(where, passages.select(pl.col("passage_id").alias("id"), pl.col("text").alias("contents")))
    own = passages.group_by("question_id").len()["len"].max()
    found = lucene.searcher(where).batch_search(train["question"].to_list(), train["question_id"].to_list(), depth + own)
    return {qid: [hit.docid for hit in hits] for qid, hits in found.items()}


def _counts(frame: pl.DataFrame, column: str) -> dg.MetadataValue:
    return counts_md(dict(frame.group_by(column).len().sort(column).iter_rows()), column)


@dg.multi_asset(name="eval_quit_finetune_data", group_name=GROUP, outs={
    "quit_finetune_data": wiring.out("QUIT's fine-tuning data: one row per (positive, negative) pair of a train question.",
                                     {"polars", "lucene"}),
    "quit_finetune_rejects": wiring.out("Train questions without a positive or a negative, with the reason.", {"polars"}),
}, ins={"quit_questions": wiring.input("quit_questions"), "quit_corpus": wiring.input("quit_corpus"),
        "quit_qrels": wiring.input("quit_qrels")}, code_version="1")
def quit_finetune_data(quit_questions: pl.DataFrame, quit_corpus: pl.DataFrame, quit_qrels: pl.DataFrame,
                       finetune_settings: FinetuneSettings, lucene: LuceneResource, storage: StorageResource):
    """The training data of QUIT's fine-tuned models, one row per (positive, negative) pair
    of a train question: its label-2 passages, then its label-1 passages (a weaker positive,
    never a negative), in a seeded order, as many as the largest count of ``positives``; each
    paired with a hard negative, a passage of another train question that BM25 ranks high for
    it (Lucene over the train passages), or under ``negatives: random`` a random passage of a
    random other train question, as the authors' scripts draw them. Only train passages are ever
    trained on. Dense and late-interaction trainers read ``(question, positive, negative)``,
    the cross-encoder a positive and a negative row per pair; a model of count n reads each
    question's first n pairs, so one table serves every count of the sweep."""
    s = finetune_settings
    train = quit_questions.filter(pl.col("split") == rules.TRAIN)
    passages = rules.train_passages(quit_questions, quit_corpus)
    hits, index = {}, {}
    if s.negatives == rules.BM25 and passages.height:
        where = storage.index_path("lucene", INDEX)
        hits, index = bm25_hits(lucene, where, train, passages, s.bm25_depth), {"bm25_index": dg.MetadataValue.path(where)}
    pairs, rejects = rules.training_pairs(quit_questions, quit_corpus, quit_qrels, hits,
                                          positives=max(s.positives), negatives=s.negatives, seed=s.seed)
    yield dg.Output(pairs, output_name="quit_finetune_data", metadata={
        **table_metadata(pairs.select(list(PREVIEW))),
        "train_questions": train.height, "questions": pairs["question_id"].n_unique(), "rejected": len(rejects),
        "train_passages": passages.height, "pairs": pairs.height,
        "by_label": _counts(pairs, "positive_label"), "by_negative_source": _counts(pairs, "negative_source"),
        "positives": max(s.positives), "positive_counts": ", ".join(map(str, s.positives)),
        "negatives": s.negatives, "bm25_depth": s.bm25_depth, "seed": s.seed, **index,
    })
    yield wiring.rejects("quit_finetune_rejects", rules.REJECTS, rejects)


finetune_data_assets = [quit_finetune_data]
