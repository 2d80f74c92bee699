"""The evaluation backfill schedules, evaluated through Dagster's schedule context."""

import dagster as dg

from pipelines.definitions import defs
from pipelines.schedules import (
    quit_readers_schedule,
    unevaluated,
    wikiprofile_profiles_schedule,
)

# the repository resolves each request's partition against its job, as the daemon does
REPOSITORY = defs.get_repository_def()


def materialize(instance: dg.DagsterInstance, key: list[str], partition: str) -> None:
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, partition=partition))


def test_unevaluated_keeps_partition_order():
    assert unevaluated(["c", "a", "b"], {"a"}) == ["c", "b"]
    assert unevaluated(["a"], {"a", "gone"}) == []


def test_profiles_schedule_requests_only_subjects_without_profiles():
    with dg.instance_for_test() as instance:
        check_profiles_schedule(instance)


def check_profiles_schedule(instance: dg.DagsterInstance) -> None:
    with dg.build_schedule_context(instance=instance, repository_def=REPOSITORY) as ctx:
        assert isinstance(wikiprofile_profiles_schedule.evaluate_tick(ctx).skip_message, str)

    instance.add_dynamic_partitions("wikiprofile_subjects", ["smollm2", "qwen3-8b", "gemma3-4b"])
    materialize(instance, ["wikiprofile", "profiles"], "smollm2")
    with dg.build_schedule_context(instance=instance, repository_def=REPOSITORY) as ctx:
        requests = wikiprofile_profiles_schedule.evaluate_tick(ctx).run_requests
    assert [r.partition_key for r in requests] == ["qwen3-8b", "gemma3-4b"]
    # one run key per partition: the daemon never requests the same model twice
    assert [r.run_key for r in requests] == ["wikiprofile_profiles_backfill:qwen3-8b", "wikiprofile_profiles_backfill:gemma3-4b"]
    assert wikiprofile_profiles_schedule.job_name == "wikiprofile_profile"

    for key in ("qwen3-8b", "gemma3-4b"):
        materialize(instance, ["wikiprofile", "profiles"], key)
    with dg.build_schedule_context(instance=instance, repository_def=REPOSITORY) as ctx:
        result = wikiprofile_profiles_schedule.evaluate_tick(ctx)
    assert not result.run_requests and "(3)" in result.skip_message


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
