"""The document search resource: one pyserini-like API over a local BM25 collection and a
web search API."""

from __future__ import annotations

import json
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import polars as pl
import pytest

from resources.search import DocumentSearchResource

DOCS = pl.DataFrame(
    {
        "id": ["eiffel", "everest", "pacific"],
        "contents": [
            "The Eiffel Tower stands in Paris.",
            "Mount Everest is the highest mountain.",
            "The Pacific is the largest ocean.",
        ],
    }
)


def test_a_local_collection_answers_search_and_batch_search_with_texts(tmp_path):
    search = DocumentSearchResource()
    assert search.index(str(tmp_path / "c"), DOCS) == 3
    searcher = search.searcher(str(tmp_path / "c"))
    top = searcher.search("highest mountain", k=2)
    assert (
        top[0].docid == "everest" and top[0].rank == 1 and top[0].contents == "Mount Everest is the highest mountain."
    )
    both = searcher.batch_search(["largest ocean", "Paris tower"], ["a", "b"], k=1)
    assert [h.docid for h in both["a"]] == ["pacific"] and [h.docid for h in both["b"]] == ["eiffel"]


def test_a_web_search_api_answers_the_same_way(monkeypatch):
    asked = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            query = parse_qs(urlparse(self.path).query)
            asked.append(query)
            items = [
                {"link": "https://en.wikipedia.org/wiki/Mount_Everest", "snippet": "Everest is Earth's highest."},
                {"link": "https://example.org/no-text"},
                {"id": "k2", "text": "K2 is second."},
            ]
            body = json.dumps({"items": items}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("SEARCH_KEY", "secret")
    try:
        search = DocumentSearchResource(
            kind="http", endpoint=f"http://127.0.0.1:{server.server_address[1]}/search", api_key_env="SEARCH_KEY"
        )
        assert search.index("unused", DOCS) == 0
        hits = search.searcher("unused").batch_search(["highest mountain"], ["q1"], k=5)["q1"]
    finally:
        server.shutdown()
    # an item without a text is no hit; ranks follow the API's order
    assert [(h.docid, h.rank) for h in hits] == [("https://en.wikipedia.org/wiki/Mount_Everest", 1), ("k2", 2)]
    assert hits[1].contents == "K2 is second."
    assert asked[0]["q"] == ["highest mountain"] and asked[0]["num"] == ["5"] and asked[0]["key"] == ["secret"]


def test_a_failing_web_search_names_no_key_in_its_error_or_its_causes(monkeypatch):
    """The key travels in the URL; a server that echoes the URL in its error (here, as the
    reason phrase of a 500) must not put it in the step's failure."""

    class Echo(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(500, f"failed {self.path}")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("SEARCH_KEY", "key-the-server-echoes-42")
    endpoint = f"http://127.0.0.1:{server.server_address[1]}/search"
    try:
        searcher = DocumentSearchResource(kind="http", endpoint=endpoint, api_key_env="SEARCH_KEY").searcher("unused")
        with pytest.raises(Exception) as failed:
            searcher.search("highest mountain", k=5)
    finally:
        server.shutdown()
    shown = "".join(traceback.format_exception(failed.value))
    assert "HTTP Error 500" in shown and "key-the-server-echoes-42" not in shown
