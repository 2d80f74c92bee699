"""Report tables as Dagster table metadata, the form the UI renders inline."""

import math

import dagster as dg
import polars as pl

from assets.common.metadata import report_table


def test_a_report_table_holds_only_scalars_with_blanks_for_missing_scores():
    frame = pl.DataFrame(
        {
            "system": ["bm25", "e5"],
            "hit_rate@1": [1 / 3, math.nan],
            "ratio": [math.inf, 0.5],
            "k": [5, None],
            "oracle": [False, True],
            "gold": [["d1", "d2"], None],
        }
    )
    table = report_table(frame, {"hit_rate@1": "share of questions with a relevant passage first"})
    assert isinstance(table, dg.TableMetadataValue)
    assert [r.data for r in table.records] == [
        {"system": "bm25", "hit_rate@1": 0.3333, "ratio": None, "k": 5, "oracle": False, "gold": "d1; d2"},
        {"system": "e5", "hit_rate@1": None, "ratio": 0.5, "k": None, "oracle": True, "gold": None},
    ]
    columns = {c.name: (c.type, c.description) for c in table.schema.columns}
    assert columns == {
        "system": ("string", None),
        "hit_rate@1": ("float", "share of questions with a relevant passage first"),
        "ratio": ("float", None),
        "k": ("int", None),
        "oracle": ("bool", None),
        "gold": ("string", None),
    }


def test_an_empty_report_keeps_its_columns():
    table = report_table(pl.DataFrame(schema={"model": pl.String, "encodes": pl.Float64}), {"encodes": "E"})
    assert table.records == [] and [c.name for c in table.schema.columns] == ["model", "encodes"]


def test_a_report_table_survives_the_event_log():
    """What the UI reads back from the instance: the serialized entry, None cells included."""
    table = report_table(pl.DataFrame({"system": ["bm25"], "mrr": [math.nan]}), {"mrr": "MRR"})
    back = dg.deserialize_value(dg.serialize_value(table), dg.TableMetadataValue)
    assert back == table and back.records[0].data == {"system": "bm25", "mrr": None}


def test_a_slice_names_what_is_counted_and_the_runs_profile_tag():
    from assets.common.metadata import PROFILE_TAG, report_slice, run_profile

    seen = []

    @dg.asset
    def report(context: dg.AssetExecutionContext) -> None:
        seen.append(run_profile(context))

    assert dg.materialize([report], tags={PROFILE_TAG: "demo"}).success and dg.materialize([report]).success
    report(dg.build_asset_context(run_tags={PROFILE_TAG: "paper"}))  # invoked directly: no run, so no tag
    assert seen == ["demo", None, None]
    assert (
        report_slice("12 QUIT questions", "demo")
        == "12 QUIT questions; profile demo (the run's benchfoundry/profile tag)"
    )
    assert report_slice("2 facts", None) == (
        "2 facts; profile not stated: the run has no benchfoundry/profile tag "
        "(launched outside the profile jobs and make run)"
    )


def test_why_empty_names_only_the_empty_tables():
    from assets.common.metadata import why_empty

    empty, full = pl.DataFrame(schema={"a": pl.Int64}), pl.DataFrame({"a": [1]})
    assert why_empty({"table_7": (full, "never shown")}) == {}
    assert why_empty(
        {"table_7": (empty, "no oracle run"), "table_8": (full, "x"), "table_9": (empty, "no reader")}
    ) == {"why_empty": "table_7: no oracle run; table_9: no reader"}


def test_no_page_or_readme_says_scores_are_in_percent():
    """One unit: every score a share in [0, 1] (README); the UI said "scores in percent"."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    pages = [root / "README.md", *(root / "docs").rglob("*.md"), *(root / "assets").rglob("*.py")]
    texts = {str(p.relative_to(root)): p.read_text() for p in pages}
    assert not [name for name, text in texts.items() if "scores in percent" in text.lower()]
    import assets.eval.reports as reports

    assert not hasattr(reports, "percent_table") and not hasattr(reports, "em_markdown")


def test_no_wikiprofile_report_text_says_percent():
    """WikiProfile too holds shares in [0, 1] (issue 31's one unit): its Table 2 and analysis
    definitions, the checks' descriptions, the leaderboard's columns and the plots' axes said
    "% of profiled facts", "in percent" and "divided by 100"; README called it the exception."""
    import re
    from pathlib import Path

    from assets.eval import leaderboard as lb
    from assets.eval.wikiprofile import analysis
    from assets.eval.wikiprofile import rules as method
    from checks.eval import eval_checks

    percent = re.compile(r"(?<!\d)%|\bin percent\b|percentages|divided by 100")
    shown = {
        **{f"Table 2 {k}": v for k, v in method.DEFINITIONS.items()},
        **{
            f"{name} {k}": v
            for name in dir(analysis)
            if name.endswith("_DEFINITIONS")
            for k, v in getattr(analysis, name).items()
        },
        **{k: v for k, v in lb.definitions().items() if k.startswith("wikiprofile/")},
        **{
            f"check {spec.asset_key.to_user_string()} {spec.name}": spec.description or ""
            for c in eval_checks
            for spec in getattr(c, "check_specs", ())
            if spec.asset_key.path[-1].startswith("wikiprofile_")
        },
    }
    assert len([k for k in shown if k.startswith("check")]) >= 5
    assert not {k: v for k, v in shown.items() if percent.search(v)}
    # plot axes and the code that scaled shares by 100
    root = Path(__file__).resolve().parents[3]
    code = re.compile(r"(?<!\d)% of|\(%\)|\bin percent\b|100(\.0)? \* |\* 100\b|/ 100\b|\bpct\b")
    sources = [
        "assets/eval/wikiprofile/assets/profiles.py",
        "assets/eval/wikiprofile/assets/analyses.py",
        "assets/eval/wikiprofile/assets/common.py",
        "assets/eval/wikiprofile/analysis.py",
        "assets/eval/wikiprofile/rules.py",
        "assets/eval/leaderboard.py",
        "checks/eval/wikiprofile.py",
        "checks/eval/leaderboard.py",
    ]
    assert not [
        f"{s}:{n}"
        for s in sources
        for n, line in enumerate((root / s).read_text().splitlines(), 1)
        if code.search(line)
    ]
    for page in [root / "README.md", *(root / "docs").rglob("*.md")]:
        assert "WikiProfile's Table 2 and analysis tables still show percentages" not in page.read_text(), page
