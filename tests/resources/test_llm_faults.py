"""A model server that breaks must stop a step soon and loudly, each retry must be one the
resource counts, and no key may go where it does not belong (issue 28's fault findings).

Servers are the stand-in (``tests/standin.py``) as their own processes, failing every request
one way (``--always``), or a port nothing listens on."""

import threading
import time

import pytest

from resources.llm import LLMRequest, LLMResource
from resources.llm.cache import response_cache
from resources.llm.faults import Breaker, ModelServerDown, NoAnswers
from tests.servers import free_port


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def requests(n: int, what: str = "item") -> list[LLMRequest]:
    return [LLMRequest(str(i), user(f"{what} {i} of the run"), params={"max_tokens": 24}) for i in range(n)]


def resource(tmp_path, entry: str, **kw) -> LLMResource:
    path = tmp_path / "models.yaml"
    path.write_text(f"models:\n  m: {entry}\n")
    return LLMResource(registry_path=str(path), cache_dir=str(tmp_path / "cache"), **kw)


@pytest.fixture
def standin(standins, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-project-secret-0123456789")
    return standins


def test_litellm_asks_only_as_often_as_the_resource_says(tmp_path, standin):
    # litellm and the OpenAI SDK under it retried on their own: 36 requests where 12 were meant
    server = standin(always="500")
    llm = resource(
        tmp_path,
        f"{{model: openai/m, backend: api, api_base: '{server.url}'}}",
        max_retries=2,
        backoff_seconds=0.01,
        breaker_window=1000,
    )
    # no item got an answer: the step stops, naming how each call ended
    with pytest.raises(NoAnswers, match="none of the 4 items asked got an answer.*gave up after 3 tries"):
        llm.run("m", requests(4))
    assert sorted(server.seen()["asked"].values()) == [3, 3, 3, 3]


def test_the_providers_key_goes_to_no_other_host(tmp_path, standin, monkeypatch):
    server = standin()
    llm = resource(tmp_path, f"{{model: openai/m, backend: api, api_base: '{server.url}'}}", backoff_seconds=0.01)
    assert all(r.ok for r in llm.run("m", requests(2)))
    sent = server.seen()["auth"]
    assert sent and not any("sk-project-secret" in header for header in sent), sent
    # the key an entry names for its own host is the one it sends
    monkeypatch.setenv("STANDIN_KEY", "standin-key-42")
    (tmp_path / "named").mkdir()
    named = resource(
        tmp_path / "named",
        f"{{model: openai/m, backend: api, api_base: '{server.url}', api_key_env: STANDIN_KEY}}",
        backoff_seconds=0.01,
    )
    assert all(r.ok for r in named.run("m", requests(2, "another")))
    assert server.seen()["auth"].get("Bearer standin-key-42") == 2


def test_a_dead_server_stops_the_step_within_two_minutes_at_the_defaults(tmp_path):
    # the defaults: 5 tries a call, backoff from 1 s, the breaker's own thresholds
    url = f"http://127.0.0.1:{free_port()}/v1"
    llm = resource(tmp_path, f"{{model: hosted_vllm/m, backend: vllm, api_base: '{url}'}}")
    start = time.monotonic()
    with pytest.raises(ModelServerDown) as err:
        llm.run("m", requests(300))
    took = time.monotonic() - start
    assert took < 120, took
    message = str(err.value)
    assert url in message and "circuit breaker open" in message and "ConnectionFailed" in message


def test_a_hung_server_is_given_up_on_at_the_calls_timeout(tmp_path, standin):
    server = standin(always="hang")
    llm = resource(
        tmp_path,
        f"{{model: hosted_vllm/m, backend: vllm, api_base: '{server.url}'}}",
        timeout_floor=1.0,
        min_tokens_per_second=1000.0,
        backoff_seconds=0.01,
        breaker_seconds=0.5,
        breaker_failures=4,
    )
    assert llm.timeout({"max_tokens": 24}) == pytest.approx(1.024)
    start = time.monotonic()
    with pytest.raises(ModelServerDown, match="TimeoutError"):
        llm.run("m", requests(20))
    assert time.monotonic() - start < 10
    # the first tries timed out together and the breaker opened: no second round of hangs
    assert sum(server.seen()["asked"].values()) == 20


def test_a_small_step_on_a_hung_server_ends_after_one_round_of_timeouts(tmp_path, standin):
    # the defaults' timeouts and quiet spell, scaled down (a try's timeout under 5 s, which
    # aiohttp would round up to the whole second): 12 items, fewer than the 16 failed tries in
    # a row the breaker asks for, so every item in flight timing out once opens it
    scale = 1 / 15
    server = standin(always="hang")
    llm = resource(
        tmp_path,
        f"{{model: hosted_vllm/m, backend: vllm, api_base: '{server.url}'}}",
        timeout_floor=60.0 * scale,
        min_tokens_per_second=10.0 / scale,
        breaker_seconds=30.0 * scale,
        backoff_seconds=1.0 * scale,
    )
    defaults = LLMResource()
    assert llm.timeout({"max_tokens": 24}) == pytest.approx(scale * defaults.timeout({"max_tokens": 24}))
    assert llm.breaker_seconds == pytest.approx(scale * defaults.breaker_seconds)
    assert llm.breaker_failures == defaults.breaker_failures == 16
    llm.spec("m")  # the registry and litellm loaded outside the time measured
    start = time.monotonic()
    with pytest.raises(ModelServerDown, match=r"12 failed tries in a row \(every item in flight\)"):
        llm.run("m", requests(12))
    took = time.monotonic() - start
    assert took < 70 * scale, took  # a second round of timeouts would take twice the first
    assert sum(server.seen()["asked"].values()) == 12


def test_a_calls_timeout_follows_its_token_budget():
    llm = LLMResource()
    assert llm.timeout({"max_tokens": 64}) == pytest.approx(66.4)  # a labeling call
    assert llm.timeout({"max_tokens": 8192}) == 600.0  # thinking: the ceiling
    assert llm.timeout({}) == 600.0 and llm.timeout({"max_tokens": None}) == 600.0


@pytest.mark.parametrize("fault", ["500", "429", "garbage", "close"])
def test_each_way_a_server_breaks_ends_the_step_naming_the_endpoint(tmp_path, standin, fault):
    server = standin(always=fault)
    llm = resource(
        tmp_path,
        f"{{model: hosted_vllm/m, backend: vllm, api_base: '{server.url}'}}",
        backoff_seconds=0.01,
        breaker_seconds=0.2,
        breaker_window=20,
    )
    with pytest.raises(ModelServerDown) as err:
        llm.run("m", requests(60))
    assert server.url in str(err.value)


def test_empty_answers_are_answers_not_a_broken_server(tmp_path, standin):
    server = standin(always="empty")
    llm = resource(
        tmp_path,
        f"{{model: hosted_vllm/m, backend: vllm, api_base: '{server.url}'}}",
        backoff_seconds=0.01,
        breaker_seconds=0.0,
        breaker_window=10,
    )
    out = llm.run("m", requests(30))
    assert all(r.ok and r.text == "" for r in out)


def test_a_choice_without_a_message_is_an_error_on_either_path(tmp_path, standin):
    # litellm refuses such a reply ("Invalid response object", a server error it retries);
    # the vLLM client read it as an empty answer
    server = standin(always="no_message")
    entries = {
        "vllm": f"{{model: hosted_vllm/m, backend: vllm, api_base: '{server.url}'}}",
        "api": f"{{model: openai/m, backend: api, api_base: '{server.url}'}}",
    }
    for path, entry in entries.items():
        (tmp_path / path).mkdir()
        llm = resource(tmp_path / path, entry, max_retries=1, backoff_seconds=0.01, breaker_window=1000)
        with pytest.raises(NoAnswers, match="gave up after 2 tries"):
            llm.run("m", requests(3, path))
    assert sorted(server.seen()["asked"].values()) == [2] * 6
    vllm = resource(tmp_path / "vllm", entries["vllm"], max_retries=0, backoff_seconds=0.01, breaker_window=1000)
    with pytest.raises(NoAnswers, match="the reply's first choice has no message"):
        vllm.run("m", requests(1, "why"))


def test_what_was_answered_before_the_server_died_stays_answered(tmp_path, standin):
    server = standin(latency=0.05)
    llm = resource(
        tmp_path,
        f"{{model: hosted_vllm/m, backend: vllm, api_base: '{server.url}', max_concurrency: 4}}",
        backoff_seconds=0.01,
        breaker_seconds=0.2,
        breaker_failures=4,
    )
    threading.Timer(1.0, server.stop).start()
    with pytest.raises(ModelServerDown):
        llm.run("m", requests(400))
    kept = response_cache("disk", str(tmp_path / "cache")).stats()["entries"]
    assert 10 < kept < 400


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_breaker_needs_a_run_of_failures_and_a_quiet_spell():
    clock = Clock()
    b = Breaker("m at http://h/v1", failures=3, seconds=10, window=100, rate=0.5, clock=clock)
    for _ in range(5):
        b.attempt_failed("ConnectionFailed: refused")
    b.check()  # many failures at once, but not for long: a blip
    clock.now = 9.0
    b.answered()  # an answer resets the run
    clock.now = 25.0
    b.attempt_failed("x")
    b.attempt_failed("y")
    b.check()
    b.attempt_failed("ConnectionFailed: refused")
    with pytest.raises(
        ModelServerDown,
        match=r"m at http://h/v1: circuit breaker open, 3 failed tries in a row "
        r"and no answer for 16s\. Last errors: .*ConnectionFailed",
    ):
        b.check()


def test_the_breaker_opens_once_every_item_in_flight_failed_a_try_and_none_answered():
    clock = Clock()
    told = Breaker("m", failures=16, seconds=30, window=100, rate=0.5, clock=clock)
    told.expect(12)
    untold = Breaker("m", failures=16, seconds=30, window=100, rate=0.5, clock=clock)
    clock.now = 66.0  # each of the 12 items' first try times out
    for _ in range(11):
        told.attempt_failed("TimeoutError: ")
        untold.attempt_failed("TimeoutError: ")
    told.check()
    told.attempt_failed("TimeoutError: ")
    untold.attempt_failed("TimeoutError: ")
    untold.check()  # told nothing, it waits for 16
    with pytest.raises(
        ModelServerDown, match=r"12 failed tries in a row \(every item in flight\) and no answer for 66s"
    ):
        told.check()
    # fewer in flight, but not quiet for long: a blip; more in flight than failures: failures
    quick = Breaker("m", failures=16, seconds=30, window=100, rate=0.5, clock=Clock())
    quick.expect(2)
    quick.attempt_failed("x")
    quick.attempt_failed("y")
    quick.check()
    later = Clock()
    many = Breaker("m", failures=16, seconds=30, window=100, rate=0.5, clock=later)
    many.expect(256)
    later.now = 66.0
    for _ in range(15):
        many.attempt_failed("z")
    many.check()
    many.attempt_failed("z")
    with pytest.raises(ModelServerDown, match="16 failed tries in a row and no answer"):
        many.check()


def test_the_breaker_opens_when_most_of_the_last_items_failed():
    b = Breaker("m", failures=1000, seconds=0, window=10, rate=0.5, clock=Clock())
    for i in range(10):
        b.finished("HTTP 400: prompt too long" if i % 2 else None)
    b.check()  # half is not more than half
    b.finished("HTTP 400: prompt too long")
    with pytest.raises(ModelServerDown, match="6 of the last 10 items failed"):
        b.check()


def test_errors_from_servers_are_redacted(tmp_path, standin, monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", "vllm-key-abcdef-123")
    server = standin(always="500")
    llm = resource(
        tmp_path,
        f"{{model: hosted_vllm/m, backend: vllm, api_base: '{server.url}'}}",
        max_retries=0,
        backoff_seconds=0.01,
        breaker_window=1000,
    )
    with pytest.raises(NoAnswers, match="HTTP 500") as err:
        llm.run("m", requests(1))
    assert "vllm-key-abcdef-123" not in str(err.value)
    assert server.seen()["auth"] == {"Bearer vllm-key-abcdef-123": 1}
