"""Launching is explicit about size: the jobs that read a profile come as ``<job>_demo`` and
``<job>_paper``, and the model backfill schedules send and tag their profile. Each is checked
by what a run would get: the job's run config resolved, and the settings built from it."""

import dagster as dg
import pytest

from pipelines.definitions import defs
from pipelines.jobs import PROFILE_FREE_JOBS, PROFILE_TAG, PROFILED_JOBS, PROFILED_SETTINGS, profile_config
from pipelines.schedules import model_backfill_schedule, quit_readers_schedule, wikiprofile_profiles_schedule

REPOSITORY = defs.get_repository_def()
# One knob of each settings resource whose demo value differs from the paper's.
SLICE_KNOB = {
    "quit_settings": ("distractors", {"demo": 3, "paper": 10}),
    "finetune_settings": ("max_steps", {"demo": 20, "paper": None}),
    "recor_settings": ("max_aspects", {"demo": 4, "paper": 12}),
    "wikiprofile_settings": ("n_samples", {"demo": 4, "paper": 8}),
}


def launchpad_config(job: dg.JobDefinition) -> dict | None:
    """The run config the launchpad prefills for ``job``: a partitioned job's config for its
    partition (a job's dict config becomes the same config for every partition), else none
    (the job's own defaults)."""
    return job.partitioned_config.get_run_config_for_partition_key("any") if job.partitioned_config else None


def settings_of_a_run(job: dg.JobDefinition, run_config: dict | None = None) -> dict[str, dict]:
    """The profiled settings a run of ``job`` gets: its run config resolved (the one the
    launchpad prefills when ``run_config`` is None) and each resource built from it."""
    resolved = dg.validate_run_config(job, launchpad_config(job) if run_config is None else run_config)["resources"]
    # the resolved config holds the resources the job's steps require
    keys = [key for key in PROFILED_SETTINGS if key in resolved]
    with dg.build_resources(
        {key: defs.resources[key] for key in keys}, resource_config={key: resolved[key] for key in keys}
    ) as built:
        return {key: dict(getattr(built, key)) for key in keys}


def reads_a_profile(job: dg.JobDefinition) -> bool:
    return any(set(op.required_resource_keys) & set(PROFILED_SETTINGS) for op in job.graph.iterate_op_defs())


def test_every_job_that_reads_a_profile_has_a_demo_and_a_paper_job_of_the_same_assets():
    names = {job.name for job in defs.resolve_all_job_defs()}
    base = [
        defs.resolve_job_def(n) for n in sorted(names) if not n.startswith("__") and not n.endswith(("_demo", "_paper"))
    ]
    profiled = {job.name for job in base if reads_a_profile(job)} - {job.name for job in PROFILE_FREE_JOBS}
    # the stage jobs and the checks-only jobs whose checks compare tables with the settings
    assert {job.name for job, _ in PROFILED_JOBS} | {"recor_checks_domains", "wikiprofile_checks"} <= profiled
    assert {n.removesuffix("_demo") for n in names if n.endswith("_demo")} == profiled
    assert {n.removesuffix("_paper") for n in names if n.endswith("_paper")} == profiled
    for name in profiled:
        original = defs.resolve_job_def(name)
        for profile in ("demo", "paper"):
            variant = defs.resolve_job_def(f"{name}_{profile}")
            assert variant.asset_layer.executable_asset_keys == original.asset_layer.executable_asset_keys, variant.name
            assert variant.partitions_def == original.partitions_def, variant.name
            assert variant.run_tags == {PROFILE_TAG: profile}, variant.name
            assert f"Profile {profile}: " in variant.description, variant.name
            seen = settings_of_a_run(variant)
            assert seen and all(s["profile"] == profile for s in seen.values()), variant.name
    # the original jobs stay as they were: no profile of their own, the settings' default (paper)
    assert "benchfoundry/profile" not in defs.resolve_job_def("quit_prepare").run_tags


