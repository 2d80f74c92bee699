"""LLM access: a model registry, an embedded llama.cpp provider, a content-addressed cache,
per-model routing and bounded async concurrency, retries and call accounting.

Every LLM-bound asset goes through :class:`LLMResource`. Models are named once, by alias, in
the registry file (``resources/models.yaml``); each entry says how it is reached:

- ``embedded``: the in-process model, litellm's ``local/`` provider, one call at a time;
- ``vllm``: an OpenAI-compatible vLLM server, called with the async OpenAI client (vLLM's
  own protocol; litellm's per-call overhead would cap a server that batches hundreds of
  sequences), up to the entry's ``max_concurrency`` requests in flight;
- ``api``: any provider litellm knows (``openai/...``, ``anthropic/...``), through
  ``litellm.acompletion``, with a lower default concurrency.

Every request is looked up in the response cache first, in bulk (``resources/llm/cache.py``),
so a crashed or cancelled materialization resumes without asking again for what it already
answered, and a rerun from the cache costs nothing a model would notice.
"""

from __future__ import annotations

import os

# litellm fetches a model cost map from the network at import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import asyncio
import collections
import dataclasses
import functools
import itertools
import random
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Optional

import dagster as dg
from pydantic import Field, PrivateAttr

from resources.llm.cache import (
    AnswerCache,
    AnswerWriter,
    cache_key,
    install_embedded_provider,
    response_cache,
)
from resources.llm.embedded import _EMBEDDED
from resources.llm.registry import REGISTRY_PATH, ModelSpec, load_registry, role_aliases
from resources.llm.replicas import Replica, ReplicaPool
from resources.llm.structured import FREE_TEXT, STRUCTURED, Output
from resources.redact import redact
from resources.vllm_server import VLLMServerResource


class ParseError(ValueError):
    """Raised by a parse function when model output does not have the expected shape."""


# --- calls, results and accounting -------------------------------------------------------


@dataclasses.dataclass
class LLMRequest:
    """One call: ``key`` names the item it serves (question id, passage id) in errors and
    results; ``sample`` is the sample index, sent as the seed and part of the cache key;
    ``output`` is the prompt's declared answer shape (:attr:`Prompt.output`), which a
    ``vllm`` entry is asked to follow (:meth:`LLMResource.params`)."""

    key: str
    messages: list[dict]
    sample: int = 0
    params: dict = dataclasses.field(default_factory=dict)
    output: Output | None = None


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
    # Every generated token and its alternatives, in order (``tokens[i]`` was chosen among
    # ``token_logprobs[i]``), when the request asked for ``logprobs``.
    tokens: list[str] | None = None
    token_logprobs: list[dict[str, float]] | None = None
    # How the answer was read: "structured" (a constrained reply, rendered into the text its
    # parser reads) or "free_text"; None without an answer.
    answered: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


FAILED_KEYS_KEPT = 20


@dataclasses.dataclass
class CallStats:
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    parse_failures: int = 0
    errors: int = 0
    # Dollars from litellm's bundled price list, for calls sent to a priced model; calls
    # to a model it does not price (a self-hosted vLLM, the embedded model) are counted.
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    empty_answers: int = 0
    # Answers per path: read from a reply that followed the prompt's declared shape, or as
    # free text (every answer of an unconstrained call, and constrained replies that broke it).
    answers_structured: int = 0
    answers_free_text: int = 0
    # The answer cache after the last chunk (entries, bytes): a size, not a sum.
    cache: dict = dataclasses.field(default_factory=dict)
    # The keys of the first calls that failed (errors and unparsable replies), to name them.
    failed_keys: list = dataclasses.field(default_factory=list)

    def add(self, r: LLMResult) -> None:
        self.calls += 1
        self.empty_answers += int(r.text is not None and not r.text.strip())
        self.cached += int(r.cached)
        self.prompt_tokens += r.prompt_tokens
        self.completion_tokens += r.completion_tokens
        self.answers_structured += int(r.answered == STRUCTURED)
        self.answers_free_text += int(r.answered == FREE_TEXT)
        if r.error and r.error.startswith("unparsable"):
            self.parse_failures += 1
        elif r.error:
            self.errors += 1
        if r.error and len(self.failed_keys) < FAILED_KEYS_KEPT:
            self.failed_keys.append(r.key)

    def merge(self, other: CallStats) -> CallStats:
        counts = [f.name for f in dataclasses.fields(self) if f.name not in ("cache", "failed_keys")]
        merged = CallStats(**{n: getattr(self, n) + getattr(other, n) for n in counts})
        merged.cache = max(self.cache, other.cache, key=lambda c: c.get("entries", -1))
        merged.failed_keys = (self.failed_keys + other.failed_keys)[:FAILED_KEYS_KEPT]
        return merged

    def as_metadata(self, prefix: str = "llm") -> dict[str, int | float]:
        return {
            f"{prefix}/calls": self.calls,
            f"{prefix}/served_from_cache": self.cached,
            f"{prefix}/sent_to_model": self.calls - self.cached,
            f"{prefix}/prompt_tokens": self.prompt_tokens,
            f"{prefix}/completion_tokens": self.completion_tokens,
            f"{prefix}/parse_failures": self.parse_failures,
            f"{prefix}/errors": self.errors,
            f"{prefix}/cost_usd": round(self.cost_usd, 6),
            f"{prefix}/unpriced_calls": self.unpriced_calls,
            f"{prefix}/empty_answers": self.empty_answers,
            f"{prefix}/answers_structured": self.answers_structured,
            f"{prefix}/answers_free_text": self.answers_free_text,
            **({"llm_cache/entries": self.cache["entries"], "llm_cache/bytes": self.cache["bytes"]}
               if self.cache else {}),
            **({f"{prefix}/failed_items": dg.MetadataValue.text(", ".join(self.failed_keys) + (
                f" (and {self.errors + self.parse_failures - len(self.failed_keys):,} more)"
                if self.errors + self.parse_failures > len(self.failed_keys) else ""))} if self.failed_keys else {}),
        }


