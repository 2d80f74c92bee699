"""The vLLM serving path against a real vLLM server (the session's ``vllm_server``: vLLM's
CPU build serving the embedded SmolLM2), and the resource's own start, wait and stop of a
server command.

The served model and the in-process one hold the same weights at different precisions: vLLM
runs them in float32, dequantized from the GGUF that llama.cpp runs quantized (Q4_1, with
8-bit activations). They agree closely, not exactly; each bound below leaves room over
what was measured, as its comment says.
"""

import json
import sys

import dagster as dg
import pytest

from assets.common.prompts import load_prompt
from assets.common.verdicts import VERDICT, verdict, yes_probability
from assets.eval.rerankers import upr
from resources.llm import CallStats, LLMRequest, LLMResource, ScoreRequest
from resources.vllm_server import COMMAND_ENV, DEFAULT_COMMAND, VLLMServerResource, server_argv, wait_healthy
from tests import servers
from tests.servers import free_port

QUESTIONS = [
    "Which city is the capital of France?",
    "What is the largest planet in the Solar System?",
    "Who wrote Romeo and Juliet?",
    "What is 2 + 2?",
    "Name a primary colour.",
    "What gas do plants absorb?",
    "How many legs does a spider have?",
    "What is the boiling point of water in Celsius?",
    "What is the chemical symbol for gold?",
    "Who painted the Mona Lisa?",
    "What is the tallest mountain on Earth?",
    "What language is spoken in Brazil?",
]
# Three questions, each with the one passage that answers it among four.
QUERIES = {
    "q1": "Which city is the capital of France?",
    "q2": "What is the largest planet in the Solar System?",
    "q3": "Who wrote Romeo and Juliet?",
}
PASSAGES = {
    "paris": "Paris is the capital and most populous city of France.",
    "jupiter": "Jupiter is the fifth planet from the Sun and the largest in the Solar System.",
    "shakespeare": "Romeo and Juliet is a tragedy written by William Shakespeare early in his career.",
    "bread": "Bread is made from flour, water and yeast, and baked in an oven.",
}
RELEVANT = {"q1": "paris", "q2": "jupiter", "q3": "shakespeare"}


def served_and_local(tmp_path, url: str, max_tokens: int = 8) -> LLMResource:
    """Alias ``served`` answered by the vLLM server, ``local`` by the in-process model."""
    registry = tmp_path / "models.yaml"
    sampling = f"sampling: {{temperature: 0.0, max_tokens: {max_tokens}}}"
    registry.write_text(
        "models:\n"
        f"  served: {{model: hosted_vllm/smollm2, backend: vllm, api_base: {url}, {sampling}}}\n"
        f"  local: {{model: local/smollm2-135m-instruct, backend: embedded, {sampling}}}\n"
    )
    return LLMResource(
        registry_path=str(registry),
        cache_dir=str(tmp_path / "cache"),
        server=VLLMServerResource(attach_url=url, aliases=["served"], startup_timeout=30),
    )


@pytest.mark.slow
def test_served_model_answers_like_the_in_process_one(tmp_path, vllm_server):
    @dg.asset
    def answers(llm: LLMResource) -> dict:
        reqs = [LLMRequest(str(i), [{"role": "user", "content": q}]) for i, q in enumerate(QUESTIONS)]
        served_stats, local_stats = CallStats(), CallStats()
        served = llm.run("served", reqs, stats=served_stats)
        local = llm.run("local", reqs, stats=local_stats)
        return {
            "models": llm.server.served_models,
            "served": [r.text for r in served],
            "local": [r.text for r in local],
            "errors": [r.error for r in served + local],
            "stats": [served_stats, local_stats],
        }

    before = vllm_server.requests_served()
    result = dg.materialize(
        [answers], resources={"llm": served_and_local(tmp_path, vllm_server.url), "io_manager": dg.mem_io_manager}
    )
    out = result.output_for_node("answers")
    assert out["models"] == ["smollm2"]
    assert out["errors"] == [None] * 2 * len(QUESTIONS)
    # every served call reached the server, none came from the cache
    assert vllm_server.requests_served() - before == len(QUESTIONS)
    assert [(s.calls, s.cached) for s in out["stats"]] == [(len(QUESTIONS), 0)] * 2
    assert all(out["served"])
    # greedy, 8 tokens: 16 of 20 such questions gave the same text; the others part after
    # a few words, where two tokens were nearly tied
    same = [a == b for a, b in zip(out["served"], out["local"])]
    assert sum(same) >= 0.75 * len(QUESTIONS), list(zip(out["served"], out["local"]))


