"""Call accounting: the counts, tokens and cost a step reports as metadata (:class:`CallStats`),
and the progress a user watching a run sees."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterable

import dagster as dg

from resources.llm.results import LLMResult
from resources.llm.structured import FREE_TEXT, STRUCTURED

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
            **(
                {"llm_cache/entries": self.cache["entries"], "llm_cache/bytes": self.cache["bytes"]}
                if self.cache
                else {}
            ),
            **(
                {
                    f"{prefix}/failed_items": dg.MetadataValue.text(
                        ", ".join(self.failed_keys)
                        + (
                            f" (and {self.errors + self.parse_failures - len(self.failed_keys):,} more)"
                            if self.errors + self.parse_failures > len(self.failed_keys)
                            else ""
                        )
                    )
                }
                if self.failed_keys
                else {}
            ),
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