def price(model: str, results: Iterable[LLMResult], stats: CallStats) -> None:
    """Add the cost of the results that reached the model (not the cache) to ``stats``."""
    import litellm

    sent = [r for r in results if not r.cached and (r.text is not None or r.value is not None)]
    if not sent:
        return
    prompt = sum(r.prompt_tokens for r in sent)
    completion = sum(r.completion_tokens for r in sent)
    try:
        p, c = litellm.cost_per_token(model=model, prompt_tokens=prompt, completion_tokens=completion)
    except Exception:  # litellm prices hosted APIs only; self-hosted models cost GPU time
        stats.unpriced_calls += len(sent)
        return
    stats.cost_usd += float(p) + float(c)


_THINK = re.compile(r"<think>.*?</think>", re.S)


def strip_thinking(text: str) -> str:
    """Drop a reasoning block so parsers see only the answer."""
    return _THINK.sub("", text).strip()


class TransientError(RuntimeError):
    """A reply worth asking for again: one without choices."""


def _transient_errors() -> tuple[type[BaseException], ...]:
    import json

    import litellm
    import openai

    return (
        TimeoutError,  # asyncio's too, since 3.11
        litellm.RateLimitError,
        litellm.APIConnectionError,
        litellm.Timeout,
        litellm.ServiceUnavailableError,
        litellm.InternalServerError,
        openai.RateLimitError,
        openai.APIConnectionError,  # includes timeouts
        openai.InternalServerError,
        openai.APIResponseValidationError,
        json.JSONDecodeError,
        TransientError,
    )


# OpenAI's chat parameters; anything else a registry entry or step sets for a vLLM model
# (chat_template_kwargs, top_k, repetition_penalty) travels in the request body as vLLM
# reads it.
_OPENAI_CHAT = {"temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "logprobs", "top_logprobs",
                "stop", "n", "presence_penalty", "frequency_penalty", "response_format", "logit_bias"}


def _served_name(model: str) -> str:
    return model.split("/", 1)[1] if model.startswith("hosted_vllm/") else model


