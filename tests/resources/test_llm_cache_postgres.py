"""The shared answer cache on Postgres (``cache_type="postgres"``): the disk cache's
interface over one table, shared by processes, surviving a dropped connection, and never
showing the URL's password. Each test has a database of its own on the suite's server."""

import json
import math
import multiprocessing
import subprocess
import sys
import traceback
from pathlib import Path

import dagster as dg
import psycopg2
import pytest

from resources.llm import CallStats, LLMRequest, LLMResource
from resources.llm import cache as cache_module
from resources.llm.cache import CACHE_URL_ENV, CacheUnavailableError, PostgresCache, response_cache
from tests.conftest import SCRIPTED_REGISTRY
from tests.resources.test_redact import linked
from tests.servers import free_port, new_database

pytestmark = pytest.mark.slow  # a Postgres server, as every test on the suite's services

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache_url(postgres_server) -> str:
    return new_database(postgres_server)


def test_answers_read_back_as_written_and_a_chunk_finds_only_the_present_keys(cache_url):
    cache = PostgresCache(cache_url)
    verdict = {
        "text": "Yes",
        "prompt_tokens": 180,
        "completion_tokens": 1,
        "tokens": ["Yes"],
        "token_logprobs": [{"Yes": -0.01, "No": -4.6, "Maybe": -math.inf}],
    }
    odd = {
        "text": "caf\u00e9 \u0000 \ud800 \u6771\u4eac",
        "prompt_tokens": 3,
        "completion_tokens": 2,
        "tokens": None,
        "token_logprobs": None,
    }
    score = {"logprobs": [-0.1234567890123456789, -2.5e-300], "tokens": 2}
    cache.put_many([("chat:a", verdict), ("chat:b", odd), ("score:c", score)])
    found = cache.get_many(["chat:a", "absent:1", "chat:b", "absent:2", "score:c"])
    assert found == {"chat:a": verdict, "chat:b": odd, "score:c": score}
    assert found["chat:a"]["token_logprobs"][0]["Maybe"] == -math.inf
    assert cache.get("absent:1") is None and cache.get_many([]) == {}


def test_a_key_written_twice_keeps_its_first_answer(cache_url):
    cache = PostgresCache(cache_url)
    cache.put("k", {"text": "first"})
    cache.put_many([("k", {"text": "second"}), ("j", {"text": "one"}), ("j", {"text": "two"})])
    assert cache.get_many(["k", "j"]) == {"k": {"text": "first"}, "j": {"text": "one"}}


def test_stats_count_the_entries_and_the_tables_bytes(cache_url, monkeypatch):
    cache = PostgresCache(cache_url)
    empty = cache.stats()
    assert empty["entries"] == 0
    cache.put_many([(f"k{i}", {"text": "x" * 4000 + str(i)}) for i in range(300)])
    full = cache.stats()
    # 1.2 MB of text, which Postgres compresses in TOAST: the size grows, the count is exact
    assert full["entries"] == 300 and full["bytes"] > empty["bytes"]
    # a large table is counted from the planner's estimate, which ANALYZE makes exact here
    monkeypatch.setattr(cache_module, "EXACT_COUNT_BELOW", 0)
    cache.put("one more", {"text": "y"})
    with psycopg2.connect(cache_url) as conn, conn.cursor() as cur:
        cur.execute("ANALYZE benchfoundry_llm_answers")
    assert cache.stats()["entries"] == 301


def test_an_answer_written_by_one_process_is_read_by_another(cache_url):
    script = (
        "import sys; from resources.llm.cache import PostgresCache; "
        "PostgresCache(sys.argv[1]).put_many([('chat:shared', {'text': 'Paris', 'prompt_tokens': 9})])"
    )
    subprocess.run([sys.executable, "-c", script, cache_url], cwd=ROOT, check=True, timeout=60)
    assert PostgresCache(cache_url).get_many(["chat:shared", "chat:other"]) == {
        "chat:shared": {"text": "Paris", "prompt_tokens": 9}
    }


def _forked_worker(cache: PostgresCache, out) -> None:
    out.send((cache.get("parent"), cache._conn.get_backend_pid()))
    cache.put("child", {"text": "from the child"})
    out.close()


def test_a_forked_worker_opens_its_own_connection_and_leaves_the_parents_alone(cache_url):
    cache = PostgresCache(cache_url)
    cache.put("parent", {"text": "from the parent"})
    session = cache._conn.get_backend_pid()
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_forked_worker, args=(cache, send))
    child.start()
    answer, child_session = receive.recv()
    assert answer == {"text": "from the parent"} and child_session != session  # a socket of its own
    child.join(timeout=30)
    assert child.exitcode == 0
    # the parent's session lives on: the child neither used nor closed it
    assert cache.get("child") == {"text": "from the child"}
    assert cache._conn.get_backend_pid() == session


