"""The vLLM serving path, exercised against llama.cpp's OpenAI-compatible server serving
the embedded model (it speaks the protocol vLLM speaks)."""

import sys

import dagster as dg
import pytest

from resources.llm import LLMRequest, LLMResource, embedded_model_path
from resources.vllm_server import VLLMServerResource, wait_healthy
from tests.servers import free_port


QUESTIONS = ["Which city is the capital of France?", "What is the largest planet in the Solar System?"]


@pytest.mark.slow
def test_served_model_answers_like_the_in_process_one(tmp_path):
    port = free_port()
    registry = tmp_path / "models.yaml"
    registry.write_text(
        "models:\n"
        # llama.cpp's server defaults to a repeat penalty of 1.1 where vLLM and the in-process
        # model use none; the stand-in is told to match.
        "  served: {model: hosted_vllm/smollm2, backend: vllm,"
        " sampling: {temperature: 0.0, max_tokens: 16, extra_body: {repeat_penalty: 1.0}}}\n"
        "  local: {model: local/smollm2-135m-instruct, backend: embedded, sampling: {temperature: 0.0, max_tokens: 16}}\n"
    )
    server = VLLMServerResource(
        model=embedded_model_path("smollm2-135m-instruct"),
        command=f"{sys.executable} -m llama_cpp.server --model {{model}} --model_alias smollm2 --host {{host}} --port {{port}} --n_ctx 2048",
        port=port, startup_timeout=120, log_path=str(tmp_path / "server.log"),
    )

    @dg.asset
    def answers(llm: LLMResource) -> dict:
        reqs = [LLMRequest(str(i), [{"role": "user", "content": q}]) for i, q in enumerate(QUESTIONS)]
        served = llm.run("served", reqs)
        local = llm.run("local", reqs)
        return {"served": [r.text for r in served], "local": [r.text for r in local],
                "errors": [r.error for r in served + local]}

    llm = LLMResource(registry_path=str(registry), cache_dir=str(tmp_path / "cache"), server=server)
    result = dg.materialize([answers], resources={"llm": llm, "io_manager": dg.mem_io_manager})
    out = result.output_for_node("answers")
    assert out["errors"] == [None] * 4
    assert out["served"] == out["local"]
    assert all(out["served"])
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
