"""Where a report's inputs came from, and which of them it leaves out (issue 45).

A report reads every materialized partition of its upstream tables, and a partition outlives
the configuration it was built under: a domain the demo profile built stays on disk when the
paper profile rebuilds the others, and a run of an older definition stays until it is run
again. The instance records, for each partition, its latest materialization: the run that made
it, that run's tags (the profile in ``PROFILE_TAG``), the code version it ran and its place in
the event log. A report keeps an input when it was built under the report's profile, by the
definition's current code version, and after everything it was built from (:func:`leave_out`);
it names every input it leaves out with the reason (:func:`provenance_metadata`), and each row
it keeps carries the run and profile it came from.

This is Dagster's notion of stale (new upstream data, a changed code version) judged on the
instance's records, plus the profile, which no code version holds: a profile changes what a
run reads (another registry, other sizes), not the code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import dagster as dg
import polars as pl

from assets.common.metadata import PROFILE_TAG, report_table, run_profile

# The tag Dagster writes on every materialization with the code version of the definition
# that ran (the run id for a definition without one).
CODE_VERSION_TAG = "dagster/code_version"
# How many names a reason lists before it counts the rest.
NAMED = 3


@dataclasses.dataclass(frozen=True)
class Build:
    """The latest materialization of an asset, or of one partition of it, in the instance: the
    run that made it (``run_id`` None: none is recorded, as for a table written outside
    Dagster), that run's profile, the code version it ran, and its place in the event log
    (``storage_id``: a later materialization has a larger one)."""

    asset: dg.AssetKey
    partition: str | None = None
    run_id: str | None = None
    profile: str | None = None
    code_version: str | None = None
    storage_id: int = 0

    @property
    def name(self) -> str:
        key = self.asset.to_user_string()
        return key if self.partition is None else f"{key}[{self.partition}]"


class Builds:
    """The latest builds an instance records, each asked for once, as are each run's profile
    and each asset's materialized partitions."""

    def __init__(self, instance: dg.DagsterInstance):
        self.instance = instance
        self._builds: dict[tuple[dg.AssetKey, str | None], Build] = {}
        self._profiles: dict[str, str | None] = {}
        self._partitions: dict[dg.AssetKey, list[str]] = {}

    def latest(self, key: dg.AssetKey, partition: str | None = None) -> Build:
        """``key``'s latest materialization, or its ``partition``'s."""
        if (key, partition) not in self._builds:
            records = self.instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=key, asset_partitions=None if partition is None else [partition]),
                limit=1,
            ).records
            build = Build(key, partition)
            if records:
                record = records[0]
                tags = (record.asset_materialization.tags if record.asset_materialization else None) or {}
                build = Build(
                    key,
                    partition,
                    record.run_id,
                    self.profile(record.run_id),
                    tags.get(CODE_VERSION_TAG),
                    record.storage_id,
                )
            self._builds[key, partition] = build
        return self._builds[key, partition]

    def profile(self, run_id: str) -> str | None:
        """The run's ``PROFILE_TAG`` (None: no tag, or the run was deleted)."""
        if run_id not in self._profiles:
            run = self.instance.get_run_by_id(run_id)
            self._profiles[run_id] = run.tags.get(PROFILE_TAG) if run is not None else None
        return self._profiles[run_id]

    def upstream(self, assets_def: dg.AssetsDefinition, key: dg.AssetKey, partition: str | None = None) -> list[Build]:
        """The recorded builds ``key`` (its ``partition``) is built from, one level up: an
        unpartitioned parent's latest; of a partitioned parent, every materialized partition
        when ``key`` reads them all (unpartitioned, or an ``AllPartitionMapping``), else those
        sharing a dimension key with ``partition`` (the project maps partitions one to one or
        by one dimension of a multi-partition key)."""
        found = []
        for parent in sorted(assets_def.asset_deps[key], key=lambda k: k.path):
            if parent not in self._partitions:
                self._partitions[parent] = sorted(self.instance.get_materialized_partitions(parent))
            partitions = self._partitions[parent]
            if not partitions:
                found.append(self.latest(parent))
                continue
            whole = partition is None or isinstance(assets_def.get_partition_mapping(parent), dg.AllPartitionMapping)
            found += [self.latest(parent, p) for p in partitions if whole or _shared(p, partition)]
        return [b for b in found if b.run_id is not None]

    def reason(
        self, build: Build, assets_def: dg.AssetsDefinition, profile: str | None, upstream: bool = True
    ) -> str | None:
        """Why a report of ``profile`` leaves out ``build`` of ``assets_def`` (None: it keeps
        it): :func:`leave_out` with the definition's code version of now and, unless
        ``upstream`` is False, what the build was made from (:meth:`upstream`)."""
        made_from = self.upstream(assets_def, build.asset, build.partition) if upstream else ()
        return leave_out(build, profile, code_version(assets_def, build.asset), made_from)


