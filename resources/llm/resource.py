"""LLM access through litellm: a model registry, an embedded llama.cpp provider, caching,
concurrency, retries and call accounting.

Every LLM-bound asset goes through :class:`LLMResource`. Models are named once, by alias, in
the registry file (``resources/models.yaml``); the alias maps to a litellm model string, so
the embedded default (``local/smollm2-135m-instruct``), a vLLM server
(``hosted_vllm/...``), OpenAI or Anthropic are all called the same way.

Responses are cached by litellm (disk by default). The cache key covers the model, the
messages, the sampling parameters and the sample index (passed as ``seed``), so a crashed or
cancelled materialization resumes without asking the LLM again for what it already answered.
"""

from __future__ import annotations

import os

# litellm fetches a model cost map from the network at import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import dataclasses
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

import dagster as dg
from pydantic import PrivateAttr

from resources.llm.cache import configure_litellm
from resources.llm.embedded import _EMBEDDED
from resources.llm.registry import REGISTRY_PATH, ModelSpec, load_registry, role_aliases
from resources.vllm_server import VLLMServerResource


class ParseError(ValueError):
    """Raised by a parse function when model output does not have the expected shape."""


# --- calls, results and accounting -------------------------------------------------------


@dataclasses.dataclass
class LLMRequest:
    """One call: ``key`` names the item it serves (question id, passage id) in errors and
    results; ``sample`` is the sample index, part of the cache key."""

    key: str
    messages: list[dict]
    sample: int = 0
    params: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class ScoreRequest:
    """How likely ``continuation`` is after ``prefix``: ``key`` names the item it serves."""

    key: str
    prefix: str
    continuation: str


@dataclasses.dataclass
class LLMResult:
    key: str
    text: str | None
    value: Any = None
    error: str | None = None
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # The first answer token's most likely alternatives (token -> log-probability), when
    # the request asked for ``logprobs``.
    top_logprobs: dict[str, float] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclasses.dataclass
class CallStats:
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    parse_failures: int = 0
    errors: int = 0

    def add(self, r: LLMResult) -> None:
        self.calls += 1
        self.cached += int(r.cached)
        self.prompt_tokens += r.prompt_tokens
        self.completion_tokens += r.completion_tokens
        if r.error and r.error.startswith("unparsable"):
            self.parse_failures += 1
        elif r.error:
            self.errors += 1

    def merge(self, other: CallStats) -> CallStats:
        return CallStats(*(a + b for a, b in zip(dataclasses.astuple(self), dataclasses.astuple(other))))

    def as_metadata(self, prefix: str = "llm") -> dict[str, int]:
        return {
            f"{prefix}/calls": self.calls,
            f"{prefix}/served_from_cache": self.cached,
            f"{prefix}/sent_to_model": self.calls - self.cached,
            f"{prefix}/prompt_tokens": self.prompt_tokens,
            f"{prefix}/completion_tokens": self.completion_tokens,
            f"{prefix}/parse_failures": self.parse_failures,
            f"{prefix}/errors": self.errors,
        }


_THINK = re.compile(r"<think>.*?</think>", re.S)


def strip_thinking(text: str) -> str:
    """Drop a reasoning block so parsers see only the answer."""
    return _THINK.sub("", text).strip()


def _transient_errors() -> tuple[type[BaseException], ...]:
    import litellm

    return (
        litellm.RateLimitError,
        litellm.APIConnectionError,
        litellm.Timeout,
        litellm.ServiceUnavailableError,
        litellm.InternalServerError,
    )


