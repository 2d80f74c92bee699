"""The handle a step is given for one model: its registry entry and the resource that calls
it, bound together, so a step asks ``model.run(requests)`` and reads ``model.spec`` instead
of carrying a resource and an alias that could drift apart."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from resources.llm.registry import ModelSpec
from resources.llm.results import LLMRequest, LLMResult, ScoreRequest

if TYPE_CHECKING:
    from resources.llm.resource import LLMResource


@dataclasses.dataclass(frozen=True)
class Model:
    """One registry alias as the ``llm`` resource resolved it (``llm.model(role)``,
    ``llm.named(alias)``): every call goes through the resource's cache, retries and breaker."""

    llm: LLMResource
    spec: ModelSpec

    @property
    def alias(self) -> str:
        return self.spec.alias

    @property
    def binding(self) -> bool:
        """Whether its yes/no verdicts may decide (the registry's ``verdicts``)."""
        return self.spec.verdicts == "binding"

    def wants_cot_prompt(self, thinking: bool) -> bool:
        """Thinking on a model without a native switch is a chain-of-thought prompt variant."""
        return thinking and self.spec.thinking == "cot"

    def run(self, requests: Iterable[LLMRequest], *args: Any, **options: Any) -> list[LLMResult]:
        return self.llm.run(self.alias, requests, *args, **options)

    def stream(self, requests: Iterable[LLMRequest], *args: Any, **options: Any) -> Iterator[list[LLMResult]]:
        return self.llm.stream(self.alias, requests, *args, **options)

    def score(self, requests: Iterable[ScoreRequest], *args: Any, **options: Any) -> list[LLMResult]:
        return self.llm.score(self.alias, requests, *args, **options)

    def __repr__(self) -> str:  # the resource's fields would drown the alias in a log line
        return f"Model({self.alias}: {self.spec.model})"
