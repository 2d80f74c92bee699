"""Sensors: the QUIT human verification sensor, and the one that turns the registries'
aliases into partitions."""

import json

import dagster as dg

from assets.partitions import pending_changes
from assets.quit.settings import QuitSettings
from assets.quit.sources import decisions_path
from pipelines.jobs import quit_verification_job
from resources.llm import LLMResource
from resources.storage import StorageResource, filesystem


def decisions_version(path: str) -> str | None:
    """The decisions file's modification time as a cursor value; None when absent."""
    import pyarrow.fs as pafs

    fs, p = filesystem(path)
    info = fs.get_file_info(p)
    if info.type == pafs.FileType.NotFound:
        return None
    return str(info.mtime_ns)


@dg.sensor(job=quit_verification_job, minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING,
           description="Runs the QUIT label update when annotators save new verification decisions.")
def quit_verification_sensor(context: dg.SensorEvaluationContext, quit_settings: QuitSettings, storage: StorageResource):
    version = decisions_version(decisions_path(quit_settings, storage))
    if version is None:
        return dg.SkipReason("no verification decisions saved yet")
    if version == context.cursor:
        return dg.SkipReason("decisions unchanged since the last run")
    context.update_cursor(version)
    return dg.RunRequest(run_key=f"decisions-{version}")


@dg.sensor(minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING,
           description="Adds every alias of the registries (QUIT's labelers and readers, retrievers.yaml, rerankers.yaml, "
                       "WikiProfile's subjects) that is no partition yet as a partition of the assets that evaluate it. "
                       "An alias removed from a registry keeps its partition and materializations.")
def registry_partitions_sensor(context: dg.SensorEvaluationContext, llm: LLMResource):
    # the model registry the runs ask through, which a deployment may point elsewhere
    changes = pending_changes(context.instance, models=llm.registry_path)
    # a removed alias is reported once, when the set of them changes, not on every tick
    gone = json.dumps(changes.gone, sort_keys=True)
    if changes.gone and gone != context.cursor:
        context.log.info(f"no longer in a registry, kept with their materializations: {changes.describe('gone')}")
    context.update_cursor(gone)
    if not changes.new:
        kept = f"; kept, though no registry lists them: {changes.describe('gone')}" if changes.gone else ""
        return dg.SkipReason(f"every registry alias is a partition{kept}")
    context.log.info(f"new partitions: {changes.describe('new')}")
    return dg.SensorResult(dynamic_partitions_requests=[
        dg.AddDynamicPartitionsRequest(partitions_def_name=name, partition_keys=keys) for name, keys in changes.new.items()])


sensors = [quit_verification_sensor, registry_partitions_sensor]
