"""Schedules: evaluation backfills for models that joined the registry since the last run.

Each model-partitioned evaluation (QUIT's readers, WikiProfile's subject profiles) gets a
schedule that requests one run per model partition with no materialization yet. The
partitions are the instance's, which the registry sensor keeps in step with the registry:
the schedule requests what the UI shows, never a key the instance does not have. A
partition is requested once: the schedule leaves out a partition it launched a run for at
any earlier tick, whatever became of the run, so a run that outlasts the interval is not
launched twice and a failed run waits for a user's rerun instead of being retried every
night. (The run key alone does not do it: Dagster dedupes a schedule's run keys within one
tick only.)

Each run says its size: it runs the profile in ``BENCHFOUNDRY_EVAL_PROFILE`` (``demo`` by
default, the slice ``make run`` builds; a deployment that evaluates the papers' configuration
sets ``paper``), sent as run config and tagged, and the schedule's description names it.
"""

import os

import dagster as dg

from assets.common.settings import DEMO, PAPER
from assets.partitions import quit_reader_partitions, subject_partitions
from pipelines.jobs import PROFILE_SIZES, PROFILE_TAG, profile_config, quit_readers_job, wikiprofile_profile_job

# Deployments (and the daemon test, which cannot wait for 3 a.m.) set their own cron.
EVAL_CRON = os.environ.get("BENCHFOUNDRY_EVAL_CRON", "0 3 * * *")
# The settings' own default is the paper's, hours of work a model: a night's run is the demo
# slice unless the deployment asks for the paper's.
EVAL_PROFILE = os.environ.get("BENCHFOUNDRY_EVAL_PROFILE", DEMO)
if EVAL_PROFILE not in (DEMO, PAPER):
    raise ValueError(f"BENCHFOUNDRY_EVAL_PROFILE={EVAL_PROFILE!r}: set it to {DEMO} or {PAPER}")


def unevaluated(partitions: list[str], materialized: set[str], requested: set[str] = frozenset()) -> list[str]:
    """Partition keys without a materialization or an earlier request, in partition order."""
    return [key for key in partitions if key not in materialized and key not in requested]


def requested_before(instance: dg.DagsterInstance, schedule_name: str) -> set[str]:
    """The partitions the schedule launched runs for, at any tick and in any state."""
    runs = instance.get_runs(dg.RunsFilter(tags={"dagster/schedule_name": schedule_name}))
    return {run.tags["dagster/partition"] for run in runs if "dagster/partition" in run.tags}


def model_backfill_schedule(
    name: str,
    job,
    asset_key: dg.AssetKey,
    partitions_def: dg.PartitionsDefinition,
    description: str,
    profile: str = EVAL_PROFILE,
) -> dg.ScheduleDefinition:
    """A schedule of ``job`` over the model partitions of ``asset_key`` not yet evaluated,
    each run with ``profile``'s run config and tag."""
    run_config, tags = profile_config(profile), {PROFILE_TAG: profile}

    @dg.schedule(
        name=name,
        cron_schedule=EVAL_CRON,
        job=job,
        default_status=dg.DefaultScheduleStatus.STOPPED,
        description=f"{description} Runs profile {profile} (BENCHFOUNDRY_EVAL_PROFILE), as run config and "
        f"the tag {PROFILE_TAG}.",
    )
    def _schedule(context: dg.ScheduleEvaluationContext):
        keys = partitions_def.get_partition_keys(dynamic_partitions_store=context.instance)
        materialized = context.instance.get_materialized_partitions(asset_key)
        missing = unevaluated(keys, materialized, requested_before(context.instance, name))
        if not missing:
            waiting = unevaluated(keys, materialized)
            return dg.SkipReason(
                f"every model partition of {asset_key.to_user_string()} is materialized ({len(keys)})"
                if not waiting
                else f"{len(waiting)} model partitions of {asset_key.to_user_string()} were requested at an "
                f"earlier tick and have no materialization yet (a run still going, or one that failed "
                f"and waits for a rerun): {', '.join(waiting)}"
            )
        context.log.info(f"{asset_key.to_user_string()}: new model partitions {', '.join(missing)}")
        return [
            dg.RunRequest(run_key=f"{name}:{key}", partition_key=key, run_config=run_config, tags=tags)
            for key in missing
        ]

    return _schedule


quit_readers_schedule = model_backfill_schedule(
    "quit_readers_backfill",
    quit_readers_job,
    dg.AssetKey(["eval", "quit_reader_answers"]),
    quit_reader_partitions,
    "Runs the QUIT readers for every reader partition (added by the registry sensor) whose answers are not materialized yet. "
    "The readers read no settings: the questions the QUIT build stored set its size, and the profile tags the run.",
)
wikiprofile_profiles_schedule = model_backfill_schedule(
    "wikiprofile_profiles_backfill",
    wikiprofile_profile_job,
    dg.AssetKey(["eval", "wikiprofile_profiles"]),
    subject_partitions,
    "Profiles every WikiProfile subject partition (added by the registry sensor) that has no profiles yet. "
    f"Demo: {PROFILE_SIZES['wikiprofile'][DEMO]} Paper: {PROFILE_SIZES['wikiprofile'][PAPER]}",
)

schedules = [quit_readers_schedule, wikiprofile_profiles_schedule]
