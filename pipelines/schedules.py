"""Schedules: evaluation backfills for models that joined the registry since the last run.

Each model-partitioned evaluation (QUIT's readers, WikiProfile's subject profiles) gets a
schedule that requests one run per model partition with no materialization yet. The
partitions are the instance's, which the registry sensor keeps in step with the registry:
the schedule requests what the UI shows, never a key the instance does not have. The run
key names the partition, so a partition is requested once: a failed run waits for a user's
rerun instead of being retried every night.
"""

import os

import dagster as dg

from assets.partitions import quit_reader_partitions, subject_partitions
from pipelines.jobs import quit_readers_job, wikiprofile_profile_job

# Deployments (and the daemon test, which cannot wait for 3 a.m.) set their own cron.
EVAL_CRON = os.environ.get("BENCHFOUNDRY_EVAL_CRON", "0 3 * * *")


def unevaluated(partitions: list[str], materialized: set[str]) -> list[str]:
    """Partition keys without a materialization, in partition order."""
    return [key for key in partitions if key not in materialized]


def model_backfill_schedule(name: str, job, asset_key: dg.AssetKey,
                            partitions_def: dg.PartitionsDefinition, description: str) -> dg.ScheduleDefinition:
    @dg.schedule(name=name, cron_schedule=EVAL_CRON, job=job, description=description,
                 default_status=dg.DefaultScheduleStatus.STOPPED)
    def _schedule(context: dg.ScheduleEvaluationContext):
        keys = partitions_def.get_partition_keys(dynamic_partitions_store=context.instance)
        missing = unevaluated(keys, context.instance.get_materialized_partitions(asset_key))
        if not missing:
            return dg.SkipReason(f"every model partition of {asset_key.to_user_string()} is materialized ({len(keys)})")
        context.log.info(f"{asset_key.to_user_string()}: new model partitions {', '.join(missing)}")
        return [dg.RunRequest(run_key=f"{name}:{key}", partition_key=key) for key in missing]

    return _schedule


quit_readers_schedule = model_backfill_schedule(
    "quit_readers_backfill", quit_readers_job, dg.AssetKey(["eval", "quit_reader_answers"]), quit_reader_partitions,
    "Runs the QUIT readers for every reader partition (added by the registry sensor) whose answers are not materialized yet.",
)
wikiprofile_profiles_schedule = model_backfill_schedule(
    "wikiprofile_profiles_backfill", wikiprofile_profile_job, dg.AssetKey(["wikiprofile", "profiles"]), subject_partitions,
    "Profiles every WikiProfile subject partition (added by the registry sensor) that has no profiles yet.",
)

schedules = [quit_readers_schedule, wikiprofile_profiles_schedule]
