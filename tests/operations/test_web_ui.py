"""The web UI in a real browser (Debian's Chromium driven by Playwright), as a user works
it: the asset graph with the four groups, a RECOR domain partition materialized from the
asset page's launch dialog, the Checks tabs of a RECOR and an evaluation asset, and a report
page whose metadata shows a table and a plot.
Screenshots are kept as test artifacts."""

import re

import dagster as dg
import pytest

DOMAIN = "law"


def dismiss_welcome(page) -> None:
    """The UI greets a new browser with a newsletter dialog over the page."""
    skip = page.get_by_role("button", name="Skip")
    if skip.count() and skip.first.is_visible():
        skip.first.click()


def open_page(page, url: str, ready: str) -> None:
    page.goto(url)
    page.get_by_text(ready).first.wait_for()
    page.wait_for_timeout(2000)
    dismiss_welcome(page)


def launch_sources(page, ui, domain: str, screenshot=None) -> dg.DagsterRun:
    """Materialize one domain of RECOR's sources from the asset page's launch dialog, as a user
    would, and wait for the run to finish; the run."""
    open_page(page, f"{ui.url}/assets/recor/source_questions", "One domain's source questions")
    page.locator("button", has_text="Materialize").first.click()
    dialog = page.locator(".dagster-dialog")
    # the sources are one multi-asset: the UI asks to confirm its sibling outputs
    dialog.locator("button", has_text="Confirm").click()
    dialog.get_by_text("Select a partition or create one").click()
    page.keyboard.type(domain)
    page.locator(".dagster-popover span", has_text=domain).first.click()
    dialog.get_by_text("Launch runs to materialize").click()  # closes the partition picker
    launch = dialog.locator("button", has_text="Launch 1 run")
    launch.wait_for()
    if screenshot is not None:
        page.screenshot(path=str(screenshot))
    launch.click()
    instance = ui.instance()
    finished = dg.RunsFilter(
        tags={"dagster/partition": domain}, statuses=[dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE]
    )
    [run] = ui.wait(f"the {domain} run launched from the UI", lambda: instance.get_runs(finished), timeout=300)
    return run


@pytest.mark.slow
def test_graph_launch_and_report_pages(running_dagster, page, artifacts):
    ui = running_dagster

    open_page(page, f"{ui.url}/asset-groups", "Global asset lineage")
    page.get_by_text("fetching statuses").first.wait_for(state="detached")
    tree = page.locator("body").inner_text()
    for group in ("quit", "recor", "wikiprofile", "eval"):
        assert re.search(rf"^{group}$", tree, re.M), f"group {group} not in the asset graph"
    page.screenshot(path=str(artifacts / "asset_graph.png"))

    # Materialize one domain of RECOR's sources from the asset page, as a user would.
    run = launch_sources(page, ui, DOMAIN, artifacts / "launch_dialog.png")
    instance = ui.instance()
    assert run.status == dg.DagsterRunStatus.SUCCESS
    assert DOMAIN in instance.get_materialized_partitions(dg.AssetKey(["recor", "source_questions"]))
    assert {k.to_user_string() for k in run.asset_selection} == {
        "recor/source_questions",
        "recor/source_documents",
        "recor/source_rejects",
    }
    open_page(page, f"{ui.url}/runs/{run.run_id}", "Success")
    page.screenshot(path=str(artifacts / "run_from_ui.png"))

    # The checks ran in that run and show on the asset's Checks tab; an evaluation asset's tab
    # lists its checks before anything is built.
    from pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    for asset, shot in (
        (("recor", "source_questions"), "recor_checks.png"),
        (("eval", "quit_runs"), "eval_checks.png"),
    ):
        names = sorted(k.name for k in graph.asset_check_keys if k.asset_key == dg.AssetKey(list(asset)))
        open_page(page, f"{ui.url}/assets/{'/'.join(asset)}?view=checks", names[0])
        text = page.locator("body").inner_text()
        assert all(name in text for name in names), f"{'/'.join(asset)}: checks {names} not all on the Checks tab"
        if asset[0] == "recor":  # evaluated in the run above
            assert "Succeeded" in text
        page.screenshot(path=str(artifacts / shot))
    evaluations = [
        e
        for e in instance.all_logs(run.run_id)
        if e.dagster_event and e.dagster_event.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    assert evaluations, "no check ran in the run launched from the UI"

    # A report page: QUIT's Table 1 as a rendered table and its plot as an image.
    open_page(page, f"{ui.url}/assets/quit/statistics", "Table 1 of the paper")
    page.get_by_text("table_1").first.wait_for()
    assert page.locator("table", has_text="Total Passages").count() >= 1, "Table 1 is not rendered as a table"
    page.screenshot(path=str(artifacts / "report_page.png"), full_page=True)
    # a long markdown value (the plot) opens in a dialog
    row = page.locator("tr", has_text="passages_by_hints")
    row.get_by_text("[Show Markdown]").click()
    plot = page.locator("img[src^='data:image/png']")
    plot.first.wait_for()
    assert plot.first.evaluate("img => img.naturalWidth") > 100
    page.screenshot(path=str(artifacts / "report_plot.png"))