class LLMResource(dg.ConfigurableResource):
    """Calls registered models with caching, per-model routing, bounded concurrency and retries.

    Routing: a registry entry is reached at its own ``api_base`` (one URL, or a list of the
    model's replicas). A server this resource starts or attaches to (``server``, ``servers``)
    serves the aliases it names in ``aliases``; a server naming none serves the registry's
    ``vllm`` entries, and never an ``api`` one; several serving an alias are its replicas.
    ``api_base`` here is the URL of ``vllm`` entries that name no URL. ``max_concurrency``
    caps every model's own limit (a test, a shared server), per replica.

    Faults: the resource is the only retry layer (litellm's and the SDK's own are off), a
    call's timeout follows its token budget (:meth:`timeout`), and a circuit breaker stops
    the step with :class:`ModelServerDown` once the endpoint looks dead (:class:`Breaker`)
    instead of letting every item wait out its retries. A model with several replicas sends
    each try to the least loaded live one; a replica whose own breaker opens is out for
    ``replica_retry_seconds``, then probed with one request (:class:`ReplicaPool`), and the
    step stops only when every replica is out.
    """

    registry_path: str = Field(default=REGISTRY_PATH, description=(
        "the model registry file (alias -> model) every call resolves; by default $BENCHFOUNDRY_MODELS as set when "
        "the code location started, else resources/models.yaml"))
    cache_dir: str = ".cache/llm"
    # "disk" (a diskcache folder, cache_dir), "postgres" (one table every worker shares, at
    # cache_url) or "off". cache_url None: $BENCHFOUNDRY_CACHE_URL, read when the cache is
    # first used, so the URL's password need be in no run config (or give {env: NAME} there).
    cache_type: str = "disk"
    cache_url: Optional[str] = None
    max_concurrency: Optional[int] = None
    max_retries: int = 4
    backoff_seconds: float = 1.0
    # A call with a token budget may take timeout_floor plus its budget at
    # min_tokens_per_second (a labeling call's 64 tokens: 66 s; 8,192 thinking tokens: 600 s
    # at most); request_timeout is the ceiling, and the timeout of a call with no budget.
    request_timeout: float = 600.0
    timeout_floor: float = 60.0
    min_tokens_per_second: float = 10.0
    # The circuit breaker: breaker_failures failed tries in a row with no answer for
    # breaker_seconds, or more than breaker_rate of the last breaker_window items failed.
    breaker_failures: int = 16
    breaker_seconds: float = 30.0
    breaker_window: int = 100
    breaker_rate: float = 0.5
    # A replica whose breaker opened is sent no request for this long, then one (a probe).
    replica_retry_seconds: float = 30.0
    api_base: Optional[str] = None
    server: Optional[VLLMServerResource] = None
    servers: list[VLLMServerResource] = []
    progress_every_seconds: float = 30.0
    # Requests looked up in the cache and sent together; bounds what a partition holds in memory.
    chunk_size: int = 4096

    _registry: dict[str, ModelSpec] = PrivateAttr(default_factory=dict)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._load()
        # Dagster sets up ``server`` itself, not list members. All are launched before any is
        # waited for, so their start-ups overlap.
        try:
            for s in self.servers:
                s.start()
            for s in self.servers:
                s.wait()
        except Exception:
            for s in self.servers:
                s.stop()
            raise

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        for s in self.servers:
            s.stop()

    def _load(self) -> None:
        self._registry = load_registry(self.registry_path)
        install_embedded_provider()

    @property
    def cache(self) -> AnswerCache:
        return response_cache(self.cache_type, self.cache_dir, self.cache_url)

    def role(self, role: str) -> list[str]:
        """The aliases of a role (``quit.judge``, ``recor.builder``, ...) in the registry this
        resource is configured with, so that a run with another registry file asks its models."""
        return role_aliases(role, self.registry_path)

    def spec(self, alias: str) -> ModelSpec:
        if not self._registry:
            self._load()
        if alias not in self._registry:
            raise KeyError(f"model alias {alias!r} is not in {self.registry_path}")
        return self._registry[alias]

    def endpoint(self, alias: str) -> str | None:
        """The base URL the alias's requests go to, its first replica's (None: the embedded
        model, or the provider's own default for an API model)."""
        return self.endpoints(alias)[0]

    def endpoints(self, alias: str) -> list[str | None]:
        """Every replica's base URL: the servers started for the alias, else its registry
        entry's ``api_base`` list."""
        spec = self.spec(alias)
        if spec.backend == "embedded":
            return [None]
        started = [s for s in ([self.server] if self.server else []) + list(self.servers)]
        named = [s.base_url for s in started if alias in (s.aliases or [])]
        if named:
            return list(dict.fromkeys(named))
        if spec.backend == "vllm":
            anonymous = [s.base_url for s in started if not s.aliases]
            if anonymous:
                return list(dict.fromkeys(anonymous))
            return list(spec.api_bases) or [self.api_base]
        return list(spec.api_bases) or [None]

    def binding(self, alias: str) -> bool:
        """Whether the alias's yes/no verdicts may decide (the registry's ``verdicts``);
        advisory verdicts are recorded and decide nothing on their own."""
        return self.spec(alias).verdicts == "binding"

    def wants_cot_prompt(self, alias: str, thinking: bool) -> bool:
        """Thinking on a model without a native switch is a chain-of-thought prompt variant."""
        return thinking and self.spec(alias).thinking == "cot"

    def timeout(self, params: dict) -> float:
        """Seconds one try of a call may take: a hung server is given up on after the time a
        slow but live one needs for the call's token budget, not after a fixed ten minutes."""
        budget = params.get("max_tokens") or params.get("max_completion_tokens")
        if not isinstance(budget, (int, float)) or budget <= 0:
            return self.request_timeout
        return min(self.request_timeout, self.timeout_floor + budget / max(self.min_tokens_per_second, 1e-9))

    def breaker(self, alias: str) -> Breaker:
        """The breaker of one step's calls to the alias; a served model's carries its replicas,
        whose health lasts the step (each chunk's HTTP clients only the chunk)."""
        spec = self.spec(alias)
        urls = self.endpoints(alias)
        where = {"embedded": f"{alias} (embedded model)"}.get(spec.backend) or (
            f"{alias} (batch runner {spec.batch_command[0] if spec.batch_command else '?'})" if spec.mode == "batch"
            else f"{alias} at {', '.join(u for u in urls if u) or spec.model}")

        def make(where: str) -> Breaker:
            return Breaker(where, self.breaker_failures, self.breaker_seconds, self.breaker_window, self.breaker_rate,
                           on_open=self._servers_said)

        step = make(where)
        if spec.backend != "embedded" and spec.mode != "batch":
            step.replicas = ReplicaPool(alias, urls, lambda url: make(f"{alias} at {url or spec.model}"), step,
                                        self.replica_retry_seconds, self.backoff_seconds)
        return step

    def _servers_said(self) -> str:
        """What a managed server that has exited says (its code and the end of its log)."""
        started = ([self.server] if self.server else []) + list(self.servers)
        return "".join(s.exit_report() for s in started)

    def concurrency(self, spec: ModelSpec) -> int:
        limit = spec.concurrency
        return min(limit, self.max_concurrency) if self.max_concurrency else limit

    def params(self, spec: ModelSpec, req: LLMRequest, thinking: bool = False, kind: str | None = None) -> dict:
        """What is sent besides the messages: the entry's sampling, the step's parameters,
        the kind's token budget, the thinking switch, the sample index as seed, and, for a
        ``vllm`` entry, the request's declared output as vLLM's ``structured_outputs``.

        The constraint is part of the parameters, so of the cache key: a constrained answer
        never stands in for a free one. It is left out of requests that read log-probabilities
        (verdicts, ratings): vLLM masks the disallowed tokens before it computes them, so the
        probabilities read would be those of the constrained choice, not the model's."""
        params = {**spec.sampling, **req.params, "seed": req.sample}
        kind = kind or ("thinking" if thinking else None)
        if kind in spec.budgets:
            params["max_tokens"] = spec.budgets[kind]
        if spec.thinking == "native":
            params.update(spec.thinking_params if thinking else spec.thinking_off_params)
        if req.output is not None and spec.backend == "vllm" and not params.get("logprobs"):
            params["structured_outputs"] = req.output.constraint()
        return params

    # --- chat calls -----------------------------------------------------------------

    def run(self, alias: str, requests: Iterable[LLMRequest], parse: Callable[[str], Any] | None = None,
            stats: CallStats | None = None, **options: Any) -> list[LLMResult]:
        """Answer every request, in order (``options``: :meth:`stream`'s ``thinking``, ``log``,
        ``kind``). Failures become results with an error, never exceptions: unparsable output
        keeps its raw text, a call that still fails after its retries keeps no text."""
        return [r for chunk in self.stream(alias, requests, parse, stats, **options) for r in chunk]

    def stream(
        self,
        alias: str,
        requests: Iterable[LLMRequest],
        parse: Callable[[str], Any] | None = None,
        stats: CallStats | None = None,
        thinking: bool = False,
        log: Callable[[str], None] | None = None,
        kind: str | None = None,
        total: int | None = None,
    ) -> Iterator[list[LLMResult]]:
        """The results chunk by chunk (``chunk_size`` requests each, in order): a caller that
        writes each chunk before asking for the next holds one chunk in memory."""
        spec = self.spec(alias)
        stats = stats if stats is not None else CallStats()
        if total is None and hasattr(requests, "__len__"):
            total = len(requests)  # type: ignore[arg-type]
        progress = _Progress(total, self.progress_every_seconds, log, alias)
        cache = self.cache
        writer = AnswerWriter(cache)
        breaker = self.breaker(alias)
        it = iter(requests)
        # A batch file is a run of the model's batch runner, whose start-up (loading the
        # model) is paid per file: its chunks are the entry's batch_size, not the resource's.
        size = spec.batch_size if spec.mode == "batch" else self.chunk_size
        while chunk := list(itertools.islice(it, max(1, size))):
            sent = [(req, self.params(spec, req, thinking, kind)) for req in chunk]
            keys = [cache_key("chat", spec.model, req.messages, params) for req, params in sent]
            # the declaration a reply is read with: only where the model was asked to follow it
            shapes = [req.output if "structured_outputs" in params else None for req, params in sent]
            hits = cache.get_many(keys)
            results: list[LLMResult | None] = [None] * len(chunk)
            todo = []
            for i, ((req, params), key) in enumerate(zip(sent, keys)):
                if key in hits:
                    results[i] = _finish(_from_payload(req.key, hits[key], cached=True), parse, shapes[i])
                    progress.tick()
                else:
                    todo.append((i, req, params, key))

            def done(i: int, key: str, result: LLMResult, payload: dict | None) -> None:
                if payload is not None and writer.add(key, payload):  # a killed run keeps it
                    _later(writer.delay, writer.flush_if_due)
                breaker.finished(result.error)
                results[i] = _finish(result, parse, shapes[i])
                progress.tick()

            try:
                if spec.backend == "embedded":
                    for i, req, params, key in todo:
                        done(i, key, *self._call_embedded(spec, req, params, breaker))
                        breaker.check()
                elif spec.mode == "batch":
                    self._call_batch(spec, todo, done, log)
                else:
                    _run_async(self._call_all(spec, todo, done, breaker))
                breaker.check()
            finally:  # what was answered before a fault stays answered
                writer.flush()
            stats.cache = cache.stats()
            finished = [r for r in results if r is not None]
            for r in finished:
                stats.add(r)
            price(spec.model, finished, stats)
            yield finished

    def _call_embedded(self, spec: ModelSpec, req: LLMRequest, params: dict,
                       breaker: Breaker) -> tuple[LLMResult, dict | None]:
        import litellm

        delay = self.backoff_seconds
        for attempt in range(self.max_retries + 1):
            try:
                response = litellm.completion(model=spec.model, messages=req.messages, caching=False,
                                              timeout=self.timeout(params), num_retries=0, **params)
                breaker.answered()
                return _from_response(req.key, response)
            except _transient_errors() as e:
                breaker.attempt_failed(f"{type(e).__name__}: {e}")
                if attempt == self.max_retries:
                    return LLMResult(req.key, None, error=redact(f"gave up after {attempt + 1} tries: {e}")), None
                breaker.check()
                time.sleep(delay)
                delay *= 2
            except Exception as e:  # a bad request stays with its item, the run goes on
                return LLMResult(req.key, None, error=redact(f"{type(e).__name__}: {e}")), None
        raise AssertionError("unreachable")

    async def _ask_all(self, spec: ModelSpec, todo: list, one: Callable, pool: ReplicaPool) -> None:
        """``one(*item)`` for every item, up to the model's concurrency in flight per live
        replica; a ``vllm`` entry's HTTP client per replica (None for ``api`` entries) lives
        for the chunk."""
        limit = self.concurrency(spec) * max(1, len(pool.live))
        for r in pool.replicas:
            r.client = _vllm_client(r.url, self.request_timeout, limit) if spec.backend == "vllm" else None
        try:
            await _bounded(limit, (one(*t) for t in todo))
        finally:
            for r in pool.replicas:
                if r.client is not None:
                    await r.client.close()
                r.client = None

    def _litellm_auth(self, spec: ModelSpec, endpoint: str | None) -> dict:
        """The URL and key an ``api`` entry's calls carry. litellm sends the provider's key
        from the environment (``OPENAI_API_KEY``) to whatever ``api_base`` it is given, so an
        entry with its own ``api_base`` gets the key its ``api_key_env`` names, or none."""
        if not endpoint:
            return {}
        key = os.environ.get(spec.api_key_env, "") if spec.api_key_env else ""
        return {"api_base": endpoint, "api_key": key or "EMPTY"}

    async def _call_all(self, spec: ModelSpec, todo: list, done: Callable, breaker: Breaker) -> None:
        """Chat calls; each result is handed to ``done`` as it arrives."""

        async def ask(replica: Replica, req: LLMRequest, params: dict):
            if replica.client is not None:
                return await replica.client.post("/chat/completions",
                                                 _vllm_request(spec.model, req.messages, params), self.timeout(params))
            import litellm

            # litellm's own retries (and the OpenAI SDK's under it) off: this resource's are
            # the only ones, so max_retries means what it says
            return await litellm.acompletion(model=spec.model, messages=req.messages, caching=False,
                                             timeout=self.timeout(params), num_retries=0, max_retries=0,
                                             **self._litellm_auth(spec, replica.url), **params)

        async def one(i: int, req: LLMRequest, params: dict, key: str) -> None:
            try:
                response = await self._with_retries(lambda replica: ask(replica, req, params), breaker)
                result, payload = _from_response(req.key, response)
                if not result.text.strip() and not result.token_logprobs:
                    # Kept as the model's answer (a parser may reject it) and counted, but not
                    # cached: a server under strain answers empty, and a rerun asks again.
                    payload = None
            except ModelServerDown:
                raise
            except Exception as e:  # a bad request stays with its item, the run goes on
                result, payload = LLMResult(req.key, None, error=_failure(e)), None
            done(i, key, result, payload)
            breaker.check()

        await self._ask_all(spec, todo, one, breaker.replicas)

    def _call_batch(self, spec: ModelSpec, todo: list, done: Callable, log: Callable[[str], None] | None) -> None:
        """Chat calls through the entry's batch runner: the chunk's misses in one OpenAI batch
        file, each answer handed to ``done`` as the HTTP path hands it, so the cache, the
        accounting and the checks cannot tell the two apart. A call the runner answered with
        an error, or not at all, fails as a call that gave up (not cached: a rerun asks it);
        a runner that fails or times out fails every call of its file."""
        from resources.llm import batch

        if not todo:
            return
        def lines():
            for n, (_, req, params, _) in enumerate(todo):
                yield str(n), _vllm_request(spec.model, req.messages, params)

        os.makedirs(self.cache_dir, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="batch-", dir=self.cache_dir) as folder:
            source, target = os.path.join(folder, "input.jsonl"), os.path.join(folder, "output.jsonl")
            batch.write_batch(source, lines())
            answered: set[int] = set()
            try:
                batch.run_batch(list(spec.batch_command), source, target, spec.batch_timeout, log)
                for custom_id, response, error in batch.read_batch_output(target):
                    n = int(custom_id) if custom_id and custom_id.isdigit() else -1
                    if not 0 <= n < len(todo) or n in answered:
                        if log:
                            log(f"{spec.alias}: batch answer with unknown or repeated id {custom_id!r} ignored")
                        continue
                    answered.add(n)
                    i, req, _, key = todo[n]
                    done(i, key, *_batch_result(req.key, response, error))
                missing = "the batch runner returned no answer for this call"
            except batch.BatchRunError as e:
                missing = f"the batch runner failed: {e}"
            for n, (i, req, _, key) in enumerate(todo):
                if n not in answered:
                    done(i, key, LLMResult(req.key, None, error=missing), None)

    async def _with_retries(self, attempt_fn: Callable, breaker: Breaker):
        """``attempt_fn(replica)``'s reply, each try on the replica the pool picks: a failed
        try counts against that replica's breaker, and the next goes elsewhere if it can.
        The step's breaker sees items only (``finished``), and opens when no replica is left."""
        pool = breaker.replicas
        delay = self.backoff_seconds
        tried: tuple[Replica, ...] = ()
        for attempt in range(self.max_retries + 1):
            breaker.check()
            replica = pool.pick(tried)
            try:
                response = await attempt_fn(replica)
                _check_reply(response)
            except _transient_errors() as e:
                pool.failed(replica, f"{type(e).__name__}: {e}")
                if attempt == self.max_retries:
                    raise _GaveUp(f"gave up after {attempt + 1} tries: {type(e).__name__}: {e}") from e
                tried += (replica,)
                breaker.check()
                # jittered, so hundreds of requests told to slow down do not return together
                await asyncio.sleep(delay * (0.5 + random.random()))
                delay *= 2
                continue
            except BaseException:
                pool.release(replica)
                raise
            pool.answered(replica)
            return response
        raise AssertionError("unreachable")

    # --- continuation scores ------------------------------------------------------------

    def score(
        self,
        alias: str,
        requests: Iterable[ScoreRequest],
        stats: CallStats | None = None,
        log: Callable[[str], None] | None = None,
    ) -> list[LLMResult]:
        """The log-probability of each request's continuation given its prefix, token by
        token (``value``: a list of floats). The embedded model computes them in process;
        served models are asked for prompt log-probabilities (``echo`` with ``logprobs``,
        as vLLM's completions endpoint returns them). Cached like every other call."""
        spec = self.spec(alias)
        stats = stats if stats is not None else CallStats()
        requests = list(requests)
        progress = _Progress(len(requests), self.progress_every_seconds, log, alias)
        cache = self.cache
        keys = [cache_key("score", spec.model, req.prefix, req.continuation) for req in requests]
        hits = cache.get_many(keys)
        results: list[LLMResult | None] = [None] * len(requests)
        todo = []
        for i, (req, key) in enumerate(zip(requests, keys)):
            if key in hits:
                results[i] = LLMResult(req.key, None, value=list(hits[key]["logprobs"]), cached=True,
                                       prompt_tokens=hits[key]["tokens"])
                progress.tick()
            else:
                todo.append((i, req, key))

        writer = AnswerWriter(cache)
        breaker = self.breaker(alias)

        def done(i: int, key: str, req: ScoreRequest, values: list[float] | None, tokens: int, error: str | None):
            if error is None and writer.add(key, {"logprobs": values, "tokens": tokens}):
                _later(writer.delay, writer.flush_if_due)
            breaker.finished(error)
            results[i] = LLMResult(req.key, None, value=values, prompt_tokens=tokens, error=error)
            progress.tick()

        try:
            if spec.backend == "embedded":
                for i, req, key in todo:
                    try:
                        values, tokens = _EMBEDDED.continuation_logprobs(spec.model.split("/", 1)[-1], req.prefix,
                                                                         req.continuation)
                        done(i, key, req, values, tokens, None)
                    except Exception as e:  # a bad item stays with its key, the run goes on
                        done(i, key, req, None, 0, f"{type(e).__name__}: {e}")
                    breaker.check()
            else:
                _run_async(self._score_all(spec, todo, done, breaker))
            breaker.check()
        finally:
            writer.flush()
        for r in results:
            stats.add(r)
        price(spec.model, results, stats)
        stats.cache = cache.stats()
        return results  # type: ignore[return-value]

    async def _score_all(self, spec: ModelSpec, todo: list, done: Callable, breaker: Breaker) -> None:
        # one generated token: the prompt's length, not a budget, is what the server spends
        timeout = self.timeout({"max_tokens": 1})

        async def ask(replica: Replica, req: ScoreRequest):
            prompt = req.prefix + req.continuation
            if replica.client is not None:
                body = {"model": _served_name(spec.model), "prompt": prompt, "echo": True, "logprobs": 1,
                        "max_tokens": 1, "temperature": 0.0}
                return await replica.client.post("/completions", body, timeout)
            import litellm

            return await litellm.atext_completion(model=spec.model, prompt=prompt, echo=True, logprobs=1, max_tokens=1,
                                                  temperature=0.0, timeout=timeout, num_retries=0, max_retries=0,
                                                  **self._litellm_auth(spec, replica.url))

        async def one(i: int, req: ScoreRequest, key: str) -> None:
            try:
                response = await self._with_retries(lambda replica: ask(replica, req), breaker)
                values, tokens = continuation_from_echo(_field(_field(response, "choices")[0], "logprobs"),
                                                        len(req.prefix))
                done(i, key, req, values, tokens, None)
            except ModelServerDown:
                raise
            except Exception as e:  # a bad item stays with its key, the run goes on
                done(i, key, req, None, 0, _failure(e))
            breaker.check()

        await self._ask_all(spec, todo, one, breaker.replicas)


