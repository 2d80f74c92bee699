"""The call path of :class:`~resources.llm.resource.LLMResource`: how a chunk's cache misses
reach the model (the embedded one in process, a served one over HTTP or through litellm, a batch
runner's file), each try on the replica the pool picks, with retries and the breaker checked
between them. The methods read the resource's fields (``max_retries``, ``backoff_seconds``,
``request_timeout``, ``cache_dir``) and its ``timeout`` and ``concurrency``."""

from __future__ import annotations

import asyncio
import os
import random
import tempfile
import threading
import time
from collections.abc import Callable, Iterator

from resources.llm.client import _served_name, _vllm_client, _vllm_request
from resources.llm.faults import Breaker, ModelServerDown, _failure, _GaveUp, _transient_errors
from resources.llm.registry import ModelSpec
from resources.llm.replicas import Replica, ReplicaPool
from resources.llm.results import (
    LLMRequest,
    LLMResult,
    ScoreRequest,
    _batch_result,
    _check_chat_reply,
    _check_reply,
    _field,
    _from_response,
    continuation_from_echo,
)
from resources.redact import redact


class CallPath:
    """The methods of :class:`~resources.llm.resource.LLMResource` that ask a model: chat calls
    (embedded, served, batch), continuation scores, and the retries around each try."""

    def _call_embedded(
        self, spec: ModelSpec, req: LLMRequest, params: dict, breaker: Breaker
    ) -> tuple[LLMResult, dict | None]:
        import litellm

        delay = self.backoff_seconds
        for attempt in range(self.max_retries + 1):
            try:
                response = litellm.completion(
                    model=spec.model,
                    messages=req.messages,
                    caching=False,
                    timeout=self.timeout(params),
                    num_retries=0,
                    **params,
                )
                _check_chat_reply(response)
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
        replica, as the replicas' breakers are told; a ``vllm`` entry's HTTP client per replica
        (None for ``api`` entries) lives for the chunk."""
        limit = self.concurrency(spec) * max(1, len(pool.live))
        pool.expect(min(len(todo), limit))
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
                reply = await replica.client.post(
                    "/chat/completions", _vllm_request(spec.model, req.messages, params), self.timeout(params)
                )
                _check_chat_reply(reply)
                return reply
            import litellm

            # litellm's own retries (and the OpenAI SDK's under it) off: this resource's are
            # the only ones, so max_retries means what it says
            return await litellm.acompletion(
                model=spec.model,
                messages=req.messages,
                caching=False,
                timeout=self.timeout(params),
                num_retries=0,
                max_retries=0,
                **self._litellm_auth(spec, replica.url),
                **params,
            )

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

    async def _score_all(self, spec: ModelSpec, todo: list, done: Callable, breaker: Breaker) -> None:
        # one generated token: the prompt's length, not a budget, is what the server spends
        timeout = self.timeout({"max_tokens": 1})

        async def ask(replica: Replica, req: ScoreRequest):
            prompt = req.prefix + req.continuation
            if replica.client is not None:
                body = {
                    "model": _served_name(spec.model),
                    "prompt": prompt,
                    "echo": True,
                    "logprobs": 1,
                    "max_tokens": 1,
                    "temperature": 0.0,
                }
                return await replica.client.post("/completions", body, timeout)
            import litellm

            return await litellm.atext_completion(
                model=spec.model,
                prompt=prompt,
                echo=True,
                logprobs=1,
                max_tokens=1,
                temperature=0.0,
                timeout=timeout,
                num_retries=0,
                max_retries=0,
                **self._litellm_auth(spec, replica.url),
            )

        async def one(i: int, req: ScoreRequest, key: str) -> None:
            try:
                response = await self._with_retries(lambda replica: ask(replica, req), breaker)
                values, tokens = continuation_from_echo(
                    _field(_field(response, "choices")[0], "logprobs"), len(req.prefix)
                )
                done(i, key, req, values, tokens, None)
            except ModelServerDown:
                raise
            except Exception as e:  # a bad item stays with its key, the run goes on
                done(i, key, req, None, 0, _failure(e))
            breaker.check()

        await self._ask_all(spec, todo, one, breaker.replicas)


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
