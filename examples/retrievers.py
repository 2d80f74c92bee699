"""A TF-IDF retriever as an entry point: ``examples.retrievers:tfidf``.

The contract (see ``resources/retrievers.yaml``): ``f(queries, corpus, k)`` gets
``{qid: query text}``, ``{doc_id: document text}`` and the depth, and returns
``{qid: [(doc_id, score), ...]}`` best first, at most ``k`` per query. It is handed the
whole corpus on every call, so it keeps the last index it built, keyed by the corpus
contents, and RECOR's seven query strategies over one domain fit the vectorizer once.
"""

from __future__ import annotations

import numpy as np

# Queries scored against the whole corpus at a time: a dense block of this many rows by the
# corpus size stays small even for QUIT's 2.4 million passages (16 x 2.4M floats, ~300 MB).
BATCH = 16

_index: dict = {}


def _fitted(corpus: dict[str, str]):
    """``(doc ids, vectorizer, document matrix)`` for ``corpus``, rebuilt only when it changes."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    key = hash(tuple(corpus.items()))
    if _index.get("key") != key:
        ids = list(corpus)
        # English stop words out and sublinear term frequency: a repeated common word should
        # not outweigh a rare one the query shares with the document.
        vectorizer = TfidfVectorizer(stop_words="english", sublinear_tf=True)
        matrix = vectorizer.fit_transform([corpus[i] for i in ids])
        _index.clear()
        _index.update(key=key, ids=np.array(ids, dtype=object), vectorizer=vectorizer, matrix=matrix)
    return _index["ids"], _index["vectorizer"], _index["matrix"]


def tfidf(queries: dict[str, str], corpus: dict[str, str], k: int) -> dict[str, list[tuple[str, float]]]:
    """Cosine similarity of TF-IDF vectors (the vectorizer L2-normalizes every row, so a dot
    product is the cosine). Only documents sharing a term with the query are returned; equal
    scores are ordered by doc id descending, as trec_eval orders a run file, so the TREC file
    of these results ranks them the same way."""
    ids, vectorizer, matrix = _fitted(corpus)
    qids = list(queries)
    out: dict[str, list[tuple[str, float]]] = {}
    for start in range(0, len(qids), BATCH):
        batch = qids[start : start + BATCH]
        scores = (vectorizer.transform([queries[q] for q in batch]) @ matrix.T).toarray()
        for qid, row in zip(batch, scores):
            matched = np.flatnonzero(row > 0)
            if len(matched) > k:
                # Everything scoring at least the k-th best score, ties at the cut included,
                # so the tie rule below decides which of them make the list.
                kth = np.partition(row[matched], len(matched) - k)[len(matched) - k]
                matched = matched[row[matched] >= kth]
            order = sorted(matched, key=lambda i: (row[i], ids[i]), reverse=True)[:k]
            out[qid] = [(str(ids[i]), float(row[i])) for i in order]
    return out
