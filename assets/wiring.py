"""Asset wiring shared by the benchmarks' asset modules: outputs and inputs under a key prefix."""

from __future__ import annotations

import dagster as dg


def asset_out(prefix: str, group: str, description: str, kinds: set[str]) -> dg.AssetOut:
    return dg.AssetOut(key_prefix=prefix, group_name=group, description=description, kinds=kinds)


def asset_in(prefix: str, name: str) -> dg.AssetIn:
    return dg.AssetIn(key=[prefix, name])
