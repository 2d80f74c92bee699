"""Sensors: the QUIT human verification sensor, and the one that turns the registries'
aliases into partitions."""

import json

import dagster as dg

from assets.partitions import pending_changes
from assets.quit.settings import QuitSettings
from assets.quit.sources import decisions_path
from pipelines.jobs import quit_verification_job
from resources.datasets import DATASETS_PATH
from resources.finetuning import BASES_PATH
from resources.llm import REGISTRY_PATH, LLMResource
from resources.retrieval import RERANKERS_PATH, RETRIEVERS_PATH
from resources.storage import StorageResource, filesystem


def decisions_version(path: str) -> str | None:
    """The decisions file's modification time as a cursor value; None when absent."""
    import pyarrow.fs as pafs

    fs, p = filesystem(path)
    info = fs.get_file_info(p)
    if info.type == pafs.FileType.NotFound:
        return None
    return str(info.mtime_ns)


@dg.sensor(
    job=quit_verification_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Runs the QUIT label update when annotators save new verification decisions.",
)
def quit_verification_sensor(
    context: dg.SensorEvaluationContext, quit_settings: QuitSettings, storage: StorageResource
):
    version = decisions_version(decisions_path(quit_settings, storage))
    if version is None:
        return dg.SkipReason("no verification decisions saved yet")
    if version == context.cursor:
        return dg.SkipReason("decisions unchanged since the last run")
    context.update_cursor(version)
    return dg.RunRequest(run_key=f"decisions-{version}")


# The paths come from the environment the code location started with, which a running
# `make ui` cannot change; the files themselves are read again at every tick.
REGISTRY_NOTE = (
    "The files are read again at every tick, so an edit shows within 30 s; which files is fixed when `make ui` "
    "starts (BENCHFOUNDRY_MODELS, BENCHFOUNDRY_RETRIEVERS, BENCHFOUNDRY_RERANKERS, BENCHFOUNDRY_DATASETS in its "
    "environment): to "
    "use other files, set them and restart `make ui`."
)


def registry_files(models: str) -> str:
    """The registry files the partitions follow, as the registry sensor names them."""
    return (
        f"models {models}, retrievers {RETRIEVERS_PATH}, rerankers {RERANKERS_PATH}, base models {BASES_PATH}, "
        f"datasets {DATASETS_PATH}"
    )


@dg.sensor(
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Keeps the model and retriever partitions in step with the registries: adds every alias of "
    "QUIT's labelers and readers, the retrievers, rerankers, WikiProfile's subjects, the "
    "fine-tuning base models and the datasets in BEIR's layout that is no partition yet, and removes a "
    "partition no registry lists that nothing has materialized (one added by hand in the partition picker). A partition with "
    "materializations stays when its alias leaves a registry. Reads "
    + registry_files(f"{REGISTRY_PATH} (the `llm` resource's registry_path)")
    + ". "
    + REGISTRY_NOTE,
)
def registry_partitions_sensor(context: dg.SensorEvaluationContext, llm: LLMResource):
    # the model registry the runs ask through, which a deployment may point elsewhere
    files = registry_files(llm.registry_path)
    changes = pending_changes(
        context.instance, assets=context.repository_def.assets_defs_by_key.values(), models=llm.registry_path
    )
    # a kept alias is reported once, when the set of them changes, not on every tick
    gone = json.dumps(changes.gone, sort_keys=True)
    if changes.gone and gone != context.cursor:
        context.log.info(f"in no registry ({files}), kept for their materializations: {changes.describe('gone')}")
    context.update_cursor(gone)
    if not changes.new and not changes.stray:
        kept = f"; kept, though no registry lists them: {changes.describe('gone')}" if changes.gone else ""
        return dg.SkipReason(f"every alias of {files} is a partition{kept}")
    if changes.new:
        context.log.info(f"new partitions, from {files}: {changes.describe('new')}")
    if changes.stray:
        context.log.info(
            f"removed partitions, in no registry ({files}) and never materialized: {changes.describe('stray')}"
        )
    return dg.SensorResult(
        dynamic_partitions_requests=[
            *(
                dg.AddDynamicPartitionsRequest(partitions_def_name=name, partition_keys=keys)
                for name, keys in changes.new.items()
            ),
            *(
                dg.DeleteDynamicPartitionsRequest(partitions_def_name=name, partition_keys=keys)
                for name, keys in changes.stray.items()
            ),
        ]
    )


sensors = [quit_verification_sensor, registry_partitions_sensor]
