"""Indexing and searching one corpus with one registered retriever, shared by every
benchmark's evaluation: a Lucene index for BM25, a FAISS index of the retriever's passage
embeddings for dense retrievers, both where the storage resource keeps indexes, by corpus name."""

from __future__ import annotations

import polars as pl

from resources.lucene import Hit
from resources.retrieval import RetrieverSpec, dense_search, encode_corpus
from resources.storage import StorageResource, read_parquet, write_parquet


def index_uri(storage: StorageResource, corpus: str, spec: RetrieverSpec) -> str:
    if spec.kind == "bm25":
        return storage.index_path("lucene", f"{corpus}_{spec.alias}")
    return storage.index_path("faiss", corpus, f"{spec.alias}.faiss")


def ids_uri(storage: StorageResource, corpus: str, alias: str) -> str:
    return storage.index_path("faiss", corpus, f"{alias}.ids.parquet")


def build(spec: RetrieverSpec, corpus: str, docs: pl.DataFrame, lucene, faiss_index, storage: StorageResource) -> tuple[int, str]:
    """Index ``docs`` (``id``, ``contents``) as ``corpus`` for one retriever; returns the
    document count and where the index is."""
    where = index_uri(storage, corpus, spec)
    if spec.kind == "bm25":
        return lucene.build(where, docs), where
    vectors = encode_corpus(spec, docs["contents"].to_list())
    faiss_index.save(faiss_index.build(vectors), where)
    write_parquet(ids_uri(storage, corpus, spec.alias), docs.select("id"))
    return len(vectors), where


def search(spec: RetrieverSpec, corpus: str, queries: list[str], qids: list[str], k: int, lucene,
           faiss_index, storage: StorageResource) -> dict[str, list[Hit]]:
    """Top-k hits per query id from the index ``build`` made."""
    where = index_uri(storage, corpus, spec)
    if spec.kind == "bm25":
        return lucene.searcher(where, spec.k1, spec.b).batch_search(queries, qids, k)
    doc_ids = read_parquet(ids_uri(storage, corpus, spec.alias))["id"].to_list()
    return dense_search(spec, faiss_index, faiss_index.load(where), doc_ids, queries, qids, k)
