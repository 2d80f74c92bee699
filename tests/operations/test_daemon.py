"""Backfills, sensors and schedules on the running daemon (``make ui``), driven through the
GraphQL API the web UI uses, and checked in the instance.

What each test waits for is set going at once, before the first test (``set_going``): a
domain backfill, an annotator's decisions for the verification sensor, the profiling
schedule and a retriever added to the registry. The daemon ticks its sensors every 30
seconds and the schedule every minute, so one after another the tests spent most of their
time waiting for a tick (about 330 s for the four); side by side the waits overlap, as a
deployment's daemon runs them."""

import dataclasses
import json

import dagster as dg
import polars as pl
import pytest

LOCATION = {"repositoryLocationName": "benchfoundry", "repositoryName": "__repository__"}
DONE = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]
SOURCES = [{"path": ["recor", name]} for name in ("source_questions", "source_documents", "source_rejects")]
BACKFILL_DOMAINS = ["biology", "drones", "politics"]
# A system a user brings while the UI runs: BM25 with other parameters, under a new alias.
NEW_RETRIEVER = "bm25-robertson"
QUIT_RUNS = {"path": ["eval", "quit_runs"]}
PROFILES_SCHEDULE = "wikiprofile_profiles_backfill"
PARTITION_KEYS = (
    "query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { ... on AssetNode { partitionKeys } } }"
)
LAUNCH_BACKFILL = """
    mutation($params: LaunchBackfillParams!) {
      launchPartitionBackfill(backfillParams: $params) {
        __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message }
      }
    }"""


def finished_runs(instance: dg.DagsterInstance, tags: dict) -> list[dg.DagsterRun]:
    return instance.get_runs(dg.RunsFilter(tags=tags, statuses=DONE))


def launch_backfill(ui, assets: list[dict], partitions: list[str]) -> str:
    """A backfill of ``partitions`` of ``assets``, launched as the UI's backfill dialog does."""
    launched = ui.graphql(LAUNCH_BACKFILL, {"params": {"assetSelection": assets, "partitionNames": partitions}})
    assert launched["launchPartitionBackfill"]["__typename"] == "LaunchBackfillSuccess", launched
    return launched["launchPartitionBackfill"]["backfillId"]


def partition_keys(ui, asset: dict) -> list[str]:
    return ui.graphql(PARTITION_KEYS, {"key": asset})["assetNodeOrError"]["partitionKeys"]


def backfill_status(ui, backfill_id: str) -> str | None:
    """The backfill's status once it has finished; None while it runs."""
    answer = ui.graphql(
        "query($id: String!) { partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill { status } } }",
        {"id": backfill_id},
    )
    value = answer["partitionBackfillOrError"]["status"]
    return value if value not in ("REQUESTED", "CANCELING") else None


@dataclasses.dataclass
class Going:
    """What ``set_going`` started: the domain backfill, and the profiling schedule's state
    (running until the schedule's test or the module's end stops it)."""

    backfill_id: str
    schedule_id: str
    schedule_running: bool = True

    def stop_schedule(self, ui) -> None:
        if self.schedule_running:
            ui.graphql(
                "mutation($id: String!) { stopRunningSchedule(id: $id) { __typename } }", {"id": self.schedule_id}
            )
            self.schedule_running = False


def add_retriever(ui) -> None:
    """A user adds ``NEW_RETRIEVER`` to retrievers.yaml while the UI runs."""
    text = ui.retrievers.read_text()
    ui.retrievers.write_text(
        text + ("" if text.endswith("\n") else "\n") + f"  {NEW_RETRIEVER}: {{kind: bm25, k1: 1.2, b: 0.75}}\n"
    )


def save_decisions(ui) -> None:
    """An annotator saves decisions on the first selected question (none accepted or rejected)."""
    questions = pl.read_parquet(ui.storage / "quit" / "selected_questions.parquet")
    decisions = ui.storage / "quit" / "human_verification" / "decisions.json"
    decisions.parent.mkdir(parents=True, exist_ok=True)
    decisions.write_text(json.dumps({questions["question_id"][0]: {"accepted": [], "rejected": []}}))


def start_schedule(ui, name: str) -> str:
    """Turns the schedule on as the UI's toggle does; returns its state's id."""
    started = ui.graphql(
        """
        mutation($selector: ScheduleSelector!) {
          startSchedule(scheduleSelector: $selector) {
            __typename ... on ScheduleStateResult { scheduleState { id status } } ... on PythonError { message }
          }
        }""",
        {"selector": {**LOCATION, "scheduleName": name}},
    )["startSchedule"]
    assert started["__typename"] == "ScheduleStateResult" and started["scheduleState"]["status"] == "RUNNING", started
    return started["scheduleState"]["id"]


