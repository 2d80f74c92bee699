"""Dense retrieval on FAISS: a retriever's encoder turns queries and passages into vectors."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from resources.encoders import encode_blocks, encode_texts
from resources.lucene import Hit
from resources.retrieval.registry import RetrieverSpec


def dense_search(
    spec: RetrieverSpec, faiss_resource, index, doc_ids: list[str], queries: list[str], qids: list[str], k: int
) -> dict[str, list[Hit]]:
    """Encode the queries with the retriever's encoder and search its FAISS index."""
    vecs = encode_texts(spec.encoder, queries, "query", spec.batch_size, query_prefix=spec.query_prefix)
    scores, ids = faiss_resource.search(index, vecs, k)
    out = {}
    for qid, row_scores, row_ids in zip(qids, scores, ids):
        hits = [(int(i), float(s)) for i, s in zip(row_ids, row_scores) if i >= 0]
        out[qid] = [Hit(doc_ids[i], s, r + 1) for r, (i, s) in enumerate(hits)]
    return out


def encode_corpus(spec: RetrieverSpec, texts: Iterable[str], log=None) -> Iterator[np.ndarray]:
    """The retriever's passage vectors of ``texts``, block by block, for an index to take in
    as they come (``log`` hears the progress)."""
    return encode_blocks(spec.encoder, texts, "passage", spec.batch_size, passage_prefix=spec.passage_prefix, log=log)
