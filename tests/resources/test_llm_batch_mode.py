"""A vllm entry in batch mode answers through its batch runner exactly as the HTTP path
would: the same answers, cached under the same keys, failures counted the same way."""

import sys

import pytest
import yaml

from resources.llm import CallStats, LLMRequest, LLMResource
from resources.llm.batch import vllm_batch_command
from resources.llm.faults import NoAnswers
from tests import servers

RUNNER = [sys.executable, "-m", "tests.standin_batch", "-i", "{input}", "-o", "{output}", "--name", "vllm-a"]


def registry(tmp_path, url: str, runner: list[str], batch_size: int = 65536) -> str:
    command = "[" + ", ".join(f"'{a}'" for a in runner) + "]"
    path = tmp_path / "models.yaml"
    path.write_text(f"""models:
  served:
    model: hosted_vllm/served-labeler
    backend: vllm
    api_base: {url}
    sampling: {{temperature: 0.0, max_tokens: 8}}
  batched:
    model: hosted_vllm/served-labeler
    backend: vllm
    mode: batch
    batch_command: {command}
    batch_size: {batch_size}
    sampling: {{temperature: 0.0, max_tokens: 8}}
""")
    return str(path)


def requests(n: int, offset: int = 0) -> list[LLMRequest]:
    return [
        LLMRequest(f"p{i}", [{"role": "user", "content": f"passage {i} mentions the summit"}])
        for i in range(offset, offset + n)
    ]


def test_batch_answers_equal_the_http_paths_and_share_its_cache_keys(tmp_path, standins):
    server = standins("vllm-a")
    reg = registry(tmp_path, server.url, RUNNER, batch_size=4)
    batched = LLMResource(registry_path=reg, cache_dir=str(tmp_path / "batch-cache"))
    served = LLMResource(registry_path=reg, cache_dir=str(tmp_path / "http-cache"))
    stats = CallStats()
    by_batch = batched.run("batched", requests(10), stats=stats)
    by_http = served.run("served", requests(10))
    assert (
        [r.text for r in by_batch]
        == [r.text for r in by_http]
        == [f"vllm-a: passage {i} mentions the summit" for i in range(10)]
    )
    assert [r.key for r in by_batch] == [f"p{i}" for i in range(10)]
    assert stats.calls == 10 and stats.errors == 0 and stats.prompt_tokens > 0
    assert stats.as_metadata()["llm_cache/entries"] == 10

    # The same model string and parameters: the HTTP entry finds every batch answer cached.
    again = LLMResource(registry_path=reg, cache_dir=str(tmp_path / "batch-cache"))
    before = server.seen()
    cached = again.run("served", requests(10))
    assert all(r.cached for r in cached) and server.seen() == before


def test_failed_batch_calls_are_counted_and_asked_again_on_a_rerun(tmp_path):
    reg = registry(tmp_path, "http://127.0.0.1:9/v1", RUNNER + ["--fail-every", "3"])
    llm = LLMResource(registry_path=reg, cache_dir=str(tmp_path / "cache"))
    stats = CallStats()
    results = llm.run("batched", requests(9), stats=stats)
    failed = [r.key for r in results if not r.ok]
    assert failed == ["p2", "p5", "p8"] and stats.errors == 3
    assert all(r.error.startswith("the batch runner answered with an error") for r in results if not r.ok)

    # Failed calls were not cached: the rerun sends exactly those three to the runner.
    rerun_stats = CallStats()
    rerun = LLMResource(
        registry_path=registry(tmp_path, "http://127.0.0.1:9/v1", RUNNER), cache_dir=str(tmp_path / "cache")
    )
    again = rerun.run("batched", requests(9), stats=rerun_stats)
    assert all(r.ok for r in again) and rerun_stats.cached == 6 and rerun_stats.calls == 9


def test_a_runner_that_dies_fails_every_call_of_its_file_and_the_run_goes_on(tmp_path):
    # two answers from an earlier run are in the cache: the call has answers, its failures are results
    healthy = registry(tmp_path, "http://127.0.0.1:9/v1", RUNNER)
    LLMResource(registry_path=healthy, cache_dir=str(tmp_path / "cache")).run("batched", requests(2))
    reg = registry(tmp_path, "http://127.0.0.1:9/v1", RUNNER + ["--exit-code", "3"])
    llm = LLMResource(registry_path=reg, cache_dir=str(tmp_path / "cache"))
    stats = CallStats()
    results = llm.run("batched", requests(6), stats=stats)
    assert [r.cached for r in results] == [True, True, False, False, False, False]
    assert stats.errors == 4 and all(
        "the batch runner failed: batch runner exited with code 3" in r.error for r in results[2:]
    )
    # with none answered, the step stops instead
    with pytest.raises(NoAnswers, match="none of the 4 items asked.*batch runner exited with code 3"):
        llm.run("batched", requests(4, offset=6))


