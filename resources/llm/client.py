"""The HTTP client of ``vllm`` entries: vLLM's OpenAI endpoints over aiohttp, and a chat
request's body as vLLM reads it (over HTTP or in a batch file)."""

from __future__ import annotations

import functools
import os

from resources.llm.faults import ConnectionFailed, RequestRejected, ServerFault, TransientError

# OpenAI's chat parameters; anything else a registry entry or step sets for a vLLM model
# (chat_template_kwargs, top_k, repetition_penalty) travels in the request body as vLLM
# reads it.
_OPENAI_CHAT = {
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "seed",
    "logprobs",
    "top_logprobs",
    "stop",
    "n",
    "presence_penalty",
    "frequency_penalty",
    "response_format",
    "logit_bias",
}


def _served_name(model: str) -> str:
    return model.split("/", 1)[1] if model.startswith("hosted_vllm/") else model


class _VLLMClient:
    """vLLM's OpenAI endpoints over one aiohttp session: the body is JSON the resource builds
    and the reply is read as plain JSON. The OpenAI SDK cost about 5 ms of client CPU a call
    (it walks every message through its type transforms and scans its connection pool per
    request), which one core cannot afford at QUIT's millions of labeling calls."""

    def __init__(self, base_url: str, timeout: float, concurrency: int):
        import aiohttp
        import orjson

        self._base = base_url.rstrip("/")
        self._dumps, self._loads = orjson.dumps, orjson.loads
        self._dropped = (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)
        # a step's calls share a few budgets, so a few timeout objects
        self._timeouts = functools.lru_cache(maxsize=64)(lambda total: aiohttp.ClientTimeout(total=total))
        # Retries are the resource's own (counted, jittered); a connection per request in flight.
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency),
            timeout=aiohttp.ClientTimeout(total=timeout),
            headers={
                "Authorization": f"Bearer {os.environ.get('VLLM_API_KEY', 'EMPTY')}",
                "Content-Type": "application/json",
            },
        )

    async def post(self, path: str, body: dict, timeout: float | None = None) -> dict:
        """The reply to one request; ``timeout``: this try's seconds (the session's otherwise)."""
        limit = {"timeout": self._timeouts(timeout)} if timeout else {}
        try:
            async with self._session.post(self._base + path, data=self._dumps(body), **limit) as response:
                raw = await response.read()
                status = response.status
        except self._dropped as e:
            raise ConnectionFailed(f"{self._base}: {type(e).__name__}: {e}") from e
        if status == 429 or status >= 500:
            raise ServerFault(f"HTTP {status}: {_message(raw)}")
        if status >= 400:
            raise RequestRejected(f"HTTP {status}: {_message(raw)}")
        reply = self._loads(raw)
        if not isinstance(reply, dict):
            raise TransientError(f"the reply is a JSON {type(reply).__name__}, not an object")
        return reply

    async def close(self) -> None:
        await self._session.close()


def _message(raw: bytes) -> str:
    """A server's error message, from its JSON error body or its first 300 characters."""
    import orjson

    try:
        error = orjson.loads(raw).get("error")
        return str(error.get("message") if isinstance(error, dict) else error)[:300]
    except Exception:  # not JSON: the text itself says what went wrong
        return raw[:300].decode("utf-8", "replace")


def _vllm_client(base_url: str | None, timeout: float, concurrency: int) -> _VLLMClient:
    if not base_url:
        raise ValueError("a vllm model needs an api_base in the registry, a server, or the resource's api_base")
    return _VLLMClient(base_url, timeout, concurrency)


def _vllm_request(model: str, messages: list[dict], params: dict) -> dict:
    """A chat request's body as vLLM reads it, over HTTP or in a batch file: OpenAI's chat
    parameters, and every other parameter (``extra_body``'s included) at the top level."""
    body = {k: v for k, v in params.items() if k in _OPENAI_CHAT}
    extra = {
        **params.get("extra_body", {}),
        **{k: v for k, v in params.items() if k not in _OPENAI_CHAT and k != "extra_body"},
    }
    return {"model": _served_name(model), "messages": messages, **body, **extra}