class _GaveUp(RuntimeError):
    pass


class ModelServerDown(RuntimeError):
    """A model endpoint failed so often that the step stops: it names the endpoint and its
    last errors. Answers received before are in the cache; a rerun asks only the rest."""


class Breaker:
    """The circuit breaker of one step's calls to one model. It opens on either rule:

    - ``failures`` failed tries in a row and no answer for ``seconds`` (a dead server fails
      every try at once; a hung one fails them at their timeout): waiting out every item's
      retries would take hours at a step's size;
    - more than ``rate`` of the last ``window`` items failed (a server that answers some
      calls but fails most).

    A failed try is one worth another (a timeout, a refused or dropped connection, 429,
    5xx, a reply that is not JSON); an item fails when it ends with no answer. ``on_open``
    adds what is known about the server (a managed process that exited). Not thread-safe:
    the async path runs on one event loop, the embedded path in one thread."""

    def __init__(self, where: str, failures: int, seconds: float, window: int, rate: float,
                 on_open: Callable[[], str] | None = None, clock: Callable[[], float] = time.monotonic):
        self.where, self.failures, self.seconds, self.rate = where, failures, seconds, rate
        self.on_open, self.clock = on_open, clock
        self.streak = 0
        self.last_answer = clock()
        self.recent: collections.deque[bool] = collections.deque(maxlen=max(1, window))
        self.failed_recently = 0  # the False in ``recent``, kept as items come and go
        self.errors: collections.deque[str] = collections.deque(maxlen=3)
        self.reason: str | None = None
        # A served model's replicas for this step (LLMResource.breaker); None elsewhere.
        self.replicas: ReplicaPool | None = None

    def answered(self) -> None:
        self.streak = 0
        self.last_answer = self.clock()

    def attempt_failed(self, error: str) -> None:
        self.streak += 1
        self._remember(error)
        quiet = self.clock() - self.last_answer
        if self.reason is None and self.streak >= self.failures and quiet >= self.seconds:
            self.reason = f"{self.streak} failed tries in a row and no answer for {quiet:.0f}s"

    def finished(self, error: str | None) -> None:
        if len(self.recent) == self.recent.maxlen and not self.recent[0]:
            self.failed_recently -= 1  # the oldest, about to drop out of the window, had failed
        self.recent.append(error is None)
        if error is not None:
            self.failed_recently += 1
            self._remember(error)
        failed = self.failed_recently
        if self.reason is None and len(self.recent) == self.recent.maxlen and failed > self.rate * len(self.recent):
            self.reason = f"{failed} of the last {len(self.recent)} items failed"

    def check(self) -> None:
        if self.reason is None:
            return
        last = "; ".join(dict.fromkeys(self.errors))
        said = self.on_open() if self.on_open else ""
        raise ModelServerDown(redact(f"{self.where}: circuit breaker open, {self.reason}. "
                                     f"Last errors: {last}{said}"))

    def _remember(self, error: str) -> None:
        self.errors.append(error[:300])


