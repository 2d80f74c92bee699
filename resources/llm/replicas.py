"""A served model's replicas within one step (vLLM scales by servers, one per GPU).

Each try goes to the live replica with the fewest requests in flight. A replica has its own
circuit breaker, at the step's thresholds; when it opens, the replica is out for
``retry_seconds``, then one request is sent to it (a probe) and an answer brings it back.
A failed try is retried by the resource on whichever replica is then least loaded, never on
one the item has already failed on while another is live, so an item in flight on a replica
that died finishes on another. The step's own breaker opens when every replica is out.

With one replica nothing changes: its breaker sees the tries the step's breaker saw before,
and it being out is the step's breaker opening, with the same message.
"""

from __future__ import annotations

import collections
import math
import time
from collections.abc import Callable
from typing import Any

import dagster as dg


class Replica:
    """One endpoint of a model: its breaker, its tries in flight and how they ended, and the
    HTTP client of the chunk being asked (None for litellm's ``api`` entries)."""

    __slots__ = ("url", "breaker", "client", "in_flight", "answers", "failures", "out_until", "probing", "cool_until")

    def __init__(self, url: str | None, breaker: Any):
        self.url, self.breaker = url, breaker
        self.client: Any = None
        self.in_flight = self.answers = self.failures = 0
        self.out_until: float | None = None  # None: live
        self.probing = False
        self.cool_until = 0.0


class ReplicaPool:
    """The replicas of one model for one step. ``breaker(url)`` makes a replica's breaker;
    ``step`` is the step's breaker, opened here when no replica is left. Single-threaded, as
    the breakers are: every try of a step runs on one event loop."""

    def __init__(
        self,
        alias: str,
        urls: list[str | None],
        breaker: Callable[[str | None], Any],
        step: Any,
        retry_seconds: float,
        backoff_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.alias, self.step, self.clock = alias, step, clock
        self.retry_seconds, self.backoff_seconds = retry_seconds, backoff_seconds
        self._breaker = breaker
        self.replicas = [Replica(url, breaker(url)) for url in urls]
        self.live = list(self.replicas)
        self.out: list[Replica] = []
        self._next_probe = math.inf  # when the first replica out may be probed
        self.share: int | None = None  # the most items in flight on one replica, when told

    def expect(self, in_flight: int) -> None:
        """The most items the step has in flight at once: each live replica's breaker is told
        its share (a breaker made when a replica comes back, at :meth:`_bring_back`, too)."""
        self.share = math.ceil(in_flight / max(1, len(self.live)))
        for r in self.replicas:
            r.breaker.expect(self.share)

    def pick(self, tried: tuple[Replica, ...] = ()) -> Replica:
        """The replica for an item's next try, counted in flight: a replica out whose time is
        up (its probe), else the least loaded live one the item has not failed on. A live
        replica whose last try failed takes one try at a time, ``backoff_seconds`` apart, while
        another can take it: a dead server fails at once, and would otherwise draw every try."""
        if self.out and self.clock() >= self._next_probe:
            probe = self._probe(tried)
            if probe is not None:
                return probe
        live = self.live
        if len(live) == 1:
            replica = live[0]
        elif live:
            replica = self._least_loaded(tried)
        else:
            self.step.check()  # opened when the last replica went out
            raise AssertionError("no replica is live and the step's breaker is closed")
        replica.in_flight += 1
        return replica

    def _least_loaded(self, tried: tuple[Replica, ...]) -> Replica:
        now = None
        best = None
        for r in self.live:
            if r in tried:
                continue
            if r.breaker.streak:
                now = self.clock() if now is None else now
                if r.in_flight or now < r.cool_until:
                    continue
            if best is None or r.in_flight < best.in_flight:
                best = r
        return best or min(self.live, key=lambda r: r.in_flight)

    def _probe(self, tried: tuple[Replica, ...]) -> Replica | None:
        now = self.clock()
        for r in self.out:
            if not r.probing and r.out_until is not None and r.out_until <= now and r not in tried:
                r.probing = True
                r.in_flight += 1
                self._schedule()
                return r
        return None

    def answered(self, replica: Replica) -> None:
        replica.in_flight -= 1
        replica.answers += 1
        replica.breaker.answered()
        if replica.out_until is not None:
            self._bring_back(replica)

    def failed(self, replica: Replica, error: str) -> None:
        """A try that is worth another failed on ``replica``: its breaker counts it, and it
        may go out (a probe that failed keeps it out another ``retry_seconds``)."""
        replica.in_flight -= 1
        replica.failures += 1
        replica.breaker.attempt_failed(error)
        now = self.clock()
        replica.cool_until = now + self.backoff_seconds
        if replica.probing:
            replica.probing = False
            replica.out_until = now + self.retry_seconds
            self._schedule()
        elif replica.out_until is None and replica.breaker.reason is not None:
            self._take_out(replica, now)

    def release(self, replica: Replica) -> None:
        """A try that ended neither way (a request the server rejected, a step stopping)."""
        replica.in_flight -= 1
        if replica.probing:
            replica.probing = False
            self._schedule()

    def _take_out(self, replica: Replica, now: float) -> None:
        self.live.remove(replica)
        self.out.append(replica)
        replica.out_until = now + self.retry_seconds
        self._schedule()
        if not self.live:
            self._open_step()
            return
        dg.get_dagster_logger().warning(
            f"{self.alias}: replica {replica.url} is out for {self.retry_seconds:g}s "
            f"({replica.breaker.reason}); {self.answers()}"
        )

    def _bring_back(self, replica: Replica) -> None:
        self.out.remove(replica)
        self.live.append(replica)
        replica.out_until, replica.probing = None, False
        replica.breaker = self._breaker(replica.url)
        if self.share is not None:
            replica.breaker.expect(self.share)
        self._schedule()
        dg.get_dagster_logger().info(f"{self.alias}: replica {replica.url} answers again; {self.answers()}")

    def _schedule(self) -> None:
        self._next_probe = min(
            (r.out_until for r in self.out if not r.probing and r.out_until is not None), default=math.inf
        )

    def _open_step(self) -> None:
        """Every replica is out: the step's breaker opens, naming each and why it is out."""
        if len(self.replicas) == 1:
            only = self.replicas[0].breaker
            self.step.reason, self.step.errors = only.reason, only.errors
            return
        self.step.reason = "every replica is out: " + "; ".join(
            f"{r.url}: {r.breaker.reason} ({r.answers:,} answered)" for r in self.replicas
        )
        last = [e for r in self.replicas for e in r.breaker.errors]
        self.step.errors = collections.deque(last, maxlen=max(len(last), 1))

    def answers(self) -> str:
        """Answers (and failed tries) per replica so far, for the step's log."""
        return "answers per replica: " + ", ".join(
            f"{r.url} {r.answers:,}" + (f" ({r.failures:,} failed tries)" if r.failures else "") for r in self.replicas
        )