@pytest.mark.parametrize(
    "entry, message",
    [
        ("mode: batch\n    batch_command: [run]", "must name {input} and {output}"),
        ("mode: batch", "needs a batch_command"),
        ("mode: offline", "mode must be http or batch"),
    ],
)
def test_the_registry_rejects_a_batch_entry_it_cannot_run(tmp_path, entry, message):
    from resources.llm import load_registry

    path = tmp_path / "models.yaml"
    path.write_text(f"models:\n  m:\n    model: hosted_vllm/m\n    backend: vllm\n    {entry}\n")
    with pytest.raises(ValueError, match=message.replace("{", r"\{").replace("}", r"\}")):
        load_registry(str(path))


@pytest.mark.slow
@pytest.mark.skipif(servers.vllm_missing() is not None, reason=str(servers.vllm_missing()))
def test_vllms_batch_runner_answers_as_its_server_does(tmp_path, vllm_server):
    runner = [
        "env",
        "VLLM_NO_USAGE_STATS=1",
        "HF_HUB_OFFLINE=1",
        *vllm_batch_command(
            str(servers.VLLM_MODEL),
            "smollm2",
            python=str(servers.VLLM_PYTHON),
            extra_args=[
                "--max-model-len",
                "2048",
                "--enforce-eager",
                "--dtype",
                "float32",
                "--kv-cache-memory-bytes",
                "1G",
            ],
        ),
    ]
    path = tmp_path / "models.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "models": {
                    "served": {
                        "model": "hosted_vllm/smollm2",
                        "backend": "vllm",
                        "api_base": vllm_server.url,
                        "sampling": {"temperature": 0.0, "max_tokens": 8},
                    },
                    # a minute of imports and engine start on an idle machine, several beside the suite
                    "batched": {
                        "model": "hosted_vllm/smollm2",
                        "backend": "vllm",
                        "mode": "batch",
                        "batch_command": runner,
                        "batch_timeout": servers.VLLM_STARTUP_SECONDS,
                        "sampling": {"temperature": 0.0, "max_tokens": 8},
                    },
                }
            }
        )
    )
    questions = [
        "Which city is the capital of France?",
        "What is the largest planet in the Solar System?",
        "Who wrote Romeo and Juliet?",
    ]
    asked = [
        LLMRequest(
            f"q{i}", [{"role": "user", "content": q}], params={"logprobs": True, "top_logprobs": 5} if i == 1 else {}
        )
        for i, q in enumerate(questions)
    ]
    asked.append(LLMRequest("too-long", [{"role": "user", "content": "word " * 3000}]))  # past 2,048 tokens

    by_batch, by_http = CallStats(), CallStats()
    batch = LLMResource(registry_path=str(path), cache_dir=str(tmp_path / "batch")).run(
        "batched", asked, stats=by_batch
    )
    http = LLMResource(registry_path=str(path), cache_dir=str(tmp_path / "http")).run("served", asked, stats=by_http)

    # Greedy decoding: the server's answers, token for token; the alternatives' log-
    # probabilities differ in the last digits (float32 sums in another batch order).
    assert [r.text for r in batch[:3]] == [r.text for r in http[:3]] and all(r.text for r in batch[:3])
    assert batch[1].tokens == http[1].tokens
    assert all(
        a.keys() == b.keys() and max(abs(a[t] - b[t]) for t in a) < 1e-3
        for a, b in zip(batch[1].token_logprobs, http[1].token_logprobs)
    )
    # The prompt the model cannot take fails the same way on both paths, and is counted.
    assert not batch[3].ok and not http[3].ok and "2048" in batch[3].error and "2048" in http[3].error
    assert by_batch.errors == by_http.errors == 1 and by_batch.prompt_tokens == by_http.prompt_tokens

    # The batch answers sit under the HTTP path's keys: the served entry finds them cached.
    before = vllm_server.requests_served()
    replay = LLMResource(registry_path=str(path), cache_dir=str(tmp_path / "batch")).run("served", asked[:3])
    assert all(r.cached for r in replay) and vllm_server.requests_served() == before
