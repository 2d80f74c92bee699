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

This module holds the resource: its configuration, its routing to each model's endpoints and
the cached, chunked ``run``/``stream``/``score``. How a try reaches the model and is retried is
``calls.py`` (with ``client.py``, vLLM's HTTP client); what fails loudly, ``faults.py``; the
requests and results, ``results.py``; the accounting, ``accounting.py``.
"""

from __future__ import annotations

import os

# litellm fetches a model cost map from the network at import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import dagster as dg
from pydantic import Field, PrivateAttr

from resources.llm.accounting import CallStats, _Progress, price
from resources.llm.cache import AnswerCache, AnswerWriter, cache_key, install_embedded_provider, response_cache
from resources.llm.calls import CallPath, _later, _run_async
from resources.llm.embedded import _EMBEDDED
from resources.llm.faults import Answers, Breaker
from resources.llm.model import Model
from resources.llm.registry import REGISTRY_PATH, ModelSpec, load_registry, role_aliases
from resources.llm.replicas import ReplicaPool
from resources.llm.results import LLMRequest, LLMResult, ScoreRequest, _finish, _from_payload
from resources.vllm_server import VLLMServerResource


class LLMResource(CallPath, dg.ConfigurableResource):
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

    registry_path: str = Field(
        default=REGISTRY_PATH,
        description=(
            "the model registry file (alias -> model) every call resolves; by default $BENCHFOUNDRY_MODELS as set when "
            "the code location started, else resources/models.yaml"
        ),
    )
    # The registry the code location's model partitions and concurrency pools were computed
    # from when it loaded (the definitions set it: BENCHFOUNDRY_MODELS, else the default).
    # A run whose registry_path differs is refused: it would ask models no partition names.
    definitions_registry: str | None = None
    cache_dir: str = ".cache/llm"
    # "disk" (a diskcache folder, cache_dir), "postgres" (one table every worker shares, at
    # cache_url) or "off". cache_url None: $BENCHFOUNDRY_CACHE_URL, read when the cache is
    # first used, so the URL's password need be in no code. None of these four is run config.
    cache_type: str = "disk"
    cache_url: str | None = None
    max_concurrency: int | None = None
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
    api_base: str | None = None
    server: VLLMServerResource | None = None
    servers: list[VLLMServerResource] = []
    progress_every_seconds: float = 30.0
    # Requests looked up in the cache and sent together; bounds what a partition holds in memory.
    chunk_size: int = 4096

    _registry: dict[str, ModelSpec] = PrivateAttr(default_factory=dict)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._check_registry()
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

    def _check_registry(self) -> None:
        if self.definitions_registry and os.path.abspath(self.registry_path) != os.path.abspath(
            self.definitions_registry
        ):
            raise dg.Failure(
                f"the llm resource's registry_path {self.registry_path} is not the registry this code location's "
                f"model partitions and pools were computed from ({self.definitions_registry}); point "
                "BENCHFOUNDRY_MODELS at it and restart the code location instead of changing it for one run"
            )

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

    def model(self, role: str) -> Model:
        """The handle of a role's model (its first alias: ``quit.judge``, ``recor.builder``)."""
        return self.named(self.role(role)[0])

    def models(self, role: str) -> list[Model]:
        """The handles of every alias of a role (``quit.labelers``, ``recor.generators``)."""
        return [self.named(alias) for alias in self.role(role)]

    def named(self, alias: str) -> Model:
        """The handle of one alias (a partition's model: a subject, a reader)."""
        return Model(self, self.spec(alias))

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
            f"{alias} (batch runner {spec.batch_command[0] if spec.batch_command else '?'})"
            if spec.mode == "batch"
            else f"{alias} at {', '.join(u for u in urls if u) or spec.model}"
        )

        def make(where: str) -> Breaker:
            return Breaker(
                where,
                self.breaker_failures,
                self.breaker_seconds,
                self.breaker_window,
                self.breaker_rate,
                on_open=self._servers_said,
            )

        step = make(where)
        if spec.backend != "embedded" and spec.mode != "batch":
            step.replicas = ReplicaPool(
                alias,
                urls,
                lambda url: make(f"{alias} at {url or spec.model}"),
                step,
                self.replica_retry_seconds,
                self.backoff_seconds,
            )
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

    def run(
        self,
        alias: str,
        requests: Iterable[LLMRequest],
        parse: Callable[[str], Any] | None = None,
        stats: CallStats | None = None,
        **options: Any,
    ) -> list[LLMResult]:
        """Answer every request, in order (``options``: :meth:`stream`'s ``thinking``, ``log``,
        ``kind``). Failures become results with an error, so that one bad item does not stop
        a step: unparsable output keeps its raw text, a call that still fails after its
        retries keeps no text. A call none of whose items got an answer, in a step none of
        whose calls got one, raises :class:`~resources.llm.faults.NoAnswers` instead, once the
        answers are written (:class:`~resources.llm.faults.Answers`)."""
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
        writes each chunk before asking for the next holds one chunk in memory. After the
        last chunk, :class:`~resources.llm.faults.NoAnswers` if neither this call nor its
        step got an answer."""
        spec = self.spec(alias)
        stats = stats if stats is not None else CallStats()
        if total is None and hasattr(requests, "__len__"):
            total = len(requests)  # type: ignore[arg-type]
        progress = _Progress(total, self.progress_every_seconds, log, alias)
        cache = self.cache
        writer = AnswerWriter(cache)
        breaker = self.breaker(alias)
        answers = Answers(alias)
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
                # called only while this chunk is asked, so the chunk's lists are the ones bound
                results[i] = _finish(result, parse, shapes[i])  # noqa: B023
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
            answers.add(finished)
            yield finished
        answers.check(stats)

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
        as vLLM's completions endpoint returns them). Cached like every other call; no
        value for any request of a step without answers is
        :class:`~resources.llm.faults.NoAnswers`, as in :meth:`run`."""
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
                results[i] = LLMResult(
                    req.key, None, value=list(hits[key]["logprobs"]), cached=True, prompt_tokens=hits[key]["tokens"]
                )
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
                        values, tokens = _EMBEDDED.continuation_logprobs(
                            spec.model.split("/", 1)[-1], req.prefix, req.continuation
                        )
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
        answers = Answers(alias)
        answers.add(results)
        answers.check(stats)
        return results  # type: ignore[return-value]
