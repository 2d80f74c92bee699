"""The documentation site's reference (docs/reference/) is what the definitions give: written
again, it equals the committed pages, and it names every asset, check, job and resource."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.reference import COMMAND, OUT, anchor
from pipelines.reference_fields import comments, escaped, shown

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_committed_reference_is_what_the_definitions_give(tmp_path):
    # A deployment's variables (the schedules' profile and cron) are set: the reference still
    # describes the project as shipped.
    env = {**os.environ, "BENCHFOUNDRY_EVAL_PROFILE": "paper", "BENCHFOUNDRY_EVAL_CRON": "0 5 * * *"}
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "pipelines.reference", "--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    written = {p.name: p.read_text(encoding="utf-8") for p in tmp_path.glob("*.md")}
    committed = {p.name: p.read_text(encoding="utf-8") for p in OUT.glob("*.md")}
    differ = sorted(name for name in set(written) | set(committed) if written.get(name) != committed.get(name))
    assert not differ, f"docs/reference/ differs from the definitions in {', '.join(differ)}: run `{COMMAND}`"
    assert not re.search(re.escape(str(ROOT)), "".join(written.values())), "an absolute path of the checkout"


def headings(text: str) -> set[str]:
    """The explicit ids of a page's headings and table cells (``{#id}``)."""
    return set(re.findall(r"\{#([^}]+)\}", text))


def test_the_reference_names_every_asset_check_job_and_resource():
    from pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    pages = {p.name: p.read_text(encoding="utf-8") for p in OUT.glob("*.md")}
    assets = set().union(*(headings(t) for name, t in pages.items() if name.startswith("assets-")))
    keys = graph.get_all_asset_keys()
    checks = graph.asset_check_keys
    assert {anchor(*k.path) for k in keys} | {anchor(*c.asset_key.path, c.name) for c in checks} == assets
    assert len(assets) == len(keys) + len(checks)
    jobs = headings(pages["jobs.md"])
    assert jobs == {anchor("job", job.name) for job in defs.jobs}
    resources = headings(pages["resources.md"])
    assert resources == {anchor("resource", key) for key in defs.resources}
    counts = re.findall(r"Assets: (\d+), with (\d+) checks.*\n.*\n- \[Jobs\]\(jobs.md\): (\d+)", pages["index.md"])
    assert counts == [(str(len(keys)), str(len(checks)), str(len(defs.jobs)))]


def test_a_placeholder_shows_outside_code_and_stays_inside_it():
    assert escaped("under <storage root>, as ``<root>/x``") == "under &lt;storage root>, as ``<root>/x``"
    assert escaped(f"read {ROOT}/data/quit/a.json") == "read data/quit/a.json"


def test_a_field_is_described_by_the_comment_above_it():
    from assets.quit.settings import QuitSettings
    from resources.llm.registry import ModelSpec

    notes = comments(QuitSettings)
    assert notes["distractors"] == "Wrong candidate answers generated per question for convergence."
    assert notes["seed"] == "", "a field with no comment of its own takes none from the one above"
    # a comment of two lines, on a dataclass's field
    assert comments(ModelSpec)["thinking"].endswith('"none": the model cannot think.')


def test_a_default_reads_as_yaml():
    assert [shown(v) for v in (None, "", "paper", [1, 5], (), 0.5, {})] == [
        "null",
        "''",
        "paper",
        "[1, 5]",
        "[]",
        "0.5",
        "{}",
    ]
