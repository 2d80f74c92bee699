"""How fast the LLM resource drives a served model, against the raw async OpenAI client.

1. A stand-in server (``tests/standin.py``, its own process) answers every request after
   ``--latency`` seconds. ``--requests`` distinct requests, ``--concurrency`` in flight:
   the raw ``openai.AsyncOpenAI`` client, then ``LLMResource.run`` over a fresh cache, each
   twice, interleaved, best of two (the machine is noisy); the ratio is the figure.
2. The cache-hit rerun of the same requests: calls/s, and the client's CPU per call.
3. With ``--vllm``: the real vLLM CPU server (``make vllm``) serving the embedded SmolLM2,
   at concurrency 1 and 16 (QUIT-labeling-sized prompts, 8 new tokens), calls/s each.
4. On paper: QUIT's 7.2M labeler calls at the measured client CPU per call.
5. With ``--replay``: ``--replay-requests`` answers put in the disk cache and in the Postgres
   cache (a throwaway server, as the tests start one), then ``LLMResource.run`` served
   wholly from each, twice, interleaved: calls/s from Postgres against calls/s from disk.

    .venv/bin/python bench/llm_throughput.py [--requests 20000] [--concurrency 256] [--vllm]
    .venv/bin/python bench/llm_throughput.py --replay --skip-standin [--replay-requests 50000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# A labeling prompt's size: the instruction, five hints and the question (about 180 tokens).
PROMPT = (
    "Read the clues and name what they describe. Answer with the name only.\n\n"
    "Clues: It is the highest mountain above sea level. It lies on the border of two countries. "
    "Its summit was first reached in the spring of a year after a world war. "
    "Climbers call its upper slopes a death zone. It is named after a surveyor. Request {i}.\n\nAnswer:"
)
QUIT_LABELER_CALLS = 7_200_000


def messages(i: int) -> list[dict]:
    return [{"role": "user", "content": PROMPT.format(i=i)}]


async def raw_client(url: str, n: int, concurrency: int, offset: int) -> float:
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="EMPTY", max_retries=0)
    sem = asyncio.Semaphore(concurrency)

    async def one(i):
        async with sem:
            r = await client.chat.completions.create(model="m", messages=messages(i), max_tokens=8, temperature=0.0)
            return r.choices[0].message.content

    t = time.perf_counter()
    out = await asyncio.gather(*(one(offset + i) for i in range(n)))
    wall = time.perf_counter() - t
    await client.close()
    assert all(out)
    return wall


def resource_run(url: str, n: int, concurrency: int, offset: int, cache: str, served_name: str = "m"):
    from resources.llm import CallStats, LLMRequest, LLMResource

    registry = Path(cache) / "models.yaml"
    registry.write_text(
        f"models:\n  m: {{model: hosted_vllm/{served_name}, backend: vllm, api_base: '{url}', "
        f"max_concurrency: {concurrency}, sampling: {{max_tokens: 8, temperature: 0.0}}}}\n"
    )
    llm = LLMResource(registry_path=str(registry), cache_dir=str(Path(cache) / "llm"))
    reqs = [LLMRequest(str(i), messages(offset + i)) for i in range(n)]
    stats = CallStats()
    llm.spec("m")  # the registry and litellm's import, once, outside the timing
    t, cpu = time.perf_counter(), time.process_time()
    out = llm.run("m", reqs, stats=stats)
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    assert all(r.ok for r in out), next(r.error for r in out if not r.ok)
    return wall, cpu, stats, llm, reqs


def standin_figures(args, out: dict) -> None:
    from tests.servers import free_port
    from tests.standin import Server

    with Server(free_port(), name="m", latency=args.latency) as server, tempfile.TemporaryDirectory() as tmp:
        raw, ours = [], []
        for round_ in range(2):
            # each round asks new requests, so neither side meets the other's answers
            offset = round_ * 2 * args.requests
            raw.append(asyncio.run(raw_client(server.url, args.requests, args.concurrency, offset)))
            wall, cpu, stats, llm, reqs = resource_run(
                server.url, args.requests, args.concurrency, offset + args.requests, tempfile.mkdtemp(dir=tmp)
            )
            assert stats.cached == 0
            ours.append((wall, cpu))
        best_raw, (best_ours, cpu_ours) = min(raw), min(ours)
        # the cache-hit rerun of the last round's requests
        from resources.llm import CallStats

        stats = CallStats()
        t, cpu = time.perf_counter(), time.process_time()
        again = llm.run("m", reqs, stats=stats)
        cache_wall, cache_cpu = time.perf_counter() - t, time.process_time() - cpu
        assert stats.cached == len(reqs) and all(r.ok for r in again)
    out["standin"] = {
        "requests": args.requests,
        "concurrency": args.concurrency,
        "latency_s": args.latency,
        "raw_calls_per_s": [round(args.requests / w, 1) for w in raw],
        "resource_calls_per_s": [round(args.requests / w, 1) for w, _ in ours],
        "ratio_best_of_two": round(best_raw / best_ours, 3),
        "resource_cpu_ms_per_call": round(1000 * cpu_ours / args.requests, 3),
        "cache_rerun_calls_per_s": round(args.requests / cache_wall, 1),
        "cache_rerun_cpu_ms_per_call": round(1000 * cache_cpu / args.requests, 4),
        "server_bound_calls_per_s": round(args.concurrency / args.latency, 1),
    }
    ms = out["standin"]["resource_cpu_ms_per_call"] / 1000
    out["paper"] = {
        "quit_labeler_calls": QUIT_LABELER_CALLS,
        "client_cpu_hours_one_core": round(QUIT_LABELER_CALLS * ms / 3600, 2),
        "cache_replay_hours": round(QUIT_LABELER_CALLS / out["standin"]["cache_rerun_calls_per_s"] / 3600, 2),
    }


def vllm_figures(args, out: dict) -> None:
    from tests.servers import start_vllm, vllm_missing

    if vllm_missing():
        raise SystemExit(vllm_missing())
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        server = start_vllm(Path(tmp))  # the tests' server: same command, model and KV cache size
        try:
            server.wait()
            out["vllm"] = {"startup_s": round(time.perf_counter() - t, 1)}
            for concurrency, n in ((1, args.vllm_requests // 4), (16, args.vllm_requests)):
                wall, *_ = resource_run(
                    server.base_url,
                    n,
                    concurrency,
                    10_000_000 * concurrency,
                    tempfile.mkdtemp(dir=tmp),
                    served_name="smollm2",
                )
                out["vllm"][f"concurrency_{concurrency}"] = {"requests": n, "calls_per_s": round(n / wall, 2)}
        finally:
            server.stop()


def replay_figures(args, out: dict) -> None:
    from resources.llm import CallStats, LLMRequest, LLMResource
    from resources.llm.cache import cache_key
    from tests.servers import start_postgres

    n = args.replay_requests
    with tempfile.TemporaryDirectory() as tmp, start_postgres() as postgres:
        registry = Path(tmp) / "models.yaml"
        # Nothing listens at the entry's URL: every answer has to come from the cache.
        registry.write_text(
            "models:\n  m: {model: hosted_vllm/m, backend: vllm, api_base: 'http://127.0.0.1:9/v1', "
            "sampling: {max_tokens: 8, temperature: 0.0}}\n"
        )
        caches = {
            "disk": LLMResource(registry_path=str(registry), cache_dir=str(Path(tmp) / "llm")),
            "postgres": LLMResource(
                registry_path=str(registry),
                cache_dir=str(Path(tmp) / "llm-pg"),
                cache_type="postgres",
                cache_url=postgres.url,
            ),
        }
        spec = caches["disk"].spec("m")
        reqs = [LLMRequest(str(i), messages(i)) for i in range(n)]
        # The keys the resource computes; answers as a labeling call's, without log-probabilities.
        answers = [
            (
                cache_key("chat", spec.model, r.messages, caches["disk"].params(spec, r)),
                {
                    "text": f"Mount Everest {i}",
                    "prompt_tokens": 180,
                    "completion_tokens": 4,
                    "tokens": None,
                    "token_logprobs": None,
                },
            )
            for i, r in enumerate(reqs)
        ]
        fill = {}
        for name, llm in caches.items():
            t = time.perf_counter()
            for start in range(0, n, 512):  # the AnswerWriter's groups
                llm.cache.put_many(answers[start : start + 512])
            fill[name] = round(n / (time.perf_counter() - t), 1)
        rates: dict[str, list[float]] = {name: [] for name in caches}
        cpu: dict[str, list[float]] = {name: [] for name in caches}
        for _ in range(2):
            for name, llm in caches.items():
                stats = CallStats()
                t, c = time.perf_counter(), time.process_time()
                served = llm.run("m", reqs, stats=stats)
                wall, c = time.perf_counter() - t, time.process_time() - c
                assert stats.cached == n and all(r.ok for r in served), f"{name}: {n - stats.cached} calls missed"
                rates[name].append(round(n / wall, 1))
                cpu[name].append(round(1000 * c / n, 4))
        out["replay"] = {
            "requests": n,
            "put_answers_per_s": fill,
            "calls_per_s": rates,
            "client_cpu_ms_per_call": cpu,
            "cache": {k: v.cache.stats() for k, v in caches.items()},
            "postgres_over_disk_best": round(max(rates["postgres"]) / max(rates["disk"]), 3),
        }


def main() -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--vllm", action="store_true", help="also measure the real vLLM CPU server")
    parser.add_argument("--vllm-requests", type=int, default=64)
    parser.add_argument("--skip-standin", action="store_true")
    parser.add_argument("--replay", action="store_true", help="also replay from the Postgres and the disk cache")
    parser.add_argument("--replay-requests", type=int, default=50_000)
    args = parser.parse_args()
    out: dict = {"cpus": len(os.sched_getaffinity(0))}
    if not args.skip_standin:
        standin_figures(args, out)
    if args.vllm:
        vllm_figures(args, out)
    if args.replay:
        replay_figures(args, out)
    print(json.dumps(out, indent=2))
    (ROOT / "bench" / "out").mkdir(exist_ok=True)
    (ROOT / "bench" / "out" / "llm_throughput.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
