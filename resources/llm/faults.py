"""Failing loudly: which errors are worth another try, the circuit breaker that stops a step
once its model's endpoint looks dead (:class:`ModelServerDown`), and the faults of the vLLM
HTTP client."""

from __future__ import annotations

import collections
import time
from collections.abc import Callable

from resources.llm.replicas import ReplicaPool
from resources.redact import redact


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

    def __init__(
        self,
        where: str,
        failures: int,
        seconds: float,
        window: int,
        rate: float,
        on_open: Callable[[], str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
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
        raise ModelServerDown(redact(f"{self.where}: circuit breaker open, {self.reason}. Last errors: {last}{said}"))

    def _remember(self, error: str) -> None:
        self.errors.append(error[:300])


def _failure(e: Exception) -> str:
    """The error an item keeps: the retries' own account, or the exception's type and text."""
    return redact(str(e) if isinstance(e, _GaveUp) else f"{type(e).__name__}: {e}")


class ServerFault(TransientError):
    """A server's answer worth another try: 429 (slow down) or a 5xx."""


class ConnectionFailed(TransientError):
    """The server could not be reached, or dropped the connection before it answered."""


class RequestRejected(RuntimeError):
    """A server's 4xx other than 429: the request itself is at fault, asking again is useless."""