class LLMResource(dg.ConfigurableResource):
    """Calls registered models through litellm with caching, concurrency and retries.

    ``api_base`` overrides the registry's base URL for served backends. With ``server`` set,
    the vLLM serving resource is started (or attached to) before any call, and its URL is
    used for every served model.
    """

    registry_path: str = REGISTRY_PATH
    cache_dir: str = ".cache/llm"
    cache_type: str = "disk"
    max_concurrency: int = 8
    max_retries: int = 4
    backoff_seconds: float = 1.0
    request_timeout: float = 600.0
    api_base: Optional[str] = None
    server: Optional[VLLMServerResource] = None
    progress_every_seconds: float = 30.0

    _registry: dict[str, ModelSpec] = PrivateAttr(default_factory=dict)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._registry = load_registry(self.registry_path)
        configure_litellm(self.cache_type, self.cache_dir)

    def role(self, role: str) -> list[str]:
        """The aliases of a role (``quit.judge``, ``recor.builder``, ...) in the registry this
        resource is configured with, so that a run with another registry file asks its models."""
        return role_aliases(role, self.registry_path)

    def spec(self, alias: str) -> ModelSpec:
        if not self._registry:
            self._registry = load_registry(self.registry_path)
            configure_litellm(self.cache_type, self.cache_dir)
        if alias not in self._registry:
            raise KeyError(f"model alias {alias!r} is not in {self.registry_path}")
        return self._registry[alias]

    def wants_cot_prompt(self, alias: str, thinking: bool) -> bool:
        """Thinking on a model without a native switch is a chain-of-thought prompt variant."""
        return thinking and self.spec(alias).thinking == "cot"

    def run(
        self,
        alias: str,
        requests: Sequence[LLMRequest],
        parse: Callable[[str], Any] | None = None,
        stats: CallStats | None = None,
        thinking: bool = False,
        log: Callable[[str], None] | None = None,
    ) -> list[LLMResult]:
        """Answer every request, in order. Failures become results with an error, never
        exceptions: unparsable output keeps its raw text."""
        spec = self.spec(alias)
        stats = stats if stats is not None else CallStats()
        # The embedded model runs one call at a time; keeping submission order lets
        # llama.cpp reuse the prompt prefix shared by consecutive calls.
        workers = 1 if spec.backend == "embedded" else max(1, self.max_concurrency)
        results: list[LLMResult | None] = [None] * len(requests)
        progress = _Progress(len(requests), self.progress_every_seconds, log, alias)

        def one(i: int) -> None:
            r = self._call(spec, requests[i], parse, thinking)
            results[i] = r
            progress.tick()

        if workers == 1:
            for i in range(len(requests)):
                one(i)
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                list(pool.map(one, range(len(requests))))
        for r in results:
            stats.add(r)
        return results  # type: ignore[return-value]

    def _call(self, spec: ModelSpec, req: LLMRequest, parse, thinking: bool) -> LLMResult:
        import litellm

        params = {**spec.sampling, **req.params, "seed": req.sample}
        if thinking and spec.thinking == "native":
            params.update(spec.thinking_params)
        api_base = self.api_base or (self.server.base_url if self.server else None) or spec.api_base
        if api_base and spec.backend != "embedded":
            params["api_base"] = api_base
        delay = self.backoff_seconds
        for attempt in range(self.max_retries + 1):
            try:
                response = litellm.completion(
                    model=spec.model,
                    messages=req.messages,
                    caching=True,
                    timeout=self.request_timeout,
                    **params,
                )
                break
            except _transient_errors() as e:
                if attempt == self.max_retries:
                    return LLMResult(req.key, None, error=f"gave up after {attempt + 1} tries: {e}")
                time.sleep(delay)
                delay *= 2
            except Exception as e:  # a bad request stays with its item, the run goes on
                return LLMResult(req.key, None, error=f"{type(e).__name__}: {e}")
        text = response.choices[0].message.content or ""
        usage = getattr(response, "usage", None)
        hidden = getattr(response, "_hidden_params", {}) or {}
        result = LLMResult(
            req.key,
            text,
            cached=bool(hidden.get("cache_hit")),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            top_logprobs=_first_top_logprobs(response.choices[0]),
        )
        if parse is not None:
            try:
                result.value = parse(strip_thinking(text))
            except ParseError as e:
                result.error = f"unparsable: {e}"
        else:
            result.value = strip_thinking(text)
        return result

    def score(
        self,
        alias: str,
        requests: Sequence[ScoreRequest],
        stats: CallStats | None = None,
        log: Callable[[str], None] | None = None,
    ) -> list[LLMResult]:
        """The log-probability of each request's continuation given its prefix, token by
        token (``value``: a list of floats). The embedded model computes them in process;
        served models are asked for prompt log-probabilities (``echo`` with ``logprobs``,
        as vLLM's completions endpoint returns them). Cached like every other call."""
        spec = self.spec(alias)
        stats = stats if stats is not None else CallStats()
        progress = _Progress(len(requests), self.progress_every_seconds, log, alias)
        workers = 1 if spec.backend == "embedded" else max(1, self.max_concurrency)
        results: list[LLMResult | None] = [None] * len(requests)

        def one(i: int) -> None:
            results[i] = self._score(spec, requests[i])
            progress.tick()

        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(one, range(len(requests))))
        for r in results:
            stats.add(r)
        return results  # type: ignore[return-value]

    def _score(self, spec: ModelSpec, req: ScoreRequest) -> LLMResult:
        import hashlib
        import json

        import litellm

        key = "score:" + hashlib.sha256(json.dumps([spec.model, req.prefix, req.continuation]).encode()).hexdigest()
        store = litellm.cache.cache if litellm.cache is not None else None
        hit = store.get_cache(key) if store is not None else None
        if hit is not None:
            return LLMResult(req.key, None, value=list(hit["logprobs"]), cached=True, prompt_tokens=hit["tokens"])
        try:
            if spec.backend == "embedded":
                values, tokens = _EMBEDDED.continuation_logprobs(spec.model.split("/", 1)[-1], req.prefix, req.continuation)
            else:
                values, tokens = self._served_logprobs(spec, req)
        except Exception as e:  # a bad item stays with its key, the run goes on
            return LLMResult(req.key, None, error=f"{type(e).__name__}: {e}")
        if store is not None:
            store.set_cache(key, {"logprobs": values, "tokens": tokens})
        return LLMResult(req.key, None, value=values, prompt_tokens=tokens)

    def _served_logprobs(self, spec: ModelSpec, req: ScoreRequest) -> tuple[list[float], int]:
        import litellm

        api_base = self.api_base or (self.server.base_url if self.server else None) or spec.api_base
        extra = {"api_base": api_base} if api_base else {}
        delay = self.backoff_seconds
        for attempt in range(self.max_retries + 1):
            try:
                response = litellm.text_completion(
                    model=spec.model, prompt=req.prefix + req.continuation, echo=True, logprobs=1,
                    max_tokens=1, temperature=0.0, timeout=self.request_timeout, **extra,
                )
                break
            except _transient_errors():
                if attempt == self.max_retries:
                    raise
                time.sleep(delay)
                delay *= 2
        return continuation_from_echo(response.choices[0].logprobs, len(req.prefix))


