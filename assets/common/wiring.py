"""Asset wiring, the same for every benchmark: one :class:`Wiring` per asset module names its
outputs, inputs and rejects outputs under the benchmark's key prefix."""

from __future__ import annotations

import dataclasses

import dagster as dg
import polars as pl

from assets.common.metadata import counts_md, table_metadata
from assets.common.rejects import Rejects
from resources.storage import MATERIALIZED_PARTITIONS


@dataclasses.dataclass(frozen=True)
class Wiring:
    """Keys under ``prefix`` in the UI group ``group``."""

    prefix: str
    group: str

    def key(self, name: str) -> dg.AssetKey:
        return dg.AssetKey([self.prefix, name])

    def out(self, description: str, kinds: set[str]) -> dg.AssetOut:
        """One output of a multi-asset step."""
        return dg.AssetOut(key_prefix=self.prefix, group_name=self.group, description=description, kinds=kinds)

    def input(self, name: str, prefix: str | None = None) -> dg.AssetIn:
        """``<prefix>/<name>`` as an input (this benchmark's prefix unless another is named)."""
        return dg.AssetIn(key=[prefix or self.prefix, name])

    def materialized(self, name: str, prefix: str | None = None) -> dg.AssetIn:
        """Every materialized partition of ``<prefix>/<name>``: a report covers what is built so
        far (some domains, a backfill under way, a subject not yet profiled) and names the rest."""
        return dg.AssetIn(
            key=[prefix or self.prefix, name],
            partition_mapping=dg.AllPartitionMapping(),
            metadata=MATERIALIZED_PARTITIONS,
        )

    def rejects(self, name: str, shape: Rejects, rows: list[dict] | pl.DataFrame) -> dg.Output:
        """A step's rejects output: the rows (or the frame a step built) in the common shape,
        counted by reason."""
        frame = shape.frame(rows) if isinstance(rows, list) else rows.select(list(shape.schema))
        return dg.Output(
            frame,
            output_name=name,
            metadata={
                **table_metadata(frame.select(*shape.keys, "reason", "detail")),
                "by_reason": counts_md(dict(frame.group_by("reason").len().sort("reason").iter_rows())),
            },
        )
