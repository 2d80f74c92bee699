"""One shape for everything a step filters out: the keys that name the item (per table), then
the step, a reason from the step's known vocabulary, a human-readable detail and, where there
is one, the record itself as JSON. Every rejects table of the three benchmarks is built
here; ``checks.factories.rejects_check`` checks each one's reasons against the vocabulary of
the step that writes it."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import polars as pl

FIELDS = ("step", "reason", "detail", "record")
RECORD_CHARS = 4000


@dataclasses.dataclass(frozen=True)
class Rejects:
    """A rejects table's shape: ``keys`` name the item (``question_id``, ``domain`` ...)."""

    keys: tuple[str, ...]

    @property
    def schema(self) -> dict[str, pl.DataType]:
        return {**{k: pl.String for k in self.keys}, **{f: pl.String for f in FIELDS}}

    def row(self, *values: Any, **named: Any) -> dict:
        """A reject row from the key values then step, reason, detail and record, in that
        order (positionally or by name)."""
        n = len(self.keys)
        if len(values) < n:
            raise TypeError(f"a reject needs its keys {self.keys}, got {values!r}")
        fields = dict(zip(FIELDS, values[n:]))
        fields.update(named)
        reason = fields.get("reason")
        if not reason:
            raise ValueError(f"a reject of {values[:n]!r} at step {fields.get('step')!r} needs a reason")
        record = fields.get("record")
        return {
            **{k: None if v is None else str(v) for k, v in zip(self.keys, values[:n])},
            "step": fields["step"],
            "reason": reason,
            "detail": str(fields.get("detail") or ""),
            "record": None if record is None else json.dumps(record, ensure_ascii=False, default=str)[:RECORD_CHARS],
        }

    def frame(self, rows: list[dict]) -> pl.DataFrame:
        return pl.DataFrame(rows, schema=self.schema)

    def empty(self) -> pl.DataFrame:
        return self.frame([])
