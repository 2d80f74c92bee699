"""The checks of the evaluation on registered BEIR-layout datasets (issue 47): each passes on
a sound table and fails, naming the problem, on a broken copy."""

import polars as pl

from assets.common.formats import beir as layout
from assets.eval.beir import assets as beir
from assets.eval.beir.rules import BEIR_METRICS
from checks.eval import beir as cb
from tests.checks.test_eval_checks import fails, run, swap

CORPUS = pl.DataFrame(
    {
        "dataset": ["tiny"] * 3,
        "passage_id": ["d1", "d2", "d3"],
        "title": ["A", "B", None],
        "text": ["a", "b", "c"],
        "metadata": [None, None, None],
    },
    schema=beir.CORPUS_SCHEMA,
)
QUERIES = pl.DataFrame(
    {"dataset": ["tiny"] * 2, "question_id": ["q1", "q2"], "query": ["a?", "b?"], "metadata": [None, None]},
    schema=beir.QUERIES_SCHEMA,
)
QRELS = pl.DataFrame(
    {"dataset": ["tiny"] * 3, "question_id": ["q1", "q2", "q2"], "passage_id": ["d1", "d2", "d3"], "label": [1, 2, 1]},
    schema=beir.QRELS_SCHEMA,
)
RUN = run("bm25", {"q1": ["d1", "d2", "d3"], "q2": ["d2", "d3"]}, dataset="tiny")


def test_the_dataset_as_read():
    assert cb.beir_corpus_schema(CORPUS).passed and cb.beir_queries_schema(QUERIES).passed
    assert fails(cb.beir_corpus_schema(swap(CORPUS, "passage_id", 1, "d1")), "repeated passage_id")
    assert fails(cb.beir_queries_schema(swap(QUERIES, "query", 0, None)), "'query' has 1 nulls")
    assert cb.beir_qrels_references(QRELS, QUERIES, CORPUS).passed
    for broken, queries, words in [
        (swap(QRELS, "passage_id", 0, "d9"), QUERIES, "document ids not in eval/beir_corpus"),
        (swap(QRELS, "question_id", 0, "q9"), QUERIES, "query ids not in eval/beir_queries"),
        (QRELS.filter(pl.col("question_id") == "q2"), QUERIES, "queries without a judgment"),
        (swap(QRELS, "passage_id", 2, "d2"), QUERIES, "repeated question_id+passage_id"),
        (QRELS.clear(), QUERIES.clear(), "no judgment"),
    ]:
        assert fails(cb.beir_qrels_references(broken, queries, CORPUS), words), words


def test_the_rejects_name_the_readers_reasons():
    rejects = layout.REJECTS.frame([layout.REJECTS.row("corpus.jsonl", 3, "beir", "duplicate_id", "d2 again", None)])
    assert cb.beir_source_rejects_reasons(rejects).passed
    assert not cb.beir_source_rejects_reasons(swap(rejects, "reason", 0, "too_long")).passed


def test_a_run_ranks_known_queries_and_documents_of_one_dataset():
    assert cb.beir_runs_ranks(RUN).passed
    assert cb.beir_runs_references(RUN, QUERIES, CORPUS).passed and cb.beir_runs_coverage(RUN, QUERIES).passed
    assert fails(cb.beir_runs_ranks(swap(RUN, "rank", 1, 3)), "repeated question_id+rank")
    assert fails(cb.beir_runs_ranks(swap(RUN, "dataset", 0, "other")), "2 datasets in one partition's run")
    assert fails(cb.beir_runs_ranks(swap(RUN, "system", 0, "bm99")), "bm99")
    assert fails(cb.beir_runs_references(swap(RUN, "passage_id", 0, "d9"), QUERIES, CORPUS), "document ids not in")
    uncovered = cb.beir_runs_coverage(RUN.filter(pl.col("question_id") == "q1"), QUERIES)
    assert fails(uncovered, "judged queries without a document") and uncovered.severity.value == "WARN"


def test_a_reranked_run_reorders_the_retrieved_documents_only():
    reranked = pl.concat(
        [
            run("bm25+rankgpt", {"q1": ["d2", "d1", "d3"], "q2": ["d3", "d2"]}, dataset="tiny"),
            run("bm25+pointwise", {"q1": ["d1", "d3", "d2"], "q2": ["d2", "d3"]}, dataset="tiny"),
        ]
    )
    assert cb.beir_reranked_runs_ranks(reranked).passed
    assert cb.beir_reranked_same_passages(reranked, RUN).passed
    lost = reranked.filter(~((pl.col("system") == "bm25+rankgpt") & (pl.col("passage_id") == "d3")))
    result = cb.beir_reranked_same_passages(lost, RUN)
    assert fails(result, "bm25+rankgpt: 2 rows retrieved but missing from the reranked run")
    assert fails(cb.beir_reranked_runs_ranks(swap(reranked, "system", 0, "bm25+nobody")), "bm25+nobody")


def metric_row(**labels) -> dict:
    return {"dataset": "tiny", **labels, "queries": 2, **{m: 0.5 for m in BEIR_METRICS}}


def test_the_metric_tables():
    retrieval = pl.DataFrame([metric_row(retriever="bm25")]).cast({"queries": pl.Int64})
    assert cb.beir_retrieval_metrics_ranges(retrieval).passed
    assert fails(cb.beir_retrieval_metrics_ranges(swap(retrieval, "ndcg@10", 0, 1.5)), "ndcg@10")
    assert fails(cb.beir_retrieval_metrics_ranges(swap(retrieval, "retriever", 0, "oracle")), "of the Oracle")
    assert fails(cb.beir_retrieval_metrics_ranges(swap(retrieval, "recall@10", 0, 0.9)), "recall@10 above recall@100")
    assert fails(cb.beir_retrieval_metrics_ranges(retrieval.drop("mrr@10")), "'mrr@10' is missing")
    rerank = pl.DataFrame(
        [
            metric_row(system="bm25+rankgpt", retriever="bm25", reranker="rankgpt", oracle=False),
            metric_row(system="oracle+rankgpt", retriever="oracle", reranker="rankgpt", oracle=True),
        ]
    ).cast({"queries": pl.Int64})
    assert cb.beir_rerank_metrics_ranges(rerank).passed
    assert fails(cb.beir_rerank_metrics_ranges(swap(rerank, "oracle", 1, False)), "Oracle flag wrong")
    assert fails(cb.beir_rerank_metrics_ranges(swap(rerank, "reranker", 0, "upr")), "not retriever+reranker")
