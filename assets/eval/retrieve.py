"""Indexing and searching one corpus with one registered retriever, shared by every
benchmark's evaluation: a Lucene index for BM25, a FAISS index of the retriever's passage
embeddings for dense retrievers, both kept under the storage root by corpus name."""

from __future__ import annotations

import polars as pl

from resources.lucene import Hit
from resources.retrieval import RetrieverSpec, dense_search, encode_corpus
from resources.storage import join, read_parquet, storage_root, write_parquet


def index_uri(corpus: str, alias: str) -> str:
    return join(storage_root(), "eval", "indexes", corpus, f"{alias}.faiss")


def ids_uri(corpus: str, alias: str) -> str:
    return join(storage_root(), "eval", "indexes", corpus, f"{alias}.ids.parquet")


def build(spec: RetrieverSpec, corpus: str, docs: pl.DataFrame, lucene, faiss_index) -> tuple[int, str]:
    """Index ``docs`` (``id``, ``contents``) as ``corpus`` for one retriever; returns the
    document count and where the index is."""
    if spec.kind == "bm25":
        n = lucene.build(f"{corpus}_{spec.alias}", docs)
        return n, lucene.index_dir(f"{corpus}_{spec.alias}")
    vectors = encode_corpus(spec, docs["contents"].to_list())
    faiss_index.save(faiss_index.build(vectors), index_uri(corpus, spec.alias))
    write_parquet(ids_uri(corpus, spec.alias), docs.select("id"))
    return len(vectors), index_uri(corpus, spec.alias)


def search(spec: RetrieverSpec, corpus: str, queries: list[str], qids: list[str], k: int, lucene,
           faiss_index) -> dict[str, list[Hit]]:
    """Top-k hits per query id from the index ``build`` made."""
    if spec.kind == "bm25":
        return lucene.searcher(f"{corpus}_{spec.alias}", spec.k1, spec.b).batch_search(queries, qids, k)
    doc_ids = read_parquet(ids_uri(corpus, spec.alias))["id"].to_list()
    return dense_search(spec, faiss_index, faiss_index.load(index_uri(corpus, spec.alias)), doc_ids, queries, qids, k)
