"""Document search for the construction steps that look things up (RECOR's hard-negative
mining, WikiProfile's search-grounded filter): one verb, ``search(path, queries, k)
-> {query: [(doc_id, text), ...]}``.

``kind: bm25`` (the default) searches a local collection indexed with Lucene at ``path``
(``StorageResource.index_path("search", name)``). ``kind: http`` asks a web search API instead: a GET to ``endpoint`` with
``q`` and ``num`` parameters (and ``key`` from the environment variable named by
``api_key_env``), answering JSON with an ``items`` list whose entries carry ``link`` or
``id`` and ``snippet`` or ``text`` -- the shape of Google's Custom Search JSON API.
"""

from __future__ import annotations

import json
import os
import urllib.parse
import urllib.request
from pathlib import Path

import dagster as dg
import polars as pl

from resources.lucene import BM25Searcher, build_index


class DocumentSearchResource(dg.ConfigurableResource):
    kind: str = "bm25"
    threads: int = 2
    endpoint: str = ""
    api_key_env: str = ""
    timeout: float = 30.0

    def index(self, path: str, docs: pl.DataFrame) -> int:
        """Make ``docs`` (``doc_id``, ``content``) searchable in a collection at ``path`` (a
        local folder the storage resource names; bm25 only: a web search API has its own)."""
        if self.kind != "bm25":
            return 0
        import shutil

        target = Path(path)
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        docs.select("doc_id", "content").write_parquet(target / "texts.parquet")
        return build_index(docs.select(pl.col("doc_id").alias("id"), pl.col("content").alias("contents")),
                           str(target / "lucene"), threads=self.threads)

    def search(self, path: str, queries: list[str], k: int) -> dict[str, list[tuple[str, str]]]:
        unique = list(dict.fromkeys(q for q in queries if q.strip()))
        if not unique:
            return {}
        if self.kind == "http":
            return {q: self._http(q, k) for q in unique}
        if self.kind != "bm25":
            raise ValueError(f"unknown search kind {self.kind!r} (bm25 or http)")
        target = Path(path)
        texts = dict(pl.read_parquet(target / "texts.parquet").iter_rows())
        qids = [str(i) for i in range(len(unique))]
        hits = BM25Searcher(str(target / "lucene"), threads=self.threads).batch_search(unique, qids, k)
        return {q: [(h.docid, texts[h.docid]) for h in hits[qid]] for q, qid in zip(unique, qids)}

    def _http(self, query: str, k: int) -> list[tuple[str, str]]:
        params = {"q": query, "num": k}
        if self.api_key_env:
            params["key"] = os.environ[self.api_key_env]
        url = f"{self.endpoint}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=self.timeout) as response:
            items = json.loads(response.read()).get("items") or []
        return [(str(i.get("link") or i.get("id")), str(i.get("snippet") or i.get("text") or "")) for i in items[:k]
                if (i.get("link") or i.get("id")) and (i.get("snippet") or i.get("text"))]
