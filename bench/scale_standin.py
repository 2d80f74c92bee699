"""The scale probe's model server: the stand-in of ``tests/standin.py`` (its own process,
aiohttp, OpenAI's chat protocol) answering at once with the scripted LLM's rules
(``tests/scripted.py``), so that every step's reply parses as a model's would and the builds
go on to their last asset: passages get answers, pages get entities and facts, turns get
rewrites. Verdicts and ratings carry the scripted model's first-token log-probabilities.

It keeps no per-request record (the test stand-in keeps every request's digest, which grows
by hundreds of MB over a paper-sized labeling run); ``GET /_count`` is the number of chat
requests answered so far.

    python -m bench.scale_standin --port P
"""

from __future__ import annotations

import argparse

from tests import scripted
from tests.standin import StandIn

# The scripted model's tokenizer for every served name: words and numbers whole.
TOKENIZER = "rules"


class ScriptedStandIn(StandIn):
    def __init__(self, name: str):
        super().__init__(name, latency=0.0, faults=0.0, stall=0.0)
        self.count = 0

    def reply(self, body: dict) -> str:
        return scripted.reply(body["messages"][-1]["content"])

    def completion(self, body: dict, text: str) -> dict:
        out = super().completion(body, text)
        if body.get("logprobs"):
            out["choices"][0]["logprobs"] = {"content": scripted.ruled_logprobs(text, TOKENIZER)}
        return out

    async def chat(self, request):
        from aiohttp import web

        body = await request.json()
        self.count += 1
        return web.json_response(self.completion(body, self.reply(body)))

    async def counted(self, request):
        from aiohttp import web

        return web.json_response({"requests": self.count})


def main() -> None:
    from aiohttp import web

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="scale-standin")
    args = parser.parse_args()
    server = ScriptedStandIn(args.name)
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", server.chat)
    app.router.add_get("/v1/models", server.models_list)
    app.router.add_get("/_count", server.counted)
    web.run_app(app, host="127.0.0.1", port=args.port, print=None, access_log=None, backlog=4096)


if __name__ == "__main__":
    main()
