"""A stand-in OpenAI-compatible model server (aiohttp), for routing, fault and throughput
tests: it answers after a fixed latency, can fail a share of requests the ways real servers
fail, and records what it was asked (``GET /_seen``).

Run it as its own process, so a client measured against it does not share its interpreter:
``python -m tests.standin --port P [--latency 0.1] [--faults 0.2] [--name NAME]``.

Replies: ``"<name>: <the last user message's first five words>"``; with ``logprobs`` each
character is a token (so digits split, as Qwen's tokenizers split them), chosen at
log-probability -0.1 with one alternative. A message ``RATE n`` is answered with the number
``n``; ``--reply TEXT`` answers everything with TEXT (a judge that always says No). Faults,
for the share ``--faults`` of requests chosen by a hash of the request and how often it was
asked (so a retry may succeed): 429, 500, a reply slower than any client waits (``--stall``
seconds), a body that is not JSON, and an answer with empty content, in turn.
``--always KIND`` fails every request one way (``ALWAYS``: hang, 500, 429, 400, garbage,
close, empty, no_message: a choice without its message), as a server that broke (or a request
every call shares) does. ``--fail-first N`` answers its first N requests with 500, as a
replica still loading or just restarted does. The ``Authorization`` headers it was sent are
recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

FAULTS = ("429", "500", "stall", "malformed", "empty")
ALWAYS = ("hang", "500", "429", "400", "garbage", "close", "empty", "no_message")


class StandIn:
    def __init__(
        self,
        name: str,
        latency: float,
        faults: float,
        stall: float,
        reply: str | None = None,
        always: str | None = None,
        fail_first: int = 0,
    ):
        self.name, self.latency, self.faults, self.stall, self.fixed = name, latency, faults, stall, reply
        self.always, self.fail_first, self.received = always, fail_first, 0
        self.auth = collections.Counter()  # Authorization header -> times sent
        self.asked = collections.Counter()  # request digest -> times asked
        self.answered = collections.Counter()  # request digest -> good answers given
        self.faulted = collections.Counter()  # fault kind -> times
        self.models = collections.Counter()
        self.bodies: list[dict] = []
        self.in_flight = self.peak = 0

    def fault_for(self, digest: str, attempt: int) -> str | None:
        if not self.faults:
            return None
        h = int(hashlib.sha256(f"{digest}:{attempt}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        if h >= self.faults:
            return None
        return FAULTS[int(h / self.faults * len(FAULTS)) % len(FAULTS)]

    async def chat(self, request):
        from aiohttp import web

        body = await request.json()
        digest = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest()
        self.asked[digest] += 1
        self.auth[request.headers.get("Authorization", "")] += 1
        if self.always:
            return await self.broken(request, body)
        self.received += 1
        if self.received <= self.fail_first:
            self.faulted["first"] += 1
            return web.json_response({"error": {"message": "not ready yet"}}, status=500)
        self.models[body.get("model")] += 1
        if len(self.bodies) < 2000:
            self.bodies.append(body)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.latency)
            fault = self.fault_for(digest, self.asked[digest])
            if fault:
                self.faulted[fault] += 1
            if fault == "429":
                return web.json_response({"error": {"message": "slow down"}}, status=429)
            if fault == "500":
                return web.json_response({"error": {"message": "engine died"}}, status=500)
            if fault == "stall":
                await asyncio.sleep(self.stall)
            if fault == "malformed":
                return web.Response(text='{"id": "x", "choices": [', content_type="application/json")
            text = "" if fault == "empty" else self.reply(body)
            if not fault:
                self.answered[digest] += 1
            return web.json_response(self.completion(body, text))
        finally:
            self.in_flight -= 1

    async def broken(self, request, body: dict):
        """Every request failed the one way ``--always`` names."""
        from aiohttp import web

        self.faulted[self.always] += 1
        if self.always == "hang":
            await asyncio.sleep(3600)
        if self.always in ("500", "429", "400"):
            return web.json_response({"error": {"message": f"always {self.always}"}}, status=int(self.always))
        if self.always == "garbage":
            return web.Response(text="<html>bad gateway</html>", content_type="application/json")
        if self.always == "close":
            request.transport.close()
            raise ConnectionResetError("closed by the stand-in")
        reply = self.completion(body, "")
        if self.always == "no_message":
            del reply["choices"][0]["message"]
        return web.json_response(reply)

    def reply(self, body: dict) -> str:
        if self.fixed is not None:
            return self.fixed
        last = next((m["content"] for m in reversed(body["messages"]) if m["role"] == "user"), "")
        if last.startswith("RATE "):
            return last.split()[1]
        return f"{self.name}: " + " ".join(last.split()[:5])

    def completion(self, body: dict, text: str) -> dict:
        choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        if body.get("logprobs"):
            chars = list(text[: int(body.get("max_tokens") or len(text)) or None]) or [""]
            choice["logprobs"] = {
                "content": [
                    {
                        "token": c,
                        "logprob": -0.1,
                        "bytes": None,
                        "top_logprobs": [
                            {"token": c, "logprob": -0.1, "bytes": None},
                            {"token": "x", "logprob": -2.4, "bytes": None},
                        ],
                    }
                    for c in chars
                ]
            }
        return {
            "id": "standin",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [choice],
            "usage": {"prompt_tokens": 10, "completion_tokens": max(1, len(text)), "total_tokens": 10 + len(text)},
        }

    async def models_list(self, request):
        from aiohttp import web

        return web.json_response({"object": "list", "data": [{"id": self.name, "object": "model"}]})

    async def seen(self, request):
        from aiohttp import web

        return web.json_response(
            {
                "asked": dict(self.asked),
                "answered": dict(self.answered),
                "auth": dict(self.auth),
                "faulted": dict(self.faulted),
                "models": dict(self.models),
                "peak": self.peak,
                "bodies": self.bodies[-50:],
            }
        )


def main() -> None:
    from aiohttp import web

    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--name", default="standin")
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--faults", type=float, default=0.0)
    ap.add_argument("--stall", type=float, default=30.0)
    ap.add_argument("--reply", default=None, help="answer every request with this text")
    ap.add_argument("--always", choices=ALWAYS, default=None, help="fail every request this way")
    ap.add_argument("--fail-first", type=int, default=0, help="answer the first N requests with 500")
    args = ap.parse_args()
    s = StandIn(args.name, args.latency, args.faults, args.stall, args.reply, args.always, args.fail_first)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", s.chat)
    app.router.add_get("/v1/models", s.models_list)
    app.router.add_get("/_seen", s.seen)
    # shutdown_timeout: a stopped stand-in drops what it holds (a hung request) at once
    web.run_app(app, host="127.0.0.1", port=args.port, print=None, access_log=None, backlog=4096, shutdown_timeout=0.5)


class Server:
    """A stand-in started as a process; ``seen()`` is what it recorded."""

    def __init__(
        self,
        port: int,
        name: str = "standin",
        latency: float = 0.0,
        faults: float = 0.0,
        stall: float = 30.0,
        log: Path | None = None,
        reply: str | None = None,
        always: str | None = None,
        fail_first: int = 0,
    ):
        self.port, self.name = port, name
        self.url = f"http://127.0.0.1:{port}/v1"
        root = Path(__file__).resolve().parents[1]
        out = open(log, "wb") if log else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.standin",
                "--port",
                str(port),
                "--name",
                name,
                "--latency",
                str(latency),
                "--faults",
                str(faults),
                "--stall",
                str(stall),
                *(["--reply", reply] if reply is not None else []),
                *(["--always", always] if always else []),
                *(["--fail-first", str(fail_first)] if fail_first else []),
            ],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        from resources.vllm_server import wait_healthy

        wait_healthy(self.url, timeout=60, proc=self.proc)

    def seen(self) -> dict:
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/_seen", timeout=10) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        from resources.vllm_server import stop_process_group

        stop_process_group(self.proc, grace=10)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


if __name__ == "__main__":
    main()