@pytest.mark.parametrize("profile", ["demo", "paper"])
def test_a_profile_jobs_run_config_resolves_to_its_profile(profile):
    for name, key in (
        ("quit_prepare", "quit_settings"),
        ("quit_finetune", "finetune_settings"),
        ("recor_build", "recor_settings"),
        ("wikiprofile_profile", "wikiprofile_settings"),
    ):
        seen = settings_of_a_run(defs.resolve_job_def(f"{name}_{profile}"))
        knob, values = SLICE_KNOB[key]
        assert seen[key]["profile"] == profile and seen[key][knob] == values[profile], name
    # QUIT's demo slice in full, as the settings resource states it
    if profile == "demo":
        seen = settings_of_a_run(defs.resolve_job_def("quit_labeling_demo"))["quit_settings"]
        assert (seen["max_labeled_questions"], seen["test_size"], seen["rerank_depth"]) == (3, 12, None)


def test_a_knob_edited_in_the_launchpad_keeps_the_jobs_profile():
    job = defs.resolve_job_def("quit_prepare_demo")
    # the launchpad starts from the job's config; the user changes one knob
    config = profile_config("demo")
    config["resources"]["quit_settings"]["config"]["distractors"] = 5
    seen = settings_of_a_run(job, config)["quit_settings"]
    assert (seen["profile"], seen["distractors"], seen["test_size"]) == ("demo", 5, 12)


def test_an_unknown_profile_is_refused():
    with pytest.raises(ValueError, match="'full': use demo or paper"):
        profile_config("full")


def requests_of(schedule: dg.ScheduleDefinition, instance: dg.DagsterInstance) -> list[dg.RunRequest]:
    with dg.build_schedule_context(instance=instance, repository_def=REPOSITORY) as ctx:
        return schedule.evaluate_tick(ctx).run_requests


@pytest.mark.parametrize("profile", ["demo", "paper"])
def test_each_schedules_run_requests_carry_their_profile_as_config_and_tag(profile):
    from assets.partitions import subject_partitions

    profiles = model_backfill_schedule(
        "profiles_under_test",
        REPOSITORY.get_job("wikiprofile_profile"),
        dg.AssetKey(["eval", "wikiprofile_profiles"]),
        subject_partitions,
        "Profiles.",
        profile,
    )
    assert f"Runs profile {profile} (BENCHFOUNDRY_EVAL_PROFILE)" in profiles.description
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("wikiprofile_subjects", ["smollm2", "qwen3-8b"])
        requests = requests_of(profiles, instance)
    assert [r.partition_key for r in requests] == ["smollm2", "qwen3-8b"]
    job = defs.resolve_job_def("wikiprofile_profile")
    for request in requests:
        assert request.tags[PROFILE_TAG] == profile
        seen = settings_of_a_run(job, request.run_config)["wikiprofile_settings"]
        assert (seen["profile"], seen["n_samples"]) == (profile, SLICE_KNOB["wikiprofile_settings"][1][profile])


def test_the_registered_schedules_send_the_default_evaluation_profile():
    from assets.partitions import sync_partitions
    from pipelines.schedules import EVAL_PROFILE

    with dg.instance_for_test() as instance:
        sync_partitions(instance)
        instance.add_dynamic_partitions("wikiprofile_subjects", ["qwen3-8b"])
        for schedule in (quit_readers_schedule, wikiprofile_profiles_schedule):
            assert f"Runs profile {EVAL_PROFILE} " in schedule.description, schedule.name
            requests = requests_of(schedule, instance)
            assert requests, schedule.name
            for request in requests:
                assert request.tags[PROFILE_TAG] == EVAL_PROFILE and request.run_config == profile_config(EVAL_PROFILE)
                # the config is the job's to run (the readers' steps read no settings: none to see)
                seen = settings_of_a_run(defs.resolve_job_def(schedule.job_name), request.run_config)
                assert all(s["profile"] == EVAL_PROFILE for s in seen.values()), schedule.name
    assert "wikiprofile_settings" in seen