def continuation_from_echo(logprobs: Any, prefix_chars: int) -> tuple[list[float], int]:
    """The continuation's token log-probabilities from an echoed completion: the prompt
    tokens starting at or after the prefix's end, before the one generated token."""
    get = logprobs.get if isinstance(logprobs, dict) else lambda k: getattr(logprobs, k)
    offsets, values = get("text_offset"), get("token_logprobs")
    if not offsets or values is None:
        raise ValueError("the server returned no prompt log-probabilities (echo with logprobs)")
    # The last entry is the generated token; the first prompt token has no log-probability.
    picked = [float(v) for off, v in zip(offsets[:-1], values[:-1]) if off >= prefix_chars and v is not None]
    if not picked:
        raise ValueError("no continuation tokens in the echoed prompt")
    return picked, len(offsets) - 1


def _first_top_logprobs(choice: Any) -> dict[str, float] | None:
    logprobs = getattr(choice, "logprobs", None)
    content = getattr(logprobs, "content", None) if logprobs is not None else None
    if not content:
        return None
    first = content[0]
    return {t.token: float(t.logprob) for t in (first.top_logprobs or [])} or {first.token: float(first.logprob)}


class _Progress:
    """Logs done / total and rate at a steady interval, so a user watching a run sees it move."""

    def __init__(self, total: int, every: float, log, alias: str):
        self.total, self.every, self.log, self.alias = total, every, log, alias
        self.done = 0
        self.start = self.last = time.monotonic()
        self._lock = threading.Lock()

    def tick(self) -> None:
        if self.log is None:
            return
        with self._lock:
            self.done += 1
            now = time.monotonic()
            if now - self.last >= self.every or self.done == self.total:
                self.last = now
                rate = self.done / max(now - self.start, 1e-9)
                self.log(f"{self.alias}: {self.done}/{self.total} calls, {rate:.1f} calls/s")


_CONFIGURED: tuple[str, str] | None = None