def test_a_dropped_connection_is_opened_again(cache_url):
    cache = PostgresCache(cache_url)
    cache.put("k", {"text": "kept"})
    session = cache._conn.get_backend_pid()
    with psycopg2.connect(cache_url) as admin, admin.cursor() as cur:
        cur.execute("SELECT pg_terminate_backend(%s)", (session,))  # as a server restart would
    assert cache.get("k") == {"text": "kept"}
    cache.put("after", {"text": "written"})
    assert cache.get("after") == {"text": "written"} and cache._conn.get_backend_pid() != session


def test_an_unreachable_server_names_the_host_and_never_the_password():
    port = free_port()  # nothing listens there
    cache = PostgresCache(f"postgresql://bench:s3cret-Passw0rd@127.0.0.1:{port}/answers", connect_timeout=5)
    with pytest.raises(CacheUnavailableError) as caught:
        cache.get_many(["k"])
    message = str(caught.value)
    assert f"bench@127.0.0.1:{port}/answers could not be reached" in message
    assert "s3cret-Passw0rd" not in message and "BENCHFOUNDRY_CACHE_URL" in message


# No colon after the scheme: libpq reads it as key=value settings and echoes it whole.
MISTYPED = "postgresql//user:s3cretpw@127.0.0.1/db"


@pytest.mark.parametrize(
    "call",
    [lambda cache: cache.get_many(["k"]), lambda cache: cache.put_many([("k", {})]), lambda cache: cache.stats()],
    ids=["get_many", "put_many", "stats"],
)
def test_a_mistyped_url_leaves_its_password_in_no_exception_of_the_chain(call):
    cache = PostgresCache(MISTYPED, connect_timeout=5)
    with pytest.raises(CacheUnavailableError, match="invalid dsn") as caught:
        call(cache)
    chain = linked(caught.value)
    # the driver's error is still there to read, its type named and its frames kept
    assert [type(e).__name__ for e in chain] == ["CacheUnavailableError", "ProgrammingError"]
    assert "psycopg2.connect(" in "".join(traceback.format_exception(caught.value))
    for e in chain:
        shown = "".join(traceback.format_exception(e)) + repr(e.args) + str(e)
        assert "s3cretpw" not in shown, shown


def test_a_failed_run_on_a_mistyped_url_keeps_the_password_out_of_every_event():
    from tests import scripted

    scripted.install()

    @dg.asset
    def answers(llm: LLMResource) -> list[str]:
        return [r.text for r in llm.run("smollm2", [LLMRequest("q", [{"role": "user", "content": "Capital?"}])])]

    llm = LLMResource(registry_path=SCRIPTED_REGISTRY, cache_type="postgres", cache_url=MISTYPED)
    result = dg.materialize([answers], resources={"llm": llm}, raise_on_error=False)
    assert not result.success and result.get_asset_materialization_events() == []
    [failure] = [event for event in result.all_events if event.is_step_failure]
    errors, todo = [], [failure.step_failure_data.error]
    while todo:  # the step's error and every cause and context Dagster kept
        error = todo.pop()
        if error is not None:
            errors.append(error)
            todo += [error.cause, error.context]
    assert "CacheUnavailableError" in {e.cls_name for e in errors}
    assert "ProgrammingError" in {e.cls_name for e in errors}  # the driver's error, redacted
    for event in result.all_events:
        assert "s3cretpw" not in dg.serialize_value(event) + str(event), event.event_type_value
    assert all("s3cretpw" not in e.to_string() for e in errors)


def test_the_llm_resource_answers_from_postgres_when_configured(cache_url, monkeypatch):
    from tests import scripted

    monkeypatch.setenv(CACHE_URL_ENV, cache_url)  # the URL from the environment, as a deployment sets it
    scripted.install()
    requests = [LLMRequest(str(i), [{"role": "user", "content": f"Capital of {i}?"}]) for i in range(5)]
    first, again = CallStats(), CallStats()
    llm = LLMResource(registry_path=SCRIPTED_REGISTRY, cache_type="postgres", backoff_seconds=0.01)
    answers = llm.run("smollm2", requests, stats=first)
    with psycopg2.connect(cache_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT value FROM benchfoundry_llm_answers")
        stored = [json.loads(bytes(v)) for (v,) in cur.fetchall()]  # JSON any client reads, not pickles
    assert sorted(v["text"] for v in stored) == sorted(r.text for r in answers)
    replayed = llm.run("smollm2", requests, stats=again)
    assert first.cached == 0 and again.cached == 5
    assert [r.text for r in replayed] == [r.text for r in answers]
    assert again.as_metadata()["llm_cache/entries"] == 5


def test_postgres_without_a_url_says_where_to_set_one(monkeypatch):
    monkeypatch.delenv(CACHE_URL_ENV, raising=False)
    with pytest.raises(ValueError, match="cache_url, or BENCHFOUNDRY_CACHE_URL"):
        response_cache("postgres", ".cache/llm")
    with pytest.raises(ValueError, match="'disk', 'postgres' or 'off'"):
        response_cache("sqlite", ".cache/llm")
