"""Backfills, sensors and schedules on the running daemon (``make ui``), driven through the
GraphQL API the web UI uses, and checked in the instance."""

import json

import dagster as dg
import polars as pl
import pytest

LOCATION = {"repositoryLocationName": "benchfoundry", "repositoryName": "__repository__"}
DONE = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]
SOURCES = [{"path": ["recor", name]} for name in ("source_questions", "source_documents", "source_rejects")]
BACKFILL_DOMAINS = ["biology", "drones", "politics"]


def finished_runs(instance: dg.DagsterInstance, tags: dict) -> list[dg.DagsterRun]:
    return instance.get_runs(dg.RunsFilter(tags=tags, statuses=DONE))


@pytest.mark.slow
def test_backfill_of_domain_partitions_through_the_daemon(running_dagster):
    ui = running_dagster
    launched = ui.graphql("""
        mutation($params: LaunchBackfillParams!) {
          launchPartitionBackfill(backfillParams: $params) {
            __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message }
          }
        }""", {"params": {"assetSelection": SOURCES, "partitionNames": BACKFILL_DOMAINS}})["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    backfill_id = launched["backfillId"]

    def status():
        answer = ui.graphql("query($id: String!) { partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill { status } } }",
                            {"id": backfill_id})
        value = answer["partitionBackfillOrError"]["status"]
        return value if value not in ("REQUESTED", "CANCELING") else None

    assert ui.wait("the backfill", status, timeout=420, every=5) in ("COMPLETED", "COMPLETED_SUCCESS")
    instance = ui.instance()
    runs = finished_runs(instance, {"dagster/backfill": backfill_id})
    assert sorted(r.tags["dagster/partition"] for r in runs) == BACKFILL_DOMAINS
    assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    assert set(BACKFILL_DOMAINS) <= instance.get_materialized_partitions(dg.AssetKey(["recor", "source_questions"]))
    for domain in BACKFILL_DOMAINS:
        assert pl.read_parquet(ui.storage / "recor" / "source_questions" / f"{domain}.parquet").height > 0


@pytest.mark.slow
def test_sensors_on_the_daemon(running_dagster):
    ui = running_dagster
    instance = ui.instance()
    # the subject sensor runs by default: the registry's subjects become partitions
    subjects = ui.wait("the subject partitions", lambda: instance.get_dynamic_partitions("wikiprofile_subjects"), timeout=240)
    assert subjects == ["smollm2", "smollm2-native"]

    # an annotator saves decisions: the verification sensor reruns the label update
    questions = pl.read_parquet(ui.storage / "quit" / "selected_questions.parquet")
    decisions = ui.storage / "quit" / "human_verification" / "decisions.json"
    decisions.parent.mkdir(parents=True, exist_ok=True)
    decisions.write_text(json.dumps({questions["question_id"][0]: {"accepted": [], "rejected": []}}))
    [run] = ui.wait("the verification run", lambda: finished_runs(instance, {"dagster/sensor_name": "quit_verification_sensor"}),
                    timeout=300, every=5)
    assert run.job_name == "quit_verification" and run.status == dg.DagsterRunStatus.SUCCESS
    labels = instance.get_latest_materialization_event(dg.AssetKey(["quit", "verified_labels"]))
    assert labels.run_id == run.run_id


@pytest.mark.slow
def test_schedule_backfills_new_subject_models_on_the_daemon(running_dagster):
    ui = running_dagster
    instance = ui.instance()
    subjects = ui.wait("the subject partitions", lambda: instance.get_dynamic_partitions("wikiprofile_subjects"), timeout=240)
    selector = {**LOCATION, "scheduleName": "wikiprofile_profiles_backfill"}
    started = ui.graphql("""
        mutation($selector: ScheduleSelector!) {
          startSchedule(scheduleSelector: $selector) {
            __typename ... on ScheduleStateResult { scheduleState { id status } } ... on PythonError { message }
          }
        }""", {"selector": selector})["startSchedule"]
    assert started["__typename"] == "ScheduleStateResult" and started["scheduleState"]["status"] == "RUNNING", started
    try:
        tags = {"dagster/schedule_name": "wikiprofile_profiles_backfill"}
        runs = ui.wait("both profiling runs", lambda: (r := finished_runs(instance, tags)) and len(r) == len(subjects) and r,
                       timeout=420, every=5)
    finally:
        ui.graphql("mutation($id: String!) { stopRunningSchedule(id: $id) { __typename } }",
                   {"id": started["scheduleState"]["id"]})
    assert sorted(r.tags["dagster/partition"] for r in runs) == sorted(subjects)
    assert all(r.job_name == "wikiprofile_profile" and r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    assert instance.get_materialized_partitions(dg.AssetKey(["wikiprofile", "profiles"])) == set(subjects)