def _shared(a: str, b: str) -> bool:
    """Whether one partition key's dimension keys hold the other's (``law`` and ``law|bm25``)."""
    x, y = set(a.split("|")), set(b.split("|"))
    return x <= y or y <= x


def code_version(assets_def: dg.AssetsDefinition, key: dg.AssetKey) -> str | None:
    """The code version ``key``'s definition has now (None: it sets none)."""
    return assets_def.get_asset_spec(key).code_version


def _profile(profile: str | None) -> str:
    return f"profile {profile}" if profile is not None else "no profile"


def _names(builds: list[Build]) -> str:
    more = f" and {len(builds) - NAMED} more" if len(builds) > NAMED else ""
    return ", ".join(b.name for b in builds[:NAMED]) + more


def leave_out(
    build: Build, profile: str | None, current_code: str | None = None, upstream: Iterable[Build] = ()
) -> str | None:
    """Why a report of ``profile`` leaves out an input it read (None: it keeps it), the first
    that holds of:

    - another profile: the run that built it had another ``PROFILE_TAG`` (or none, or the
      report's run has none and the input one); an input no materialization of which is
      recorded has no profile, and only a report of no profile keeps it;
    - another code version: it ran a definition whose code version (``current_code``) has
      changed since;
    - stale: something it is built from (``upstream``, :meth:`Builds.upstream`) was
      materialized after it."""
    if build.run_id is None:
        if profile is None:
            return None
        return f"no materialization of it is recorded in this instance; the report's is {_profile(profile)}"
    if build.profile != profile:
        return f"built under {_profile(build.profile)} (run {build.run_id}); the report's is {_profile(profile)}"
    if current_code is not None and build.code_version != current_code:
        return f"built by code version {build.code_version}; its definition's is {current_code} now"
    newer = sorted((u for u in upstream if u.storage_id > build.storage_id), key=lambda u: u.storage_id)
    if newer:
        return f"stale: {_names(newer)} materialized after it"
    return None


def report_profile(context: dg.AssetExecutionContext, read: Iterable[Build]) -> tuple[str | None, str]:
    """The profile a report keeps, and where it comes from: the run's ``PROFILE_TAG``; for a
    run without one (Materialize in the UI, a test) the profile of the newest input it read,
    so a report launched by hand after ``make run`` keeps that run's tables."""
    profile = run_profile(context)
    if profile is not None:
        return profile, f"{profile} (the run's {PROFILE_TAG} tag)"
    recorded = [b for b in read if b.run_id is not None]
    if not recorded:
        return None, f"none: the run has no {PROFILE_TAG} tag and no input's materialization is recorded"
    newest = max(recorded, key=lambda b: b.storage_id)
    return newest.profile, (
        f"{newest.profile or 'none'} (the run has no {PROFILE_TAG} tag: the newest input's, {newest.name})"
    )


LEFT_OUT_COLUMNS = {
    "input": "the asset, [partition], the report read and left out",
    "dagster_run": "the run of its latest materialization (blank: none is recorded)",
    "profile": f"that run's {PROFILE_TAG} tag",
    "reason": "why the report leaves it out",
}


def provenance_metadata(profile: str, left_out: Mapping[Build, str]) -> dict:
    """A report's ``profile`` entry (:func:`report_profile`'s text) and its ``left_out`` table:
    each input it read and left out, with its run, profile and reason."""
    frame = pl.DataFrame(
        [(b.name, b.run_id, b.profile, reason) for b, reason in left_out.items()],
        schema=dict.fromkeys(LEFT_OUT_COLUMNS, pl.String),
        orient="row",
    )
    return {"profile": profile, "left_out": report_table(frame, LEFT_OUT_COLUMNS), "left_out_count": frame.height}
