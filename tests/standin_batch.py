"""A stand-in for vLLM's offline batch runner (``python -m vllm.entrypoints.openai.run_batch``),
for the batch path's client-side cost and fault accounting: it reads an OpenAI batch file
and answers every request at once, in the output format vLLM's runner writes.

``python -m tests.standin_batch -i IN -o OUT [--name NAME] [--fail-every K] [--sleep S]
[--exit-code N]``

Replies are ``tests/standin.py``'s (``"<name>: <the last user message's first five words>"``,
per-character log-probabilities when asked), as chat completions. Every K-th request (by
position, from 1) gets an error entry as vLLM writes one for a request it cannot serve;
``--sleep`` waits before answering (a runner that outlives its timeout); ``--exit-code``
logs a few lines and exits with that code without writing anything (a runner that dies).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid

from tests.standin import StandIn


def answer(standin: StandIn, line: str, position: int, fail_every: int) -> dict:
    """One output entry for one input line, as vLLM's run_batch writes it."""
    out = {"id": f"vllm-{uuid.uuid4().hex}", "custom_id": None, "response": None, "error": None}
    request_id = f"vllm-batch-{uuid.uuid4().hex}"
    try:
        request = json.loads(line)
        out["custom_id"] = request["custom_id"]
        body = request["body"]
        if request.get("url") != "/v1/chat/completions":
            raise ValueError(f"unsupported url {request.get('url')!r}")
    except (ValueError, KeyError, TypeError) as e:
        out["response"] = {"status_code": 400, "request_id": request_id, "body": None}
        out["error"] = f"bad request line: {e}"
        return out
    if fail_every and position % fail_every == 0:
        # vLLM writes the engine's ErrorResponse in ``error`` and no body
        out["response"] = {"status_code": 400, "request_id": request_id, "body": None}
        out["error"] = {
            "error": {
                "message": f"stand-in failure for request {position}",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        }
        return out
    completion = standin.completion(body, standin.reply(body))
    completion["id"] = f"chatcmpl-{uuid.uuid4().hex}"
    out["response"] = {"status_code": 200, "request_id": request_id, "body": completion}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-i", "--input-file", required=True)
    ap.add_argument("-o", "--output-file", required=True)
    ap.add_argument("--name", default="standin")
    ap.add_argument("--fail-every", type=int, default=0, help="answer every K-th request with an error entry")
    ap.add_argument("--sleep", type=float, default=0.0, help="seconds to wait before answering")
    ap.add_argument("--exit-code", type=int, default=0, help="log a few lines and exit with this code, writing nothing")
    args = ap.parse_args(argv)
    print(f"stand-in batch runner {args.name}: reading {args.input_file}", flush=True)
    if args.exit_code:
        print("loading the engine", flush=True)
        print("RuntimeError: the stand-in engine failed on purpose", file=sys.stderr, flush=True)
        return args.exit_code
    if args.sleep:
        time.sleep(args.sleep)
    standin = StandIn(args.name, latency=0.0, faults=0.0, stall=0.0)
    count = 0
    with open(args.input_file, encoding="utf-8") as lines, open(args.output_file, "w", encoding="utf-8") as out:
        for line in lines:
            if not line.strip():
                continue
            count += 1
            out.write(json.dumps(answer(standin, line, count, args.fail_every)) + "\n")
    print(f"answered {count} requests", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