def _failure(e: Exception) -> str:
    """The error an item keeps: the retries' own account, or the exception's type and text."""
    return redact(str(e) if isinstance(e, _GaveUp) else f"{type(e).__name__}: {e}")


def _check_reply(response: Any) -> None:
    """A reply with no choices is a server fault worth another try, not an answer."""
    if not _field(response, "choices"):
        raise TransientError("the reply has no choices")


async def _bounded(limit: int, coros: Iterator) -> None:
    """Run coroutines with at most ``limit`` in flight, pulling the next one as each ends,
    so no task exists for a request that is not being asked."""

    async def worker():
        for coro in coros:  # one shared iterator: each coroutine is taken by one worker
            await coro

    await asyncio.gather(*(worker() for _ in range(max(1, limit))))


def _later(delay: float, fn: Callable[[], None]) -> None:
    """``fn`` after ``delay`` on the running event loop; nothing outside one (a synchronous
    caller flushes at its next answer or at the end of its chunk)."""
    try:
        asyncio.get_running_loop().call_later(delay, fn)
    except RuntimeError:
        pass


def _run_async(coro) -> None:
    """Run a coroutine to the end from synchronous code, also where a loop is running (a
    notebook): then in a thread of its own."""
    try:
        asyncio.get_running_loop()
        inside_loop = True
    except RuntimeError:
        inside_loop = False
    if not inside_loop:  # run outside the except block, so its errors carry no "no running loop"
        asyncio.run(coro)
        return
    error: list[BaseException] = []
    thread = threading.Thread(target=lambda: _capture(coro, error))
    thread.start()
    thread.join()
    if error:
        raise error[0]


