import json

import dagster as dg
import litellm
import pytest

from resources import llm as llm_mod
from resources.llm import CallStats, LLMRequest, LLMResource, ParseError, ScoreRequest, load_registry
from resources.llm.faults import NoAnswers


def write(tmp_path, text):
    p = tmp_path / "models.yaml"
    p.write_text(text)
    return str(p)


def test_registry_errors_name_the_alias(tmp_path):
    with pytest.raises(ValueError, match="'broken' needs a 'model' string"):
        load_registry(write(tmp_path, "models:\n  broken: {backend: api}\n"))
    with pytest.raises(ValueError, match="unknown keys \\['tempreature'\\]"):
        load_registry(write(tmp_path, "models:\n  a: {model: x/y, tempreature: 1}\n"))
    path = write(tmp_path, "models:\n  a: {model: x/y}\nroles:\n  quit: {labelers: [a, ghost]}\n")
    with pytest.raises(ValueError, match="unknown model alias 'ghost'"):
        llm_mod.load_roles(path)


def test_default_registry_is_valid():
    reg = load_registry()
    assert reg["smollm2"].model == "local/smollm2-135m-instruct"
    assert llm_mod.role_aliases("quit.labelers") == ["smollm2"]


def ask(question):
    return [{"role": "user", "content": f"Answer in a few words\n\nQuestion: {question}\nAnswer:"}]


def test_calls_are_cached_by_messages_and_sample_index(scripted_llm, tmp_path, monkeypatch):
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("SCRIPTED_LLM_LOG", str(log))
    stats = CallStats()
    reqs = [LLMRequest("a", ask("Capital of France?")), LLMRequest("b", ask("Capital of France?"), sample=1)]
    first = scripted_llm.run("smollm2", reqs, stats=stats)
    assert [r.value for r in first] == ["Paris", "Paris"]
    again = scripted_llm.run("smollm2", reqs, stats=stats)
    assert [r.cached for r in again] == [True, True]
    assert stats.calls == 4 and stats.cached == 2
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert sorted(x["seed"] for x in lines) == [0, 1]  # two distinct model calls, none repeated
    meta = stats.as_metadata()
    assert meta["llm/served_from_cache"] == 2 and meta["llm/sent_to_model"] == 2
    assert meta["llm/prompt_tokens"] > 0


def test_few_shot_prompts_are_cached_too(scripted_llm):
    shots = []
    for q, a in [("Capital of Peru?", "Lima"), ("Capital of Chile?", "Santiago"), ("Capital of Spain?", "Madrid")]:
        shots += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    msgs = [{"role": "system", "content": "Answer briefly."}, *shots, *ask("Capital of France?")]
    stats = CallStats()
    for _ in range(2):
        scripted_llm.run("smollm2", [LLMRequest("x", msgs)], stats=stats)
    assert stats.cached == 1


def test_unparsable_output_is_kept_with_raw_text(scripted_llm):
    stats = CallStats()

    def parse(text):
        raise ParseError("not what we wanted")

    [r] = scripted_llm.run("smollm2", [LLMRequest("x", ask("Capital of France?"))], parse=parse, stats=stats)
    assert r.text == "Paris" and r.error.startswith("unparsable") and not r.ok
    assert stats.parse_failures == 1


