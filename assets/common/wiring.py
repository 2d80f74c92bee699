"""Asset wiring shared by the benchmarks' asset modules: outputs and inputs under a key prefix."""

from __future__ import annotations

import dagster as dg

from resources.storage import MATERIALIZED_PARTITIONS


def asset_out(prefix: str, group: str, description: str, kinds: set[str]) -> dg.AssetOut:
    return dg.AssetOut(key_prefix=prefix, group_name=group, description=description, kinds=kinds)


def asset_in(prefix: str, name: str) -> dg.AssetIn:
    return dg.AssetIn(key=[prefix, name])


def materialized_in(prefix: str, name: str) -> dg.AssetIn:
    """Every materialized partition of ``prefix/name``: a report covers what is built so far
    (some domains, a backfill under way, a subject not yet profiled) and names the rest."""
    return dg.AssetIn(key=[prefix, name], partition_mapping=dg.AllPartitionMapping(), metadata=MATERIALIZED_PARTITIONS)