@pytest.mark.slow
def test_upr_reads_the_question_log_probabilities_from_vllm_like_the_in_process_model(tmp_path, vllm_server):
    llm = served_and_local(tmp_path, vllm_server.url)
    prompt = load_prompt("eval", "upr")
    reqs = [
        ScoreRequest(f"{q} {p}", prompt.user.format(passage=text), prompt.continuation.format(question=question))
        for q, question in QUERIES.items()
        for p, text in PASSAGES.items()
    ]
    stats = CallStats()
    before = vllm_server.requests_served()
    served = llm.score("served", reqs, stats=stats)
    local = llm.score("local", reqs)
    assert [r.error for r in served + local] == [None] * 2 * len(reqs)
    assert vllm_server.requests_served() - before == len(reqs)
    assert (stats.calls, stats.cached) == (len(reqs), 0)
    for req, s, loc in zip(reqs, served, local):
        # one value per question token, as llama.cpp's tokenizer cuts it, and the same prompt
        assert len(s.value) == len(loc.value) > 3 and s.prompt_tokens == loc.prompt_tokens, req.key
        # measured: at most 0.28 nats on a token, 0.08 on the mean over 12 such pairs
        assert max(abs(a - b) for a, b in zip(s.value, loc.value)) < 0.5, (req.key, s.value, loc.value)
        assert abs(sum(s.value) / len(s.value) - sum(loc.value) / len(loc.value)) < 0.15, req.key

    # Reranking through UPR: the relevant passage comes first although it was retrieved last.
    head = {q: [p for p in PASSAGES if p != RELEVANT[q]] + [RELEVANT[q]] for q in QUERIES}
    for alias in ("served", "local"):
        ranked = upr(llm.named(alias), QUERIES, head, PASSAGES, CallStats())
        assert ranked.unscored == 0
        assert {q: ids[0] for q, ids in ranked.lists.items()} == RELEVANT, alias


@pytest.mark.slow
def test_first_token_verdicts_read_vllms_top_logprobs_like_the_in_process_models(tmp_path, vllm_server):
    llm = served_and_local(tmp_path, vllm_server.url)
    prompt = load_prompt("eval", "relevance")
    reqs = [
        LLMRequest(f"{q} {p}", prompt.messages(question=question, passage=text), params=VERDICT)
        for q, question in QUERIES.items()
        for p, text in PASSAGES.items()
    ]
    before = vllm_server.requests_served()
    served = llm.run("served", reqs)
    local = llm.run("local", reqs)
    assert [r.error for r in served + local] == [None] * 2 * len(reqs)
    assert vllm_server.requests_served() - before == len(reqs)
    for req, s, loc in zip(reqs, served, local):
        assert len(s.top_logprobs) == VERDICT["top_logprobs"], req.key
        p_served, p_local = yes_probability(s.top_logprobs), yes_probability(loc.top_logprobs)
        assert p_served is not None and verdict(s) is not None
        # measured: at most 0.031 apart over these 12 items
        assert abs(p_served - p_local) < 0.06, (req.key, p_served, p_local)
        assert verdict(s) == verdict(loc), req.key


def test_the_resource_starts_the_deployments_server_command_and_stops_it_after_the_run(tmp_path, monkeypatch):
    # A stand-in server: a static file answers /v1/models as an OpenAI-compatible server does.
    (tmp_path / "site" / "v1").mkdir(parents=True)
    (tmp_path / "site" / "v1" / "models").write_text(json.dumps({"object": "list", "data": [{"id": "stand-in"}]}))
    port = free_port()
    monkeypatch.setenv(
        COMMAND_ENV, f"{sys.executable} -m http.server {{port}} --bind {{host}} --directory {tmp_path / 'site'}"
    )
    server = VLLMServerResource(model="stand-in", port=port, startup_timeout=60, log_path=str(tmp_path / "server.log"))

    @dg.asset
    def seen(llm: LLMResource) -> list:
        return llm.server.served_models

    llm = LLMResource(cache_dir=str(tmp_path / "cache"), server=server)
    result = dg.materialize([seen], resources={"llm": llm, "io_manager": dg.mem_io_manager})
    assert result.output_for_node("seen") == ["stand-in"]
    # the server the resource started is gone after the run
    with pytest.raises(TimeoutError):
        wait_healthy(f"http://127.0.0.1:{port}/v1", timeout=2)


