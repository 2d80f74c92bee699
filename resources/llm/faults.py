"""Failing loudly: which errors are worth another try, the circuit breaker that stops a step
once its model's endpoint looks dead (:class:`ModelServerDown`), a call none of whose items
got an answer (:class:`NoAnswers`), and the faults of the vLLM HTTP client."""

from __future__ import annotations

import collections
import time
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from resources.llm.replicas import ReplicaPool
from resources.redact import redact

if TYPE_CHECKING:
    from resources.llm.accounting import CallStats
    from resources.llm.results import LLMResult


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
      retries would take hours at a step's size. A served step with fewer items in flight
      (told by :meth:`expect`) needs as many: a 12-item step on a hung server opens when its
      12 first tries time out, not after a second round of timeouts. The embedded model asks
      one item at a time, so there a run is over successive items, and ``failures`` stands;
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
        self.in_flight: int | None = None  # the most items in flight at once, when told
        self.streak = 0
        self.last_answer = clock()
        self.recent: collections.deque[bool] = collections.deque(maxlen=max(1, window))
        self.failed_recently = 0  # the False in ``recent``, kept as items come and go
        self.errors: collections.deque[str] = collections.deque(maxlen=3)
        self.reason: str | None = None
        # A served model's replicas for this step (LLMResource.breaker); None elsewhere.
        self.replicas: ReplicaPool | None = None

    def expect(self, in_flight: int) -> None:
        """The most items the step has in flight at once (the chunk's items to ask, capped by
        the concurrency): a run of that many failed tries is every item in flight failing."""
        self.in_flight = max(1, in_flight)

    def answered(self) -> None:
        self.streak = 0
        self.last_answer = self.clock()

    def attempt_failed(self, error: str) -> None:
        self.streak += 1
        self._remember(error)
        quiet = self.clock() - self.last_answer
        needed = min(self.failures, self.in_flight or self.failures)
        if self.reason is None and self.streak >= needed and quiet >= self.seconds:
            every = " (every item in flight)" if needed < self.failures else ""
            self.reason = f"{self.streak} failed tries in a row{every} and no answer for {quiet:.0f}s"

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


class NoAnswers(RuntimeError):
    """No item of a step's calls got an answer: the step fails instead of materializing a
    table of errors. It names the alias, the items asked and the last errors."""


# Items answered so far in each running step (its Dagster context, dropped with it), across
# every call and model of the step: a step that got answers keeps a later call's failures.
_STEP_ANSWERED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _current_step() -> object | None:
    """The running step's context, or None outside a Dagster step (a script, a unit test)."""
    import dagster as dg

    try:
        return dg.OpExecutionContext.get()
    except dg.DagsterInvariantViolationError:
        return None


class Answers:
    """Whether a call got any answer. An item with a reply is one, also a reply that did
    not parse and one served from the cache; an item that ended with an error and no reply
    (a call that gave up, a request the server rejected) is not.

    The rule is the step's: a call with no answer stops the step only when no call of the
    same step got one (in a Dagster step, every call it made; elsewhere, the calls that
    shared one ``CallStats``). A small follow-up call of a step that got answers (a retry of
    the few items a server refused, a judge asked about one item) leaves its failures as
    rejects, as one bad item should."""

    def __init__(self, alias: str):
        self.alias = alias
        self.asked = self.answered = 0
        self.errors: dict[str, None] = {}  # the last distinct errors, oldest first
        self.step = _current_step()

    def add(self, results: Iterable[LLMResult]) -> None:
        for r in results:
            self.asked += 1
            if r.error is None or r.text is not None:
                self.answered += 1
                if self.step is not None:  # counted as it comes: a call made between chunks sees it
                    _STEP_ANSWERED[self.step] = _STEP_ANSWERED.get(self.step, 0) + 1
                continue
            error = r.error[:300]
            self.errors.pop(error, None)
            self.errors[error] = None
            if len(self.errors) > 3:
                del self.errors[next(iter(self.errors))]

    def check(self, stats: CallStats | None = None) -> None:
        """Raise :class:`NoAnswers` when items were asked, none was answered, and the step
        (the running Dagster step, else ``stats``) holds no answer either."""
        if self.step is not None:
            if _STEP_ANSWERED.get(self.step):
                return
        elif stats is not None and stats.calls > stats.errors:
            return
        if self.asked and not self.answered:
            raise NoAnswers(
                redact(
                    f"{self.alias}: none of the {self.asked:,} items asked got an answer, so the step stops "
                    f"(its answers would all be errors). Last errors: {'; '.join(reversed(self.errors))}"
                )
            )


def _failure(e: Exception) -> str:
    """The error an item keeps: the retries' own account, or the exception's type and text."""
    return redact(str(e) if isinstance(e, _GaveUp) else f"{type(e).__name__}: {e}")


class ServerFault(TransientError):
    """A server's answer worth another try: 429 (slow down) or a 5xx."""


class ConnectionFailed(TransientError):
    """The server could not be reached, or dropped the connection before it answered."""


class RequestRejected(RuntimeError):
    """A server's 4xx other than 429: the request itself is at fault, asking again is useless."""