@pytest.fixture(scope="module")
def set_going(running_dagster) -> Going:
    ui = running_dagster
    # the registry's subjects are partitions (the prebuild synced them as the sensor would)
    subjects = ui.wait(
        "the subject partitions", lambda: ui.instance().get_dynamic_partitions("wikiprofile_subjects"), timeout=240
    )
    assert subjects == ["smollm2", "smollm2-native"]
    assert NEW_RETRIEVER not in partition_keys(ui, QUIT_RUNS)
    going = Going(launch_backfill(ui, SOURCES, BACKFILL_DOMAINS), start_schedule(ui, PROFILES_SCHEDULE))
    save_decisions(ui)
    add_retriever(ui)
    try:
        yield going
    finally:
        going.stop_schedule(ui)


@pytest.mark.slow
def test_backfill_of_domain_partitions_through_the_daemon(running_dagster, set_going):
    ui = running_dagster
    backfill_id = set_going.backfill_id
    assert ui.wait("the backfill", lambda: backfill_status(ui, backfill_id), timeout=420, every=5) in (
        "COMPLETED",
        "COMPLETED_SUCCESS",
    )
    instance = ui.instance()
    runs = finished_runs(instance, {"dagster/backfill": backfill_id})
    assert sorted(r.tags["dagster/partition"] for r in runs) == BACKFILL_DOMAINS
    assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    assert set(BACKFILL_DOMAINS) <= instance.get_materialized_partitions(dg.AssetKey(["recor", "source_questions"]))
    for domain in BACKFILL_DOMAINS:
        assert pl.read_parquet(ui.storage / "recor" / "source_questions" / f"{domain}.parquet").height > 0


@pytest.mark.slow
def test_sensors_on_the_daemon(running_dagster, set_going):
    """The annotator's decisions (saved by ``set_going``): the verification sensor reruns the label update."""
    ui = running_dagster
    instance = ui.instance()
    [run] = ui.wait(
        "the verification run",
        lambda: finished_runs(instance, {"dagster/sensor_name": "quit_verification_sensor"}),
        timeout=300,
        every=5,
    )
    assert run.job_name == "quit_verification" and run.status == dg.DagsterRunStatus.SUCCESS
    labels = instance.get_latest_materialization_event(dg.AssetKey(["quit", "verified_labels"]))
    assert labels.run_id == run.run_id


@pytest.mark.slow
def test_schedule_backfills_new_subject_models_on_the_daemon(running_dagster, set_going):
    ui = running_dagster
    instance = ui.instance()
    subjects = instance.get_dynamic_partitions("wikiprofile_subjects")
    tags = {"dagster/schedule_name": PROFILES_SCHEDULE}
    runs = ui.wait(
        "a profiling run of each subject",
        lambda: (
            (r := finished_runs(instance, tags)) and {x.tags["dagster/partition"] for x in r} >= set(subjects) and r
        ),
        timeout=420,
        every=5,
    )
    set_going.stop_schedule(ui)
    # one run each: a run still going at the next tick is not launched again
    assert sorted(r.tags["dagster/partition"] for r in instance.get_runs(dg.RunsFilter(tags=tags))) == sorted(subjects)
    assert all(r.job_name == "wikiprofile_profile" and r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    assert instance.get_materialized_partitions(dg.AssetKey(["eval", "wikiprofile_profiles"])) == set(subjects)


@pytest.mark.slow
def test_a_retriever_added_to_the_registry_is_backfilled_from_the_ui(running_dagster, set_going):
    """A user adds an alias to retrievers.yaml while the UI runs (``set_going``): the registry
    sensor makes it a partition of the retrieval assets, with no reload, and a backfill evaluates it."""
    ui = running_dagster
    ui.wait("the new retriever's partition", lambda: NEW_RETRIEVER in partition_keys(ui, QUIT_RUNS), timeout=120)
    instance = ui.instance()
    assert NEW_RETRIEVER in instance.get_dynamic_partitions("recor_retrievers")
    backfill_id = launch_backfill(ui, [{"path": ["eval", "quit_index"]}, QUIT_RUNS], [NEW_RETRIEVER])
    assert ui.wait("the retriever's backfill", lambda: backfill_status(ui, backfill_id), timeout=300, every=3) in (
        "COMPLETED",
        "COMPLETED_SUCCESS",
    )
    runs_of_backfill = finished_runs(instance, {"dagster/backfill": backfill_id})
    assert runs_of_backfill and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs_of_backfill)
    for asset in ("quit_index", "quit_runs"):
        assert NEW_RETRIEVER in instance.get_materialized_partitions(dg.AssetKey(["eval", asset]))
    [record] = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(["eval", "quit_runs"]), asset_partitions=[NEW_RETRIEVER]), limit=1
    ).records
    questions = record.event_log_entry.asset_materialization.metadata["questions"].value
    run = pl.read_parquet(ui.storage / "eval" / "quit_runs" / f"{NEW_RETRIEVER}.parquet")
    # every benchmark question retrieved for, under the new alias
    assert questions > 0 and run["question_id"].n_unique() == questions and set(run["system"]) == {NEW_RETRIEVER}
    assert (ui.storage / "eval" / "runs" / "quit" / f"{NEW_RETRIEVER}.trec").stat().st_size > 0
