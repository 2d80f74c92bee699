"""Sensors: the QUIT human verification sensor."""

import dagster as dg

from assets.quit.settings import QuitSettings
from assets.quit.verification import decisions_path
from pipelines.jobs import quit_verification_job
from resources.storage import filesystem


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
def quit_verification_sensor(context: dg.SensorEvaluationContext):
    version = decisions_version(decisions_path(QuitSettings()))
    if version is None:
        return dg.SkipReason("no verification decisions saved yet")
    if version == context.cursor:
        return dg.SkipReason("decisions unchanged since the last run")
    context.update_cursor(version)
    return dg.RunRequest(run_key=f"decisions-{version}")


sensors = [quit_verification_sensor]
