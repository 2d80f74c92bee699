"""The served path against stand-in OpenAI-compatible servers (``tests/standin.py``, each its
own process): routing per registry entry, the thinking switch and token budgets, bounded
concurrency, faults retried or counted, a cache rerun that asks nothing, cost accounting."""

import litellm
import pytest

from resources.llm import CallStats, LLMRequest, LLMResource
from resources.llm.faults import NoAnswers
from resources.vllm_server import VLLMServerResource
from tests.standin import FAULTS


def user(text):
    return [{"role": "user", "content": text}]


def resource(tmp_path, registry: str, **kw) -> LLMResource:
    path = tmp_path / "models.yaml"
    path.write_text(registry)
    return LLMResource(registry_path=str(path), cache_dir=str(tmp_path / "cache"), backoff_seconds=0.01, **kw)


def test_each_alias_reaches_its_own_server(tmp_path, standins):
    vllm, api = standins("vllm-a"), standins("api-b")
    llm = resource(
        tmp_path,
        "models:\n"
        "  labeler: {model: hosted_vllm/served-labeler, backend: vllm}\n"
        f"  judge: {{model: openai/judge-model, backend: api, api_base: '{api.url}'}}\n"
        "  other: {model: hosted_vllm/elsewhere, backend: vllm, api_base: 'http://127.0.0.1:9/v1'}\n",
        server=VLLMServerResource(attach_url=vllm.url, aliases=["labeler"]),
        max_retries=0,
    )
    reqs = [LLMRequest(str(i), user(f"passage {i} mentions the summit")) for i in range(6)]
    labels = llm.run("labeler", reqs)
    verdicts = llm.run("judge", reqs)
    assert [r.text for r in labels] == [f"vllm-a: passage {i} mentions the summit" for i in range(6)]
    assert [r.text for r in verdicts] == [f"api-b: passage {i} mentions the summit" for i in range(6)]
    assert vllm.seen()["models"] == {"served-labeler": 6}
    assert api.seen()["models"] == {"judge-model": 6}
    # an alias the server was not started for keeps its own URL (nothing listens there)
    with pytest.raises(NoAnswers, match="Connection"):
        llm.run("other", reqs[:1])
    assert vllm.seen()["models"] == {"served-labeler": 6}
    assert llm.endpoint("other") == "http://127.0.0.1:9/v1"


def test_a_server_naming_no_aliases_serves_vllm_entries_only(tmp_path, standins):
    vllm, api = standins("vllm-a"), standins("api-b")
    llm = resource(
        tmp_path,
        "models:\n"
        "  labeler: {model: hosted_vllm/lab, backend: vllm, api_base: 'http://127.0.0.1:9/v1'}\n"
        f"  judge: {{model: openai/judge-model, backend: api, api_base: '{api.url}'}}\n",
        server=VLLMServerResource(attach_url=vllm.url),
    )
    assert llm.endpoint("labeler") == vllm.url and llm.endpoint("judge") == api.url
    assert llm.run("judge", [LLMRequest("x", user("is it right"))])[0].text == "api-b: is it right"
    assert api.seen()["models"] == {"judge-model": 1} and vllm.seen()["models"] == {}


def test_no_thinking_calls_carry_the_off_switch_and_budgets_replace_caps(tmp_path, standins):
    qwen = standins("qwen")
    llm = resource(
        tmp_path,
        "models:\n"
        f"  qwen: {{model: hosted_vllm/qwen3, backend: vllm, api_base: '{qwen.url}', thinking: native,\n"
        "         thinking_params: {chat_template_kwargs: {enable_thinking: true}},\n"
        "         thinking_off_params: {chat_template_kwargs: {enable_thinking: false}},\n"
        "         budgets: {thinking: 4096, rating: 4}, sampling: {max_tokens: 48, top_k: 20}}\n",
    )
    llm.run("qwen", [LLMRequest("k0", user("Who wrote Hamlet?"))])
    llm.run("qwen", [LLMRequest("k1", user("Who wrote Hamlet? Think first."))], thinking=True)
    llm.run("qwen", [LLMRequest("r", user("RATE 10"))], kind="rating")
    off, on, rate = qwen.seen()["bodies"]
    assert off["chat_template_kwargs"] == {"enable_thinking": False} and off["max_tokens"] == 48
    assert on["chat_template_kwargs"] == {"enable_thinking": True} and on["max_tokens"] == 4096
    assert rate["max_tokens"] == 4 and rate["chat_template_kwargs"] == {"enable_thinking": False}
    # vLLM's own sampling parameters travel in the body as vLLM reads them
    assert off["top_k"] == 20


