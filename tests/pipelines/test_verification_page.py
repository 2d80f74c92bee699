"""The verification page against a real server on a loopback port: who may save, what may be
saved, and that concurrent saves keep every decision."""

import http.client
import json
import re
import threading
import urllib.parse
from pathlib import Path

import polars as pl
import pytest

from assets.quit import rules, sources
from pipelines import verification_page
from resources.storage import write_parquet

QUESTIONS = 30


def candidates(n: int) -> pl.DataFrame:
    """Question ``q<i>`` with two candidates, ``right <i>`` (judged correct) and ``wrong <i>``."""
    rows = [
        {
            "question_id": f"q{i}",
            "question": f"Question {i}?",
            "gold": f"right {i}",
            "candidate": c,
            "occurrences": 1,
            "judged_correct": c.startswith("right"),
            "exact_match": c.startswith("right"),
        }
        for i in range(n)
        for c in (f"right {i}", f"wrong {i}")
    ]
    return pl.DataFrame(rows).select(list(rules.CANDIDATE_SCHEMA)).cast(rules.CANDIDATE_SCHEMA)


class Page:
    """A served page: GET and POST with the headers a test chooses."""

    def __init__(self, tmp_path: Path):
        cands = tmp_path / "cands.parquet"
        write_parquet(str(cands), candidates(QUESTIONS))
        self.decisions = tmp_path / "human_verification" / "decisions.json"
        self.server = verification_page.serve(str(cands), str(self.decisions), port=0)
        self.port = self.server.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"

    def request(self, method: str, path: str = "/", body: bytes | None = None, headers: dict | None = None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.read().decode()
        finally:
            conn.close()

    def token(self) -> str:
        status, page = self.request("GET")
        assert status == 200
        found = re.search(r'name="token" value="([^"]+)"', page)
        return found.group(1) if found else ""

    def save(self, fields: list[tuple[str, str]], headers: dict | None = None):
        body = urllib.parse.urlencode(fields).encode()
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            **(headers if headers is not None else {"Origin": self.origin}),
        }
        return self.request("POST", "/save", body=body, headers=headers)

    def form(self, i: int, accept: bool = True, token: str | None = None) -> list[tuple[str, str]]:
        """What the page posts for question i: both candidates shown, the right one ticked."""
        fields = [
            ("token", self.token() if token is None else token),
            ("shown", f"q{i}\tright {i}"),
            ("shown", f"q{i}\twrong {i}"),
        ]
        return fields + ([("accept", f"q{i}\tright {i}")] if accept else [])


@pytest.fixture
def page(tmp_path):
    p = Page(tmp_path)
    threading.Thread(target=p.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield p
    p.server.shutdown()
    p.server.server_close()


def test_a_save_from_the_page_itself_is_written(page):
    status, body = page.save(page.form(0))
    assert status == 200, body
    saved = sources.load_decisions(str(page.decisions))["q0"]
    assert (saved["accepted"], saved["rejected"]) == (["right 0"], ["wrong 0"])


def test_a_foreign_page_cannot_rewrite_a_decision(page):
    assert page.save(page.form(0))[0] == 200
    before = page.decisions.read_text()
    # even with the token (a foreign page cannot read it), another origin is refused
    status, body = page.save(page.form(0, accept=False), headers={"Origin": "http://evil.example"})
    assert status == 403
    assert "http://evil.example" in body and "origin" in body.lower()
    assert page.decisions.read_text() == before


def test_referer_stands_in_for_a_missing_origin(page):
    assert page.save(page.form(1), headers={"Referer": page.origin + "/"})[0] == 200
    status, body = page.save(page.form(1, accept=False), headers={"Referer": "http://evil.example/form.html"})
    assert status == 403 and "http://evil.example" in body
    assert json.loads(page.decisions.read_text())["q1"]["accepted"] == ["right 1"]


def test_a_save_with_neither_origin_nor_referer_is_refused(page):
    status, body = page.save(page.form(0), headers={})
    assert status == 403 and "Origin" in body
    assert not page.decisions.exists()


@pytest.mark.parametrize("token", ["", "not-the-token"])
def test_a_save_needs_the_token_of_the_served_page(page, token):
    status, body = page.save(page.form(0, token=token))
    assert status == 403 and "reload" in body.lower()
    assert not page.decisions.exists()


def test_a_page_asked_for_under_another_host_name_is_refused(page):
    # a foreign site whose name resolves to 127.0.0.1 (DNS rebinding) must not read the token
    status, body = page.request("GET", headers={"Host": f"evil.example:{page.port}"})
    assert status == 403 and "evil.example" in body
    assert 'name="token"' not in body


def test_localhost_is_the_same_page(page):
    status, _ = page.save(
        page.form(2), headers={"Origin": f"http://localhost:{page.port}", "Host": f"localhost:{page.port}"}
    )
    assert status == 200


@pytest.mark.parametrize("value, named", [("ghost\tright 0", "ghost"), ("q0\tLhotse", "Lhotse")])
def test_a_decision_for_something_not_shown_is_refused(page, value, named):
    fields = page.form(0) + [("shown", value)]
    status, body = page.save(fields)
    assert status == 400 and named in body
    assert not page.decisions.exists()


def test_an_accepted_answer_must_be_among_the_shown_ones(page):
    fields = page.form(0) + [("accept", "q1\tright 1")]
    status, body = page.save(fields)
    assert status == 400 and "q1" in body and "right 1" in body
    assert not page.decisions.exists()


@pytest.mark.parametrize("field", ["shown", "accept"])
def test_a_form_value_without_a_tab_is_a_400_page(page, field):
    status, body = page.save(page.form(0) + [(field, "no tab here")])
    assert status == 400 and "no tab here" in body
    assert not page.decisions.exists()


def test_a_body_that_is_not_a_form_is_a_400_page(page):
    status, body = page.request("POST", "/save", body=b"\xff\xfe", headers={"Origin": page.origin})
    assert status == 400
    status, body = page.request("POST", "/save", headers={"Origin": page.origin, "Content-Length": "many"})
    assert status == 400 and "Content-Length" in body


def test_concurrent_saves_keep_every_decision(page):
    forms = [page.form(i, accept=i % 2 == 0) for i in range(QUESTIONS)]
    start = threading.Barrier(QUESTIONS)
    statuses: list[int] = [0] * QUESTIONS

    def save(i):
        start.wait()
        statuses[i] = page.save(forms[i])[0]

    threads = [threading.Thread(target=save, args=(i,)) for i in range(QUESTIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [200] * QUESTIONS
    saved = sources.load_decisions(str(page.decisions))
    assert sorted(saved) == sorted(f"q{i}" for i in range(QUESTIONS))
    assert all(saved[f"q{i}"]["accepted"] == ([f"right {i}"] if i % 2 == 0 else []) for i in range(QUESTIONS))
    # the write went through a temporary file that was renamed, none is left behind
    assert [p.name for p in page.decisions.parent.iterdir()] == ["decisions.json"]


def test_a_broken_decisions_file_is_an_error_page_naming_it(page):
    page.decisions.parent.mkdir(parents=True)
    page.decisions.write_text("{not json")
    status, body = page.request("GET")
    assert status == 500 and "decisions.json" in body and "not valid JSON" in body
    status, body = page.save([("token", ""), ("shown", "q0\tright 0")])
    assert status == 403
    assert page.decisions.read_text() == "{not json"
