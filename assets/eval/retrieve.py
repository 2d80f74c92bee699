"""Indexing and searching one corpus with one registered retriever, shared by every
benchmark's evaluation: a Lucene index for BM25, a FAISS index of the retriever's passage
embeddings for dense retrievers, every passage's token vectors for a multi-vector (ColBERT-style)
retriever, all where the storage resource keeps indexes, by corpus name.

A retriever the project does not run (kind ``run`` or ``entrypoint``) is "indexed" by
keeping the corpus it is evaluated on beside the other indexes: its ids, which a run file's
documents must be among, and for an entry point the texts it is handed at search time."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from resources import multi_vector
from resources.lucene import Hit
from resources.retrieval import (
    ENTRYPOINT,
    EXTERNAL_KINDS,
    MULTI_VECTOR,
    RUN,
    RetrieverSpec,
    RunFiles,
    dense_search,
    encode_corpus,
    entrypoint_search,
    read_run_files,
)
from resources.storage import StorageResource, read_parquet, write_parquet


def index_uri(storage: StorageResource, corpus: str, spec: RetrieverSpec) -> str:
    if spec.kind == "bm25":
        return storage.index_path("lucene", f"{corpus}_{spec.alias}")
    if spec.kind in EXTERNAL_KINDS:
        return storage.index_path(spec.kind, corpus, f"{spec.alias}.parquet")
    if spec.kind == MULTI_VECTOR:
        return storage.index_path(MULTI_VECTOR, corpus, f"{spec.alias}.npz")
    return storage.index_path("faiss", corpus, f"{spec.alias}.faiss")


def ids_uri(storage: StorageResource, corpus: str, alias: str) -> str:
    return storage.index_path("faiss", corpus, f"{alias}.ids.parquet")


def build(
    spec: RetrieverSpec, corpus: str, docs: pl.DataFrame, lucene, faiss_index, storage: StorageResource, log=None
) -> tuple[int, str]:
    """Index ``docs`` (``id``, ``contents``) as ``corpus`` for one retriever; returns the
    document count and where the index is. A dense retriever's vectors stream from the
    encoder into the index block by block, ``log`` hearing the progress."""
    where = index_uri(storage, corpus, spec)
    if spec.kind == "bm25":
        return lucene.build(where, docs), where
    if spec.kind in EXTERNAL_KINDS:
        write_parquet(where, docs.select("id", "contents") if spec.kind == ENTRYPOINT else docs.select("id"))
        return docs.height, where
    if spec.kind == MULTI_VECTOR:
        multi_vector.TokenIndex.build(spec.encoder, docs["id"].to_list(), docs["contents"].to_list()).save(where)
        return docs.height, where
    index = faiss_index.build_blocks(encode_corpus(spec, docs["contents"], log))
    faiss_index.save(index, where)
    write_parquet(ids_uri(storage, corpus, spec.alias), docs.select("id"))
    return index.ntotal, where


def search(
    spec: RetrieverSpec,
    corpus: str,
    queries: list[str],
    qids: list[str],
    k: int,
    lucene,
    faiss_index,
    storage: StorageResource,
) -> dict[str, list[Hit]]:
    """Top-k hits per query id from the index ``build`` made (an entry point: its function
    called on the queries and the kept corpus; a multi-vector retriever: exhaustive MaxSim over
    the saved token vectors). Run files are read by :func:`from_run_files`."""
    where = index_uri(storage, corpus, spec)
    if spec.kind == "bm25":
        return lucene.searcher(where, spec.k1, spec.b).batch_search(queries, qids, k)
    if spec.kind == ENTRYPOINT:
        docs = read_parquet(where)
        return entrypoint_search(spec, dict(zip(qids, queries)), dict(docs.select("id", "contents").iter_rows()), k)
    if spec.kind == RUN:
        raise ValueError(f"retriever {spec.alias!r} ranks from run files: read them with from_run_files")
    if spec.kind == MULTI_VECTOR:
        return multi_vector.search(spec.encoder, multi_vector.TokenIndex.load(where), queries, qids, k)
    doc_ids = read_parquet(ids_uri(storage, corpus, spec.alias))["id"].to_list()
    return dense_search(spec, faiss_index, faiss_index.load(where), doc_ids, queries, qids, k)


def from_run_files(
    spec: RetrieverSpec,
    benchmark: str,
    corpus: str,
    parts: dict[str, list[str]],
    k: int,
    storage: StorageResource,
    query_id: Callable[[str], str] | None = None,
    lenient: bool = False,
) -> RunFiles:
    """The top-k hits of every query in ``parts`` (a QUIT split or RECOR domain -> query
    ids) from the retriever's run files, their documents checked against the corpus
    ``build`` kept. ``query_id`` and ``lenient`` are the benchmark's reading of a file
    (:func:`resources.retrieval.read_run_files`): RECOR's evaluation reads its files as
    RETECO Track 2 reads a run, a repeated document removed after its first line and one
    outside the corpus discarded, both counted; QUIT's may hold neither."""
    documents = set(read_parquet(index_uri(storage, corpus, spec))["id"].to_list())
    return read_run_files(spec, benchmark, parts, k, documents, query_id=query_id, lenient=lenient)