def test_requests_in_flight_stay_within_the_models_limit(tmp_path, standins):
    slow = standins("slow", latency=0.2)
    llm = resource(
        tmp_path, f"models:\n  m: {{model: hosted_vllm/m, backend: vllm, api_base: '{slow.url}', max_concurrency: 8}}\n"
    )
    out = llm.run("m", [LLMRequest(str(i), user(f"question {i}")) for i in range(48)])
    assert all(r.ok for r in out) and [r.key for r in out] == [str(i) for i in range(48)]
    assert 4 <= slow.seen()["peak"] <= 8
    # the resource's cap narrows the model's own limit
    capped = resource(
        tmp_path, f"models:\n  m: {{model: hosted_vllm/m, backend: vllm, api_base: '{slow.url}'}}\n", max_concurrency=2
    )
    fresh = standins("fresh", latency=0.1)
    capped = capped.model_copy(update={"api_base": None, "server": VLLMServerResource(attach_url=fresh.url)})
    capped.run("m", [LLMRequest(str(i), user(f"another {i}")) for i in range(10)])
    assert fresh.seen()["peak"] == 2


def test_faults_are_retried_or_counted_and_no_finished_item_is_asked_again(tmp_path, standins):
    flaky = standins("flaky", latency=0.02, faults=0.2, stall=5.0)
    registry = f"models:\n  m: {{model: hosted_vllm/m, backend: vllm, api_base: '{flaky.url}', max_concurrency: 32}}\n"
    reqs = [LLMRequest(str(i), user(f"item {i} of the run")) for i in range(250)]
    expected = [f"flaky: item {i} of the run" for i in range(250)]

    # Without retries a fifth of the items fail: an error keeps no text; an empty answer is
    # kept as the model's (a parser may reject it) and counted.
    once = resource(tmp_path, registry, max_retries=0, request_timeout=1.0)
    stats = CallStats()
    first = once.run("m", reqs, stats=stats)
    failed = [r for r in first if not r.ok]
    empty = [r for r in first if r.ok and r.text == ""]
    assert 20 <= len(failed) + len(empty) <= 75 and failed and empty
    assert all(r.text is None and r.value is None for r in failed)
    assert stats.errors == len(failed) and stats.empty_answers == len(empty)
    seen = flaky.seen()
    assert set(seen["faulted"]) == set(FAULTS)
    assert sum(seen["answered"].values()) == len(reqs) - len(failed) - len(empty)

    # Reruns with retries ask only what is not finished (errors and empty answers are not
    # cached), until every item has its answer; nothing finished is asked twice.
    again = resource(tmp_path, registry, max_retries=8, request_timeout=1.0)
    unfinished = len(failed) + len(empty)
    for _ in range(4):
        stats = CallStats()
        out = again.run("m", reqs, stats=stats)
        assert stats.errors == 0 and stats.cached == len(reqs) - unfinished
        unfinished = stats.empty_answers
        if not unfinished:
            break
    assert [r.text for r in out] == expected
    seen = flaky.seen()
    assert sorted(seen["answered"].values()) == [1] * len(reqs)
    assert sum(seen["asked"].values()) == len(reqs) + sum(seen["faulted"].values())


def test_a_rerun_from_the_cache_sends_nothing(tmp_path, standins):
    server = standins("s")
    llm = resource(
        tmp_path, f"models:\n  m: {{model: hosted_vllm/m, backend: vllm, api_base: '{server.url}'}}\n", chunk_size=300
    )
    reqs = [LLMRequest(str(i), user(f"passage {i}"), sample=i % 3) for i in range(1000)]
    first = llm.run("m", reqs)
    stats = CallStats()
    chunks = list(llm.stream("m", reqs, stats=stats))
    assert [len(c) for c in chunks] == [300, 300, 300, 100]
    assert stats.cached == 1000 and sum(server.seen()["asked"].values()) == 1000
    assert [r.text for c in chunks for r in c] == [r.text for r in first]


def test_cost_comes_from_litellms_price_list_where_the_model_is_priced(tmp_path, standins):
    api = standins("api")
    llm = resource(
        tmp_path,
        "models:\n"
        f"  mini: {{model: openai/gpt-4o-mini, backend: api, api_base: '{api.url}'}}\n"
        f"  own: {{model: hosted_vllm/own, backend: vllm, api_base: '{api.url}'}}\n",
    )
    stats = CallStats()
    out = llm.run("mini", [LLMRequest(str(i), user(f"q {i}")) for i in range(4)], stats=stats)
    prompt, completion = sum(r.prompt_tokens for r in out), sum(r.completion_tokens for r in out)
    expected = sum(
        litellm.cost_per_token(model="openai/gpt-4o-mini", prompt_tokens=prompt, completion_tokens=completion)
    )
    assert stats.cost_usd == pytest.approx(expected) and stats.cost_usd > 0 and stats.unpriced_calls == 0
    llm.run("mini", [LLMRequest(str(i), user(f"q {i}")) for i in range(4)], stats=stats)  # cached: free
    assert stats.cost_usd == pytest.approx(expected)
    own = CallStats()
    llm.run("own", [LLMRequest("x", user("q"))], stats=own)
    assert own.cost_usd == 0 and own.unpriced_calls == 1
    assert own.as_metadata()["llm/unpriced_calls"] == 1