def _capture(coro, error: list) -> None:
    try:
        asyncio.run(coro)
    except BaseException as e:  # re-raised in the caller's thread
        error.append(e)


class ServerFault(TransientError):
    """A server's answer worth another try: 429 (slow down) or a 5xx."""


class ConnectionFailed(TransientError):
    """The server could not be reached, or dropped the connection before it answered."""


class RequestRejected(RuntimeError):
    """A server's 4xx other than 429: the request itself is at fault, asking again is useless."""


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
            headers={"Authorization": f"Bearer {os.environ.get('VLLM_API_KEY', 'EMPTY')}",
                     "Content-Type": "application/json"})

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
    extra = {**params.get("extra_body", {}),
             **{k: v for k, v in params.items() if k not in _OPENAI_CHAT and k != "extra_body"}}
    return {"model": _served_name(model), "messages": messages, **body, **extra}


def _batch_result(key: str, response: dict | None, error: str | None) -> tuple[LLMResult, dict | None]:
    """A batch runner's answer as the HTTP path would have made it (an empty answer kept
    but not cached, as there)."""
    if error is not None or response is None:
        return LLMResult(key, None, error=f"the batch runner answered with an error: {error or 'no body'}"), None
    try:
        _check_reply(response)
        result, payload = _from_response(key, response)
    except Exception as e:  # an answer of the wrong shape stays with its item
        return LLMResult(key, None, error=f"unreadable batch answer: {type(e).__name__}: {e}"), None
    if not result.text.strip() and not result.token_logprobs:
        payload = None
    return result, payload


