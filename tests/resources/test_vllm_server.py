"""The vLLM serving path, exercised against llama.cpp's OpenAI-compatible server serving
the embedded model (it speaks the protocol vLLM speaks; the session's ``llama_cpp_server``),
and the resource's own start and stop of a server command."""

import json
import sys

import dagster as dg
import pytest

from resources.llm import LLMRequest, LLMResource
from resources.vllm_server import VLLMServerResource, wait_healthy
from tests.servers import free_port

QUESTIONS = ["Which city is the capital of France?", "What is the largest planet in the Solar System?"]


@pytest.mark.slow
def test_served_model_answers_like_the_in_process_one(tmp_path, llama_cpp_server):
    registry = tmp_path / "models.yaml"
    registry.write_text(
        "models:\n"
        # llama.cpp's server defaults to a repeat penalty of 1.1 where vLLM and the in-process
        # model use none; the stand-in is told to match.
        "  served: {model: hosted_vllm/smollm2, backend: vllm,"
        " sampling: {temperature: 0.0, max_tokens: 16, extra_body: {repeat_penalty: 1.0}}}\n"
        "  local: {model: local/smollm2-135m-instruct, backend: embedded, sampling: {temperature: 0.0, max_tokens: 16}}\n"
    )

    @dg.asset
    def answers(llm: LLMResource) -> dict:
        reqs = [LLMRequest(str(i), [{"role": "user", "content": q}]) for i, q in enumerate(QUESTIONS)]
        served = llm.run("served", reqs)
        local = llm.run("local", reqs)
        return {"served": [r.text for r in served], "local": [r.text for r in local],
                "errors": [r.error for r in served + local]}

    llm = LLMResource(registry_path=str(registry), cache_dir=str(tmp_path / "cache"),
                      server=VLLMServerResource(attach_url=llama_cpp_server.url, startup_timeout=30))
    result = dg.materialize([answers], resources={"llm": llm, "io_manager": dg.mem_io_manager})
    out = result.output_for_node("answers")
    assert out["errors"] == [None] * 4
    assert out["served"] == out["local"]
    assert all(out["served"])


def test_the_resource_starts_its_server_command_and_stops_it_after_the_run(tmp_path):
    # A stand-in server: a static file answers /v1/models as an OpenAI-compatible server does.
    (tmp_path / "site" / "v1").mkdir(parents=True)
    (tmp_path / "site" / "v1" / "models").write_text(json.dumps({"object": "list", "data": [{"id": "stand-in"}]}))
    port = free_port()
    server = VLLMServerResource(model="stand-in", port=port, startup_timeout=60, log_path=str(tmp_path / "server.log"),
                                command=f"{sys.executable} -m http.server {{port}} --bind {{host}} --directory {tmp_path / 'site'}")

    @dg.asset
    def seen(llm: LLMResource) -> list:
        return llm.server.served_models

    llm = LLMResource(cache_dir=str(tmp_path / "cache"), server=server)
    result = dg.materialize([seen], resources={"llm": llm, "io_manager": dg.mem_io_manager})
    assert result.output_for_node("seen") == ["stand-in"]
    # the server the resource started is gone after the run
    with pytest.raises(TimeoutError):
        wait_healthy(f"http://127.0.0.1:{port}/v1", timeout=2)


def test_attach_to_nothing_is_a_clear_error():
    with pytest.raises(TimeoutError, match="no healthy model server at http://127.0.0.1:9/v1"):
        wait_healthy("http://127.0.0.1:9/v1", timeout=1)


def test_start_without_model_is_refused():
    @dg.asset
    def x(llm: LLMResource) -> int:
        return 1

    with pytest.raises(dg.DagsterResourceFunctionError) as err:
        dg.materialize([x], resources={"llm": LLMResource(server=VLLMServerResource()), "io_manager": dg.mem_io_manager})
    assert "needs a model to serve or an attach_url" in str(err.value.__cause__)