def test_transient_errors_are_retried_then_reported(scripted_llm, monkeypatch):
    calls = {"n": 0}
    real = litellm.acompletion

    async def flaky(**kwargs):
        calls["n"] += 1
        if calls["n"] < 3:
            raise litellm.RateLimitError("slow down", llm_provider="scripted", model="rules")
        return await real(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", flaky)
    [r] = scripted_llm.run("smollm2", [LLMRequest("x", ask("Capital of France? retry"))])
    assert r.value == "Paris" and calls["n"] == 3

    async def always(**kwargs):
        raise litellm.RateLimitError("slow down", llm_provider="scripted", model="rules")

    monkeypatch.setattr(litellm, "acompletion", always)
    stats = CallStats()
    # x, answered above, comes from the cache: the call has an answer, so y's failure is a result
    x, y = scripted_llm.run(
        "smollm2", [LLMRequest("x", ask("Capital of France? retry")), LLMRequest("y", ask("never"))], stats=stats
    )
    assert x.cached and x.value == "Paris"
    assert y.error.startswith("gave up after 5 tries") and y.text is None and stats.errors == 1


ACOMPLETION = litellm.acompletion


def refuse(monkeypatch, what: str) -> None:
    """The scripted model rejects every request whose prompt holds ``what`` (not worth a retry)."""

    async def refusing(**kwargs):
        if what in kwargs["messages"][-1]["content"]:
            raise litellm.BadRequestError(f"prompt {what!r} is too long", model="rules", llm_provider="scripted")
        return await ACOMPLETION(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", refusing)


def test_a_call_none_of_whose_items_got_an_answer_raises_after_counting_them(scripted_llm, monkeypatch):
    refuse(monkeypatch, "Capital")
    stats = CallStats()
    reqs = [LLMRequest(str(i), ask(f"Capital of country {i}?")) for i in range(3)]
    with pytest.raises(NoAnswers, match=r"smollm2: none of the 3 items asked got an answer.*too long") as err:
        scripted_llm.run("smollm2", reqs, stats=stats)
    assert "BadRequestError" in str(err.value) and stats.errors == 3 and stats.calls == 3
    with pytest.raises(NoAnswers):
        list(scripted_llm.stream("smollm2", reqs))
    # one answer, from the model or from the cache, and the failures are results again
    refuse(monkeypatch, "country 1?")
    assert [r.ok for r in scripted_llm.run("smollm2", reqs)] == [True, False, True]
    refuse(monkeypatch, "Capital")
    assert [r.cached for r in scripted_llm.run("smollm2", reqs)] == [True, False, True]
    assert scripted_llm.run("smollm2", []) == []


def test_a_small_follow_up_call_of_a_step_that_got_answers_keeps_its_failures_as_results(scripted_llm, monkeypatch):
    """The rule is the step's: a retry of the one item a server refused, sharing the step's
    stats, leaves it a reject; the same call on its own stats is a step with no answer."""
    step = CallStats()
    first = [LLMRequest(str(i), ask(f"Capital of land {i}?")) for i in range(3)]
    assert all(r.ok for r in scripted_llm.run("smollm2", first, stats=step))
    refuse(monkeypatch, "Capital")
    retry = [LLMRequest("r", ask("Capital of land 9?"))]
    [result] = scripted_llm.run("smollm2", retry, stats=step)
    assert not result.ok and result.text is None and step.errors == 1 and step.calls == 4
    with pytest.raises(NoAnswers, match="none of the 1 items"):
        scripted_llm.run("smollm2", retry, stats=CallStats())


def test_replies_that_do_not_parse_are_answers(scripted_llm):
    def parse(text):
        raise ParseError("not a number")

    out = scripted_llm.run("smollm2", [LLMRequest(str(i), ask(f"Capital {i}?")) for i in range(2)], parse=parse)
    assert all(r.error.startswith("unparsable") and r.text for r in out)


def test_scores_none_of_which_came_back_raise_too(scripted_llm):
    # litellm drops echo from a custom provider's text completion: no prompt log-probabilities
    with pytest.raises(NoAnswers, match="none of the 2 items asked got an answer"):
        scripted_llm.score("smollm2", [ScoreRequest(str(i), "The capital of France is", " Paris") for i in range(2)])


def test_a_step_that_got_answers_keeps_a_later_calls_failures_as_results(scripted_llm, monkeypatch):
    """In a Dagster step the account is the step's, whatever stats each call keeps: the judge's
    one failed call after the labeler's answers is a reject, not a failed step."""

    @dg.asset
    def labels(llm: LLMResource) -> list[bool]:
        answered = llm.run("smollm2", [LLMRequest(str(i), ask(f"Capital of isle {i}?")) for i in range(2)])
        refuse(monkeypatch, "Capital")
        judged = llm.run("smollm2", [LLMRequest("j", ask("Capital of isle 7?"))], stats=CallStats())
        return [r.ok for r in answered + judged]

    result = dg.materialize([labels], resources={"llm": scripted_llm})
    assert result.output_for_node("labels") == [True, True, False]


def test_a_step_whose_every_call_failed_is_not_materialized(scripted_llm, monkeypatch):
    refuse(monkeypatch, "Capital")

    @dg.asset
    def answers(llm: LLMResource) -> list[str]:
        return [r.text for r in llm.run("smollm2", [LLMRequest(str(i), ask(f"Capital {i}?")) for i in range(4)])]

    result = dg.materialize([answers], resources={"llm": scripted_llm}, raise_on_error=False)
    assert not result.success and result.get_asset_materialization_events() == []
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert "none of the 4 items asked got an answer" in failure.step_failure_data.error.to_string()


def test_unknown_alias_is_a_clear_error(scripted_llm):
    with pytest.raises(KeyError, match="'nope' is not in"):
        scripted_llm.run("nope", [])


def test_thinking_blocks_are_stripped():
    assert llm_mod.strip_thinking("<think>hmm\nmaybe</think>\nParis") == "Paris"


def test_cot_is_the_thinking_switch_without_a_native_one(scripted_llm):
    assert scripted_llm.wants_cot_prompt("smollm2", thinking=True)
    assert not scripted_llm.wants_cot_prompt("smollm2", thinking=False)


def test_concurrent_calls_keep_request_order(tmp_path):
    from tests import scripted

    scripted.install()
    registry = write(tmp_path, "models:\n  fast: {model: scripted/rules, backend: api}\n")
    res = LLMResource(registry_path=registry, cache_dir=str(tmp_path / "c"), max_concurrency=4)
    scripted.install()
    qs = [f"Capital of {'France' if i % 2 else 'Peru'} {i}?" for i in range(12)]
    out = res.run("fast", [LLMRequest(str(i), ask(q)) for i, q in enumerate(qs)])
    assert [r.key for r in out] == [str(i) for i in range(12)]
    assert [r.value for r in out] == ["NO ANSWER" if i % 2 == 0 else "Paris" for i in range(12)]


@pytest.mark.slow
def test_first_token_logprobs_match_llama_cpps_own():
    # The fast path reads the last prompt position's logits; llama.cpp's own logprobs need a
    # logits_all context. Both must give the same distribution.
    from resources.llm import EmbeddedLlama

    embedded = EmbeddedLlama()
    messages = [
        {
            "role": "user",
            "content": "Passage: Paris is the capital of France.\nDoes it name a capital? Reply yes or no.",
        }
    ]
    fast = embedded.chat("smollm2-135m-instruct", messages, {"logprobs": True, "top_logprobs": 5, "max_tokens": 1})
    slow = embedded.llama("smollm2-135m-instruct", scoring=True).create_chat_completion(
        messages=messages, max_tokens=1, logprobs=True, top_logprobs=5, temperature=0
    )
    fast_top = {t["token"]: t["logprob"] for t in fast["choices"][0]["logprobs"]["content"][0]["top_logprobs"]}
    slow_top = {t["token"]: float(t["logprob"]) for t in slow["choices"][0]["logprobs"]["content"][0]["top_logprobs"]}
    assert list(fast_top) == list(slow_top)
    assert all(abs(fast_top[t] - slow_top[t]) < 1e-3 for t in fast_top)
    assert fast["choices"][0]["message"]["content"] == slow["choices"][0]["message"]["content"]


@pytest.mark.slow
def test_short_greedy_answers_match_llama_cpps_own_token_by_token():
    # A rating is a few tokens: the fast path generates them one by one from the last
    # logits; llama.cpp's logits_all context must agree on every token and its alternatives.
    from resources.llm import EmbeddedLlama

    embedded = EmbeddedLlama()
    messages = [
        {
            "role": "user",
            "content": "Rate from 0 to 10 how well the passage answers the question."
            "\nQuestion: What is the capital of France?\nPassage: Paris is the capital of France.\nRating:",
        }
    ]
    fast = embedded.chat(
        "smollm2-135m-instruct", messages, {"logprobs": True, "top_logprobs": 5, "max_tokens": 4, "temperature": 0.0}
    )
    slow = embedded.llama("smollm2-135m-instruct", scoring=True).create_chat_completion(
        messages=messages, max_tokens=4, logprobs=True, top_logprobs=5, temperature=0
    )
    fast_tokens = fast["choices"][0]["logprobs"]["content"]
    slow_tokens = slow["choices"][0]["logprobs"]["content"]
    assert fast["choices"][0]["message"]["content"] == slow["choices"][0]["message"]["content"]
    assert len(fast_tokens) == len(slow_tokens) >= 1
    for f, sl in zip(fast_tokens, slow_tokens):
        f_top = {t["token"]: t["logprob"] for t in f["top_logprobs"]}
        s_top = {t["token"]: float(t["logprob"]) for t in sl["top_logprobs"]}
        assert list(f_top) == list(s_top) and all(abs(f_top[t] - s_top[t]) < 1e-3 for t in f_top)


def test_progress_is_logged_at_most_once_per_interval_and_at_the_end(scripted_llm, tmp_path):
    reqs = [LLMRequest(str(i), ask(f"Capital of France, take {i}?")) for i in range(5)]
    lines: list[str] = []
    hourly = LLMResource(
        registry_path=scripted_llm.registry_path, cache_dir=str(tmp_path / "c"), progress_every_seconds=3600.0
    )
    hourly.run("smollm2", reqs, log=lines.append)
    # an hour has not passed: only the closing line, with done/total and the rate
    assert len(lines) == 1 and lines[0].startswith("smollm2: 5/5 calls, ") and lines[0].endswith(" calls/s")


def test_a_steps_pool_follows_the_backends_of_its_roles(tmp_path):
    from resources.llm.registry import llm_pool

    path = write(
        tmp_path,
        "models:\n"
        "  small: {model: local/smollm2-135m-instruct, backend: embedded}\n"
        "  qwen: {model: hosted_vllm/qwen, backend: vllm}\n"
        "  gemma: {model: hosted_vllm/gemma, backend: vllm}\n"
        "  gpt: {model: openai/gpt-4o, backend: api}\n"
        "roles:\n  quit: {labelers: [qwen, gemma], judge: gpt}\n  recor: {builder: gpt, judge: small}\n",
    )
    assert llm_pool("quit.labelers", path=path) == "llm_vllm"  # served partitions side by side
    assert llm_pool("quit.judge", path=path) == "llm_api"
    assert llm_pool("quit", path=path) == "llm_vllm"
    assert llm_pool("recor", path=path) == "llm_embedded"  # one in-process step at a time


ROLES = (
    "models:\n"
    "  qwen: {model: hosted_vllm/qwen, backend: vllm, verdicts: advisory}\n"
    "  gpt: {model: openai/gpt-4o, backend: api}\n"
    "roles:\n  quit: {labelers: [qwen, gpt], judge: gpt}\n"
)


def test_a_model_handle_binds_the_alias_its_entry_and_the_resource(tmp_path):
    llm = LLMResource(registry_path=write(tmp_path, ROLES), cache_dir=str(tmp_path / "cache"))
    judge = llm.model("quit.judge")
    assert (judge.alias, judge.spec.model, judge.binding, judge.llm) == ("gpt", "openai/gpt-4o", True, llm)
    assert [(m.alias, m.binding) for m in llm.models("quit.labelers")] == [("qwen", False), ("gpt", True)]
    assert llm.named("qwen").spec == load_registry(llm.registry_path)["qwen"]
    assert repr(judge) == "Model(gpt: openai/gpt-4o)"
    with pytest.raises(KeyError, match="'ghost' is not in"):
        llm.named("ghost")


def test_the_registry_is_parsed_once_per_path_and_again_once_edited(tmp_path, monkeypatch):
    from resources.llm import registry

    parses = []
    read = registry.read_yaml
    monkeypatch.setattr(registry, "read_yaml", lambda path: parses.append(path) or read(path))
    path = write(tmp_path, ROLES)
    for _ in range(3):  # what the definitions do per asset: entries, roles, aliases, pools
        load_registry(path), llm_mod.load_roles(path), llm_mod.role_aliases("quit.judge", path)
        registry.llm_pool("quit", path=path)
    assert parses == [path]
    write(tmp_path, ROLES.replace("judge: gpt", "judge: qwen"))
    assert llm_mod.role_aliases("quit.judge", path) == ["qwen"] and parses == [path, path]
    # a copy each time: a caller changing what it was given changes nothing for the next
    load_registry(path).clear()
    llm_mod.load_roles(path)["quit"]["judge"] = "gpt"
    assert "qwen" in load_registry(path) and llm_mod.role_aliases("quit.judge", path) == ["qwen"]


def test_a_run_cannot_point_the_llm_resource_at_another_registry_than_the_definitions(tmp_path):
    import dagster as dg

    loaded = write(tmp_path, ROLES)
    other = tmp_path / "other.yaml"
    other.write_text(ROLES.replace("qwen", "llama"))
    context = dg.build_init_resource_context()
    LLMResource(registry_path=loaded, definitions_registry=loaded).setup_for_execution(context)
    LLMResource(registry_path=str(other)).setup_for_execution(context)  # no definitions: a script's own
    with pytest.raises(dg.Failure, match="BENCHFOUNDRY_MODELS"):
        LLMResource(registry_path=str(other), definitions_registry=loaded).setup_for_execution(context)
    # the code location binds both to the registry it computed its partitions from
    from pipelines.resources import default_resources

    bound = default_resources()["llm"]
    assert bound.registry_path == bound.definitions_registry == llm_mod.REGISTRY_PATH


def test_the_embedded_models_threads_come_from_the_environment_for_prompts_and_answers(monkeypatch):
    from resources.llm import EmbeddedLlama
    from resources.llm.embedded import THREADS_VARIABLE

    monkeypatch.setenv(THREADS_VARIABLE, "1")
    model = EmbeddedLlama().llama("smollm2-135m-instruct")
    # the prompt's batch too: llama-cpp-python gives it every core unless told
    assert (model.n_threads, model.n_threads_batch) == (1, 1)
    monkeypatch.setenv(THREADS_VARIABLE, "")
    assert EmbeddedLlama().n_threads >= 1
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(THREADS_VARIABLE, bad)
        with pytest.raises(ValueError, match=f"{THREADS_VARIABLE}='{bad}'"):
            EmbeddedLlama()
