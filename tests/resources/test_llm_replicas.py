"""A model served by several replicas (issue 30): requests spread over the live ones, a
replica that dies is taken out and its items finish on another, none is asked again once
answered, the step stops only when every replica is out, and a replica out is probed again.

Replicas are stand-ins (``tests/standin.py``), each its own process; a killed one is killed
with SIGKILL while requests are in flight on it."""

import hashlib
import json
import os
import signal
import threading
import time

import pytest

from resources.llm import LLMRequest, LLMResource
from resources.llm.faults import ModelServerDown
from resources.llm.registry import load_registry
from resources.vllm_server import VLLMServerResource
from tests.servers import free_port


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def requests(n: int) -> list[LLMRequest]:
    return [LLMRequest(str(i), user(f"item {i} of the run"), params={"max_tokens": 24}) for i in range(n)]


def digest(req: LLMRequest) -> str:
    """The stand-in's name for a request (``asked``, ``answered``)."""
    return hashlib.sha256(json.dumps(req.messages, sort_keys=True).encode()).hexdigest()


def resource(tmp_path, urls: list[str], concurrency: int = 8, **kw) -> LLMResource:
    path = tmp_path / "models.yaml"
    bases = ", ".join(f"'{u}'" for u in urls)
    path.write_text(
        f"models:\n  m: {{model: hosted_vllm/m, backend: vllm, api_base: [{bases}], max_concurrency: {concurrency}}}\n"
    )
    kw = {"backoff_seconds": 0.01, "breaker_failures": 4, "breaker_seconds": 0.2, **kw}
    return LLMResource(registry_path=str(path), cache_dir=str(tmp_path / "cache"), **kw)


def answered_by(out, name: str) -> list[int]:
    return [i for i, r in enumerate(out) if r.text.startswith(f"{name}: ")]


def test_requests_are_spread_over_the_replicas_and_come_back_in_order(tmp_path, standins):
    a, b = standins("a", latency=0.05), standins("b", latency=0.05)
    llm = resource(tmp_path, [a.url, b.url])
    reqs = requests(160)
    out = llm.run("m", reqs)
    assert [r.key for r in out] == [str(i) for i in range(160)]
    assert all(r.ok and r.text.split(": ", 1)[1] == f"item {i} of the run" for i, r in enumerate(out))
    seen_a, seen_b = a.seen(), b.seen()
    share = len(answered_by(out, "a"))
    assert 50 <= share <= 110, share  # an even split is 80
    assert sum(seen_a["asked"].values()) + sum(seen_b["asked"].values()) == 160
    # the model's max_concurrency is each replica's, so two replicas carry twice the load
    assert seen_a["peak"] <= 8 and seen_b["peak"] <= 8 and seen_a["peak"] + seen_b["peak"] > 8


def test_a_replica_killed_mid_run_leaves_no_item_lost_or_asked_again(tmp_path, standins):
    # "a" is slow, so requests are in flight on it when it is killed
    a, b = standins("a", latency=0.2), standins("b", latency=0.02)
    llm = resource(tmp_path, [a.url, b.url], replica_retry_seconds=60.0)
    reqs = requests(600)
    before_kill = {}

    run_over = threading.Event()

    def kill_a_once_it_has_answered():
        # a has answered some, and has some in flight: the least-loaded pick may send the
        # next items to the faster b, so a moment where a holds none is possible and skipped
        while not run_over.is_set():
            seen = a.seen()
            if sum(seen["answered"].values()) >= 8 and set(seen["asked"]) - set(seen["answered"]):
                before_kill.update(seen, at=time.monotonic())
                os.killpg(a.proc.pid, signal.SIGKILL)
                return
            time.sleep(0.005)

    killer = threading.Thread(target=kill_a_once_it_has_answered)
    killer.start()
    try:
        out = llm.run("m", reqs)
    finally:
        run_over.set()
        killer.join()
    assert before_kill, "a never had items in flight after its first answers"
    # the items on the dead replica moved at once, not after a client timeout
    assert time.monotonic() - before_kill["at"] < 5
    assert all(r.ok and r.text.split(": ", 1)[1] == f"item {i} of the run" for i, r in enumerate(out))
    by_a, by_b = answered_by(out, "a"), answered_by(out, "b")
    assert len(by_a) + len(by_b) == 600 and by_a and by_b
    asked_b = b.seen()["asked"]
    # nothing answered was asked again: not what "a" answered, and nothing twice on "b"
    assert not any(digest(reqs[i]) in asked_b for i in by_a)
    assert all(asked_b[digest(reqs[i])] == 1 for i in by_b)
    # what was in flight on "a" when it died was answered by "b"
    in_flight = set(before_kill["asked"]) - set(before_kill["answered"])
    moved = [i for i in by_b if digest(reqs[i]) in in_flight]
    assert moved, "nothing was in flight on the killed replica"
    assert llm.cache.stats()["entries"] == 600


