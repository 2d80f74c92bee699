"""The launch and report pages of issue 31, in a real browser over ``make ui`` (the server of
``test_web_ui``): a paper job states its profile and its estimate before it is launched, a
report table is rendered inline on its asset's page, a run executed in process, as ``make run``
executes its stages, is listed under Runs, and a one-partition run launched from the UI costs
what ``make run`` spends on that partition plus one import of the project. Screenshots are kept
as artifacts."""

import time

import dagster as dg
import polars as pl
import pytest
import yaml

from tests.operations.test_web_ui import launch_sources, open_page

PAPER_JOB = "wikiprofile_build_paper"
SUBJECT = "walk-model"


def leaderboard_in_process(ui, root) -> dg.DagsterRun:
    """The leaderboard over one stored WikiProfile report (a subject at 0.5 encoded, 0.25
    known), run in process into the served instance as ``make run`` runs a stage; its files
    under ``root``, so the other operations tests' storage is untouched."""
    from pipelines.definitions import build_defs
    from pipelines.jobs import LEADERBOARD_STAGES
    from pipelines.run_default import run_stages
    from resources.storage import StorageResource, table_uri

    (root / "eval").mkdir(parents=True)
    pl.DataFrame(
        {"model": [SUBJECT], "facts": [4], "encodes": [0.5], "knows": [0.25], "knows_thinking": [None]},
        schema={
            "model": pl.String,
            "facts": pl.Int64,
            "encodes": pl.Float64,
            "knows": pl.Float64,
            "knows_thinking": pl.Float64,
        },
    ).write_parquet(table_uri(str(root), ["eval", "wikiprofile_profile_report"]))
    instance = ui.instance()
    assert run_stages(
        build_defs(storage=StorageResource(root=str(root))), instance, LEADERBOARD_STAGES, log=lambda _: None
    )
    [run] = instance.get_runs(dg.RunsFilter(job_name="eval_leaderboard"), limit=1)
    return run


def editor_text(page) -> str:  # noqa: F811
    """The whole launchpad config (the editor draws only the lines in view)."""
    return page.locator(".CodeMirror").first.evaluate("el => el.CodeMirror.getValue()")


@pytest.mark.slow
def test_a_paper_launch_states_its_size_a_report_table_is_inline_and_make_runs_runs_are_listed(
    running_dagster, page, artifacts, tmp_path
):
    ui = running_dagster
    run = leaderboard_in_process(ui, tmp_path / "storage")

    # The paper job's page: its profile tag, and the estimate as a table naming the registry.
    open_page(page, f"{ui.url}/locations/benchfoundry/jobs/{PAPER_JOB}", "Estimate for the paper profile")
    text = page.locator("body").inner_text()
    assert "benchfoundry/profile: paper" in text
    assert f"models from the registry {ui.registry}" in text
    estimate = page.locator("table", has_text="object verification (at most)")
    assert estimate.count() == 1, "the estimate is not rendered as a table"
    assert "LLM calls or steps" in estimate.inner_text()
    page.screenshot(path=str(artifacts / "paper_job.png"), full_page=True)
    # its launchpad: the profile in the tags and in the run config a launch sends
    open_page(page, f"{ui.url}/locations/benchfoundry/jobs/{PAPER_JOB}/playground", "benchfoundry/profile: paper")
    resources = yaml.safe_load(editor_text(page))["resources"]
    profiles = {
        key: value["config"]["profile"]
        for key, value in resources.items()
        if key.endswith("_settings") and "profile" in value["config"]
    }
    assert profiles and set(profiles.values()) == {"paper"}, profiles
    page.screenshot(path=str(artifacts / "paper_launchpad.png"))

    # A report table inline: the leaderboard's cells on the asset page, not behind a link.
    open_page(page, f"{ui.url}/assets/eval/leaderboard", SUBJECT)
    # the metadata row "leaderboard" holds the table; its innermost row is the subject's
    entry = page.locator("tr", has_text="Show schema").filter(has_text=SUBJECT).first
    assert "[Show Markdown]" not in entry.inner_text()
    row = entry.locator("tr", has_text=SUBJECT).last
    assert row.is_visible()
    cells = [c.strip() for c in row.locator("td").all_inner_texts()]
    assert cells[:5] == [SUBJECT, "subject LLM", "wikiprofile", "0.5", "0.25"], cells
    page.screenshot(path=str(artifacts / "leaderboard_inline.png"), full_page=True)

    # The in-process run under Runs. The Overview timeline leaves it out: it draws only runs
    # with a code location origin, which a run executed in process has none of (README).
    open_page(page, f"{ui.url}/runs", "eval_leaderboard")
    # the list links each run to its page by id
    assert page.locator(f"a[href$='/runs/{run.run_id}']").count() >= 1, f"run {run.run_id} is not listed under Runs"
    page.screenshot(path=str(artifacts / "runs_after_make_run.png"))
    origin = ui.graphql(
        "query($id: ID!){ runOrError(runId: $id){ ... on Run { repositoryOrigin { id } } } }", {"id": run.run_id}
    )
    assert origin["runOrError"]["repositoryOrigin"] is None


