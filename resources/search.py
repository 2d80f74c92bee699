"""Document search for the construction steps that look things up (RECOR's hard-negative
mining, WikiProfile's search-grounded filter), with pyserini's API: ``searcher(path)`` gives
``search(q, k)`` and ``batch_search(queries, qids, k)`` -> qid -> hits, each hit with its text.

``kind: bm25`` (the default) searches a local collection indexed with Lucene at ``path``
(``StorageResource.index_path("search", name)``). ``kind: http`` asks a web search API instead: a GET to ``endpoint`` with
``q`` and ``num`` parameters (and ``key`` from the environment variable named by
``api_key_env``), answering JSON with an ``items`` list whose entries carry ``link`` or
``id`` and ``snippet`` or ``text`` -- the shape of Google's Custom Search JSON API.
"""

from __future__ import annotations

import dataclasses
import json
import os
import urllib.parse
import urllib.request
from pathlib import Path

import dagster as dg
import polars as pl

from resources.lucene import BM25Searcher, Hit, build_index
from resources.redact import redact_chain


class DocumentSearcher:
    """A local collection's BM25 searcher whose hits carry their texts."""

    def __init__(self, path: str, threads: int):
        target = Path(path)
        self._texts = dict(pl.read_parquet(target / "texts.parquet").iter_rows())
        self._bm25 = BM25Searcher(str(target / "lucene"), threads=threads)

    def search(self, query: str, k: int) -> list[Hit]:
        return self.batch_search([query], ["q"], k)["q"]

    def batch_search(self, queries: list[str], qids: list[str], k: int) -> dict[str, list[Hit]]:
        hits = self._bm25.batch_search(queries, qids, k)
        return {qid: [dataclasses.replace(h, contents=self._texts[h.docid]) for h in hs] for qid, hs in hits.items()}


class WebSearcher:
    """A web search API with the same two verbs (one request per query)."""

    def __init__(self, endpoint: str, api_key_env: str, timeout: float):
        self.endpoint, self.api_key_env, self.timeout = endpoint, api_key_env, timeout

    def search(self, query: str, k: int) -> list[Hit]:
        params = {"q": query, "num": k}
        if self.api_key_env:
            params["key"] = os.environ[self.api_key_env]
        url = f"{self.endpoint}?{urllib.parse.urlencode(params)}"
        failed = None
        try:
            with urllib.request.urlopen(url, timeout=self.timeout) as response:
                items = json.loads(response.read()).get("items") or []
        except Exception as e:  # noqa: BLE001 - the URL carries the key: no error leaves with it
            failed = redact_chain(e, [url, params.get("key", "")])
        if failed is not None:
            raise failed
        found = [
            (str(i.get("link") or i.get("id")), str(i.get("snippet") or i.get("text") or ""))
            for i in items
            if (i.get("link") or i.get("id")) and (i.get("snippet") or i.get("text"))
        ]
        # a web API gives an order, not scores: the score is the reciprocal rank
        return [Hit(doc, 1.0 / rank, rank, text) for rank, (doc, text) in enumerate(found[:k], start=1)]

    def batch_search(self, queries: list[str], qids: list[str], k: int) -> dict[str, list[Hit]]:
        return {qid: self.search(q, k) for q, qid in zip(queries, qids)}


class DocumentSearchResource(dg.ConfigurableResource):
    kind: str = "bm25"
    threads: int = 2
    endpoint: str = ""
    api_key_env: str = ""
    timeout: float = 30.0

    def index(self, path: str, docs: pl.DataFrame) -> int:
        """Make ``docs`` (``id``, ``contents``, pyserini's columns) searchable in a collection at
        ``path`` (a local folder the storage resource names; bm25 only: a web search API has its own)."""
        if self.kind != "bm25":
            return 0
        import shutil

        target = Path(path)
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        docs.select("id", "contents").write_parquet(target / "texts.parquet")
        return build_index(docs.select("id", "contents"), str(target / "lucene"), threads=self.threads)

    def searcher(self, path: str) -> DocumentSearcher | WebSearcher:
        """The searcher of the collection at ``path`` (``search(q, k)``, ``batch_search(queries,
        qids, k)`` -> qid -> hits with their texts), or of the web search API."""
        if self.kind == "http":
            return WebSearcher(self.endpoint, self.api_key_env, self.timeout)
        if self.kind != "bm25":
            raise ValueError(f"unknown search kind {self.kind!r} (bm25 or http)")
        return DocumentSearcher(path, self.threads)