def test_the_step_stops_when_every_replica_is_out_naming_each(tmp_path):
    urls = [f"http://127.0.0.1:{free_port()}/v1" for _ in range(2)]  # nothing listens: both dead
    llm = resource(tmp_path, urls)
    start = time.monotonic()
    with pytest.raises(ModelServerDown) as err:
        llm.run("m", requests(200))
    assert time.monotonic() - start < 5
    message = str(err.value)
    assert "circuit breaker open" in message and "every replica is out" in message
    assert all(f"{url}: " in message for url in urls), message
    assert message.count("failed tries in a row") == 2 and "ConnectionFailed" in message


def test_one_dead_replica_of_two_does_not_stop_the_step(tmp_path, standins):
    # the breaker's run-of-failures rule, counted per replica: a dead one fails every try at
    # once while the live one answers, and the step goes on
    b = standins("b", latency=0.02)
    dead = f"http://127.0.0.1:{free_port()}/v1"
    llm = resource(tmp_path, [dead, b.url], breaker_seconds=0.0, breaker_failures=1)
    out = llm.run("m", requests(200))
    assert all(r.ok for r in out) and len(answered_by(out, "b")) == 200


def test_a_replica_out_is_probed_again_and_used_when_it_answers(tmp_path, standins):
    # "a" fails its first six requests (a server still loading), then answers
    a, b = standins("a", latency=0.03, fail_first=6), standins("b", latency=0.03)
    llm = resource(
        tmp_path, [a.url, b.url], concurrency=4, breaker_failures=2, breaker_seconds=0.0, replica_retry_seconds=0.05
    )
    out = llm.run("m", requests(240))
    assert all(r.ok for r in out)
    seen_a = a.seen()
    assert seen_a["faulted"] == {"first": 6}
    # out after two failures, probed every 0.05 s until it answered, then sent its share again
    assert sum(seen_a["answered"].values()) >= 40, seen_a["answered"]
    assert sum(seen_a["answered"].values()) + sum(b.seen()["answered"].values()) == 240


def test_servers_naming_an_alias_are_its_replicas(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(
        "models:\n  m: {model: hosted_vllm/m, backend: vllm, api_base: ['http://h1/v1', 'http://h2/v1']}\n"
        "  j: {model: openai/j, backend: api, api_base: 'http://judge/v1'}\n"
    )
    llm = LLMResource(registry_path=str(path))
    assert llm.endpoints("m") == ["http://h1/v1", "http://h2/v1"] and llm.endpoint("m") == "http://h1/v1"
    assert llm.endpoints("j") == ["http://judge/v1"]
    served = llm.model_copy(
        update={
            "servers": [
                VLLMServerResource(attach_url="http://gpu0:8000/v1", aliases=["m"]),
                VLLMServerResource(attach_url="http://gpu1:8000/v1", aliases=["m"]),
            ]
        }
    )
    assert served.endpoints("m") == ["http://gpu0:8000/v1", "http://gpu1:8000/v1"]
    assert served.endpoints("j") == ["http://judge/v1"]


@pytest.mark.parametrize(
    "api_base, error",
    [
        ("[]", "a URL or a non-empty list of URLs"),
        ("['http://h1/v1', 'http://h1/v1/']", "lists http://h1/v1 more than once"),
        ("['http://h1/v1', 8000]", "a URL or a non-empty list of URLs"),
        ("['http://h1/v1', '']", "a URL or a non-empty list of URLs"),
    ],
)
def test_the_registry_rejects_bad_replica_lists_naming_the_alias(tmp_path, api_base, error):
    path = tmp_path / "models.yaml"
    path.write_text(f"models:\n  labeler: {{model: hosted_vllm/m, backend: vllm, api_base: {api_base}}}\n")
    with pytest.raises(ValueError, match="model alias 'labeler'") as err:
        load_registry(str(path))
    assert error in str(err.value) and str(path) in str(err.value)


def test_the_registry_keeps_every_replica_and_the_first_as_api_base(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(
        "models:\n  m: {model: hosted_vllm/m, backend: vllm, api_base: ['http://h1/v1', 'http://h2/v1']}\n"
        "  one: {model: hosted_vllm/m, backend: vllm, api_base: 'http://h3/v1'}\n"
        "  bad: {model: hosted_vllm/m, backend: vllm}\n"
    )
    specs = load_registry(str(path))
    assert specs["m"].api_base == "http://h1/v1" and specs["m"].api_bases == ("http://h1/v1", "http://h2/v1")
    assert specs["one"].api_bases == ("http://h3/v1",) and specs["bad"].api_bases == ()
    # the list is given as api_base; api_bases is not a key of its own
    path.write_text("models:\n  m: {model: hosted_vllm/m, backend: vllm, api_bases: ['http://h1/v1']}\n")
    with pytest.raises(ValueError, match="unknown keys"):
        load_registry(str(path))