def sources_in_process(root, domain: str) -> tuple[float, int]:
    """RECOR's sources of ``domain`` and their checks materialized in this process, as ``make
    run`` runs a stage (the project already imported); the seconds it took and the checks it
    evaluated. Its files under ``root`` and its runs in an instance of its own."""
    from assets.recor.assets import recor_assets
    from checks.recor import recor_checks
    from pipelines.definitions import build_defs
    from resources.storage import StorageResource

    defs = build_defs(storage=StorageResource(root=str(root)))
    sources = [["recor", name] for name in ("source_questions", "source_documents", "source_rejects")]
    assets = [a for a in recor_assets if isinstance(a, dg.AssetsDefinition) and any(k.path in sources for k in a.keys)]
    started = time.monotonic()
    result = dg.materialize(
        [*assets, *recor_checks],
        selection=dg.AssetSelection.assets(*sources),
        partition_key=domain,
        resources=defs.resources,
        instance=dg.DagsterInstance.ephemeral(),
    )
    elapsed = time.monotonic() - started
    assert result.success
    return elapsed, len(result.get_asset_check_evaluations())


@pytest.mark.slow
def test_a_one_partition_run_from_the_ui_costs_what_make_run_spends_on_it_plus_one_import(
    running_dagster, page, tmp_path
):
    ui = running_dagster
    in_process, checks = sources_in_process(tmp_path / "storage", "hardware")
    run = launch_sources(page, ui, "drones")
    assert run.status == dg.DagsterRunStatus.SUCCESS
    events = [e.dagster_event for e in ui.instance().all_logs(run.run_id) if e.dagster_event]
    evaluated = [e for e in events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    assert len(evaluated) == checks > 0, "the UI run and the in-process one did not evaluate the same checks"
    # One import: every step, the checks' included, ran in the run process, as make run's
    # stages do. Dagster's default executor starts a process per step (here one multi-asset
    # step and 5 checks: 6 processes, 6 imports).
    steps = [e for e in events if e.event_type_value == "STEP_START"]
    assert len(steps) == 1 + checks and len({e.pid for e in steps}) == 1, {e.step_key: e.pid for e in steps}
    # The steps themselves cost what make run spends on them: from the run process's start
    # (its import done) to the run's end, twice the in-process time and 20 s to spare for a
    # loaded machine. The rest, the queue and the one import, is load-bound and not held here
    # (README, "Runs from the UI"; BENCHMARKS.md measures it).
    record = ui.instance().get_run_record_by_id(run.run_id)
    [run_start] = [e for e in ui.instance().all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_START)]
    in_run = record.end_time - run_start.timestamp
    assert in_run <= 2 * in_process + 20, (
        f"the UI run's steps took {in_run:.0f} s; in process {in_process:.0f} s, {checks} checks"
    )
