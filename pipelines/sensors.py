"""Sensors: the QUIT human verification sensor, and the one that turns the registry's
WikiProfile subject models into partitions."""

import dagster as dg

from assets.partitions import subject_partitions
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


def new_subjects(registered: list[str], known: list[str]) -> list[str]:
    """Registry aliases that are not partitions yet, in registry order."""
    return [alias for alias in dict.fromkeys(registered) if alias not in set(known)]


@dg.sensor(minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING,
           description="Adds every model of the registry's wikiprofile.subjects as a partition of the WikiProfile profiling assets.")
def wikiprofile_subjects_sensor(context: dg.SensorEvaluationContext, llm: LLMResource):
    known = context.instance.get_dynamic_partitions(subject_partitions.name)
    new = new_subjects(llm.role("wikiprofile.subjects"), known)
    if not new:
        return dg.SkipReason(f"every subject model is a partition ({len(known)})")
    context.log.info(f"new WikiProfile subject partitions: {', '.join(new)}")
    return dg.SensorResult(dynamic_partitions_requests=[subject_partitions.build_add_request(new)])


sensors = [quit_verification_sensor, wikiprofile_subjects_sensor]