def _field(obj: Any, name: str) -> Any:
    """A reply's field, from the SDK's objects or from plain JSON (a batch runner's answers)."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _from_response(key: str, response: Any) -> tuple[LLMResult, dict]:
    """A result and what the cache keeps of it (plain JSON-able values)."""
    choice = _field(response, "choices")[0]
    usage = _field(response, "usage")
    tokens, alternatives = _token_logprobs(choice)
    content = _field(_field(choice, "message"), "content")
    if content is not None and not isinstance(content, str):
        raise ValueError(f"the reply's content is a {type(content).__name__}, not text")
    payload = {
        "text": content or "",
        "prompt_tokens": int(_field(usage, "prompt_tokens") or 0) if usage is not None else 0,
        "completion_tokens": int(_field(usage, "completion_tokens") or 0) if usage is not None else 0,
        "tokens": tokens,
        "token_logprobs": alternatives,
    }
    return _from_payload(key, payload, cached=False), payload


def _from_payload(key: str, payload: dict, cached: bool) -> LLMResult:
    alternatives = payload.get("token_logprobs")
    return LLMResult(key, payload["text"], cached=cached, prompt_tokens=payload["prompt_tokens"],
                     completion_tokens=payload["completion_tokens"],
                     top_logprobs=alternatives[0] if alternatives else None,
                     tokens=payload.get("tokens"), token_logprobs=alternatives)


def _finish(result: LLMResult, parse: Callable[[str], Any] | None, output: Output | None = None) -> LLMResult:
    """The result as its step reads it: a reply that follows the declared ``output`` (sent as
    a constraint) becomes the free-text form the step's parser reads; any other reply is
    read as it is. ``parse`` then gives the value (an unparsable reply keeps its text)."""
    if result.text is None:
        return result
    # the answer without its reasoning block, stripped once: this runs for every call
    answer = strip_thinking(result.text)
    rendered = output.read(answer) if output is not None else None
    if rendered is not None:
        result.text = answer = rendered
        result.answered = STRUCTURED
    else:
        result.answered = FREE_TEXT
    if parse is None:
        result.value = answer
        return result
    try:
        result.value = parse(answer)
    except ParseError as e:
        result.error = f"unparsable: {e}"
    return result


def _token_logprobs(choice: Any) -> tuple[list[str] | None, list[dict[str, float]] | None]:
    """Each generated token and its alternatives (the chosen token among them)."""
    logprobs = _field(choice, "logprobs")
    content = (logprobs.get("content") if isinstance(logprobs, dict) else getattr(logprobs, "content", None)) \
        if logprobs is not None else None
    if not content:
        return None, None
    tokens, alternatives = [], []
    for entry in content:
        get = entry.get if isinstance(entry, dict) else lambda k, e=entry: getattr(e, k, None)
        top = {(t["token"] if isinstance(t, dict) else t.token): float(t["logprob"] if isinstance(t, dict) else t.logprob)
               for t in (get("top_logprobs") or [])}
        top.setdefault(get("token"), float(get("logprob")))
        tokens.append(get("token"))
        alternatives.append(top)
    return tokens, alternatives


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


class _Progress:
    """Logs done / total and rate at a steady interval, so a user watching a run sees it move."""

    def __init__(self, total: int | None, every: float, log, alias: str):
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
                of = f"/{self.total}" if self.total is not None else ""
                self.log(f"{self.alias}: {self.done}{of} calls, {rate:.1f} calls/s")