def test_a_server_that_exits_while_awaited_fails_with_its_log(tmp_path):
    server = VLLMServerResource(model="m", port=free_port(), startup_timeout=60, log_path=str(tmp_path / "server.log"))
    server.start(command=f"{sys.executable} -c \"print('no weights for {{model}}'); raise SystemExit(3)\"")
    with pytest.raises(RuntimeError, match=r"(?s)exited with code 3.*no weights for m"):
        server.wait()


def test_run_config_cannot_choose_the_program_or_add_arguments(tmp_path):
    """Anyone who reaches the web UI can launch a run with any run config: a server command
    there would run any program. Only vetted values reach the server, one argument each."""
    marker = tmp_path / "ran"

    @dg.asset
    def x(llm: LLMResource) -> int:
        return 1

    with pytest.raises(dg.DagsterInvalidConfigError, match="command"):
        dg.materialize(
            [x],
            resources={"llm": LLMResource(cache_dir=str(tmp_path / "cache")), "io_manager": dg.mem_io_manager},
            run_config={"resources": {"llm": {"config": {"servers": [{"model": "m", "command": f"touch {marker}"}]}}}},
        )
    assert not marker.exists()
    for bad in ("--trust-remote-code", "m --trust-remote-code", "m;touch x", ""):
        if bad:
            with pytest.raises(ValueError, match="model"):
                VLLMServerResource(model=bad)
    with pytest.raises(ValueError, match="dtype"):
        VLLMServerResource(model="m", dtype="float32 --trust-remote-code")
    server = VLLMServerResource(
        model="Qwen/Qwen3-8B", port=8001, dtype="bfloat16", max_model_len=4096, served_model_name="Qwen/Qwen3-8B"
    )
    assert server_argv(DEFAULT_COMMAND, server.model, server.host, server.port, server.options()) == [
        "vllm",
        "serve",
        "Qwen/Qwen3-8B",
        "--host",
        "127.0.0.1",
        "--port",
        "8001",
        "--dtype",
        "bfloat16",
        "--max-model-len",
        "4096",
        "--served-model-name",
        "Qwen/Qwen3-8B",
    ]
    # a placeholder fills its own argument, whatever the template around it
    assert server_argv("serve --model={model} {host}", "a b", "h", 1, []) == ["serve", "--model=a b", "h"]


def test_a_failing_servers_log_reaches_the_error_with_credentials_masked(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_abcdefghijklmnop")
    server = VLLMServerResource(model="m", port=free_port(), startup_timeout=60, log_path=str(tmp_path / "server.log"))
    # the server prints a secret it holds in this environment, and one only it knows
    server.start(
        command=f"{sys.executable} -c \"import os; print('token', os.environ['HF_TOKEN']); "
        "print('AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENG'); raise SystemExit(1)\""
    )
    with pytest.raises(RuntimeError) as err:
        server.wait()
    message = str(err.value)
    assert "exited with code 1" in message and "[redacted HF_TOKEN]" in message
    assert "hf_abcdefghijklmnop" not in message and "wJalrXUtnFEMIK7MDENG" not in message


def test_attach_to_nothing_is_a_clear_error():
    with pytest.raises(TimeoutError, match="no healthy model server at http://127.0.0.1:9/v1"):
        wait_healthy("http://127.0.0.1:9/v1", timeout=1)


def test_start_without_model_is_refused():
    @dg.asset
    def x(llm: LLMResource) -> int:
        return 1

    with pytest.raises(dg.DagsterResourceFunctionError) as err:
        dg.materialize(
            [x], resources={"llm": LLMResource(server=VLLMServerResource()), "io_manager": dg.mem_io_manager}
        )
    assert "needs a model to serve or an attach_url" in str(err.value.__cause__)


def test_without_the_vllm_virtualenv_the_tests_that_need_it_are_told_to_build_it(tmp_path, monkeypatch):
    monkeypatch.setattr(servers, "VLLM_PYTHON", tmp_path / "missing" / "python")
    assert "run `make vllm`" in servers.vllm_missing()
    # the session start launches nothing then, and its stop at the end is harmless
    server = servers.start_vllm(tmp_path)
    server.stop()
    assert not (tmp_path / "server.log").exists()
