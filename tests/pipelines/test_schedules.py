"""The evaluation backfill schedules, evaluated through Dagster's schedule context."""

import uuid

import dagster as dg

from pipelines.definitions import defs
from pipelines.schedules import quit_readers_schedule, unevaluated, wikiprofile_profiles_schedule

# the repository resolves each request's partition against its job, as the daemon does
REPOSITORY = defs.get_repository_def()


def materialize(instance: dg.DagsterInstance, key: list[str], partition: str) -> None:
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, partition=partition))


def test_unevaluated_keeps_partition_order():
    assert unevaluated(["c", "a", "b"], {"a"}) == ["c", "b"]
    assert unevaluated(["a"], {"a", "gone"}) == []
    assert unevaluated(["c", "a", "b"], {"a"}, {"c"}) == ["b"]


def launched(instance: dg.DagsterInstance, schedule: str, partition: str, status: dg.DagsterRunStatus) -> None:
    """A run the daemon launched for ``schedule`` at an earlier tick, now in ``status``."""
    instance.add_run(
        dg.DagsterRun(
            job_name="wikiprofile_profile",
            run_id=str(uuid.uuid4()),
            status=status,
            tags={"dagster/schedule_name": schedule, "dagster/partition": partition},
        )
    )


def test_profiles_schedule_requests_only_subjects_without_profiles():
    with dg.instance_for_test() as instance:
        check_profiles_schedule(instance)


def check_profiles_schedule(instance: dg.DagsterInstance) -> None:
    with dg.build_schedule_context(instance=instance, repository_def=REPOSITORY) as ctx:
        assert isinstance(wikiprofile_profiles_schedule.evaluate_tick(ctx).skip_message, str)

    instance.add_dynamic_partitions("wikiprofile_subjects", ["smollm2", "qwen3-8b", "gemma3-4b"])
    materialize(instance, ["eval", "wikiprofile_profiles"], "smollm2")
    with dg.build_schedule_context(instance=instance, repository_def=REPOSITORY) as ctx:
        requests = wikiprofile_profiles_schedule.evaluate_tick(ctx).run_requests
    assert [r.partition_key for r in requests] == ["qwen3-8b", "gemma3-4b"]
    # one run key per partition
    assert [r.run_key for r in requests] == [
        "wikiprofile_profiles_backfill:qwen3-8b",
        "wikiprofile_profiles_backfill:gemma3-4b",
    ]
    assert wikiprofile_profiles_schedule.job_name == "wikiprofile_profile"

    # the next tick, the first run still going and the second failed: neither is requested
    # again (Dagster's run-key dedupe holds within one tick only)
    launched(instance, "wikiprofile_profiles_backfill", "qwen3-8b", dg.DagsterRunStatus.STARTED)
    launched(instance, "wikiprofile_profiles_backfill", "gemma3-4b", dg.DagsterRunStatus.FAILURE)
    # a new subject is requested; another schedule's run of the same key does not count
    instance.add_dynamic_partitions("wikiprofile_subjects", ["llama3-8b"])
    launched(instance, "quit_readers_backfill", "llama3-8b", dg.DagsterRunStatus.STARTED)
    with dg.build_schedule_context(instance=instance, repository_def=REPOSITORY) as ctx:
        assert [r.partition_key for r in wikiprofile_profiles_schedule.evaluate_tick(ctx).run_requests] == ["llama3-8b"]
    launched(instance, "wikiprofile_profiles_backfill", "llama3-8b", dg.DagsterRunStatus.STARTED)
    with dg.build_schedule_context(instance=instance, repository_def=REPOSITORY) as ctx:
        waiting = wikiprofile_profiles_schedule.evaluate_tick(ctx)
    assert not waiting.run_requests and waiting.skip_message.endswith(
        "waits for a rerun): qwen3-8b, gemma3-4b, llama3-8b"
    )

    for key in ("qwen3-8b", "gemma3-4b", "llama3-8b"):
        materialize(instance, ["eval", "wikiprofile_profiles"], key)
    with dg.build_schedule_context(instance=instance, repository_def=REPOSITORY) as ctx:
        result = wikiprofile_profiles_schedule.evaluate_tick(ctx)
    assert not result.run_requests and "(4)" in result.skip_message


def test_readers_schedule_follows_the_registry_readers():
    from assets.partitions import registered_keys, sync_partitions

    with dg.instance_for_test() as instance:
        # no reader partition yet (the registry sensor has not run): nothing to request
        with dg.build_schedule_context(instance=instance, repository_def=REPOSITORY) as ctx:
            assert not quit_readers_schedule.evaluate_tick(ctx).run_requests
        sync_partitions(instance)
        check_readers_schedule(instance, registered_keys()["quit_readers"])


def check_readers_schedule(instance: dg.DagsterInstance, readers: list[str]) -> None:
    with dg.build_schedule_context(instance=instance, repository_def=REPOSITORY) as ctx:
        requests = quit_readers_schedule.evaluate_tick(ctx).run_requests
    assert [r.partition_key for r in requests] == readers
    assert quit_readers_schedule.job_name == "quit_readers"
    for alias in readers:
        materialize(instance, ["eval", "quit_reader_answers"], alias)
    with dg.build_schedule_context(instance=instance, repository_def=REPOSITORY) as ctx:
        assert not quit_readers_schedule.evaluate_tick(ctx).run_requests
