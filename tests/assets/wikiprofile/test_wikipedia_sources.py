"""WikiProfile from Wikimedia's own data: the three summary formats and the two view formats
read from fixtures in the real formats (tests/fixtures/wikipedia, make_fixtures.py), each
with its bad input; the join's counts as make_fixtures.py hand-checks them; the assets and
their checks materialized from the fixtures."""

import bz2
import gzip
import json
import os
import shutil

import dagster as dg
import polars as pl
import pytest

from assets.wikiprofile.sources.wikipedia import (
    WINDOW,
    SummaryReader,
    ViewReader,
    ViewTotals,
    WikipediaFileError,
    api_months,
    day_of,
    draw_pages,
    hf_lead,
    is_heading,
    join_pages,
    normalize_title,
    window_months,
)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "fixtures", "wikipedia")
CIRRUS = os.path.join(FIXTURES, "summaries", "enwiki-20250602-cirrussearch-content.json.gz")
HF = os.path.join(FIXTURES, "summaries", "train-00000-of-00001.parquet")
REST = os.path.join(FIXTURES, "summaries", "rest-summaries.jsonl")
VIEWS = os.path.join(FIXTURES, "views")
LEAD = " ".join(f"word{i}" for i in range(60)) + "."


def read(path, min_words=50):
    reader = SummaryReader(path, min_words, batch_rows=7)  # several batches: duplicates across them too
    frame = pl.concat(list(reader.batches()))
    return frame, reader.rejects(), reader.counts


def reasons(rejects):
    return dict(zip(rejects["question_id"], rejects["reason"]))


def test_a_cirrussearch_dump_keeps_articles_with_a_lead_and_names_the_rest():
    frame, rejects, counts = read(CIRRUS)
    assert frame.height == 20 and counts == {
        "records": 24,
        "kept": 20,
        "not_article": 1,
        "disambiguation": 1,
        "no_lead": 1,
        "too_short": 1,
    }
    assert reasons(rejects) == {"2001": "not_article", "2002": "disambiguation", "2003": "no_lead", "2004": "too_short"}
    einstein = frame.row(0, named=True)
    assert (einstein["page_id"], einstein["title"], einstein["words"]) == ("1000", "Albert Einstein", 120)
    assert "line 48" in rejects.filter(pl.col("question_id") == "2004")["detail"][0]


def test_a_wikimedia_wikipedia_shard_keeps_the_text_before_the_first_heading():
    frame, rejects, counts = read(HF)
    assert frame.height == 16 and counts["no_lead"] == 1 and reasons(rejects) == {"2005": "no_lead"}
    first = frame.filter(pl.col("title") == "Jesus")["summary"][0]
    assert "history section" not in first and len(first.split()) == 124


def test_how_a_heading_is_recognized():
    assert is_heading("History") and is_heading("Early life and career") and is_heading("== Legacy ==")
    assert not is_heading("He was born in Ulm.") and not is_heading("It is said (by some)")
    assert not is_heading(" ".join(["word"] * 11))  # a line of more than 10 words is prose
    text = "Ulm\nUlm is a city on the Danube.\nIt lies in Germany.\n\nHistory\n\nFounded long ago."
    assert hf_lead(text, "Ulm") == "Ulm is a city on the Danube. It lies in Germany."
    assert hf_lead("Overview\n\nText after the heading.", "X") == ""


def test_rest_summaries_skip_disambiguation_pages():
    frame, rejects, counts = read(REST)
    assert frame.height == 10 and reasons(rejects) == {"2006": "disambiguation", "2007": "too_short"}


def test_a_page_twice_in_a_file_is_kept_once_across_batches(tmp_path):
    path = tmp_path / "summaries.jsonl"
    rows = [{"pageid": i % 9, "title": f"P{i % 9}", "extract": LEAD, "type": "standard"} for i in range(20)]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    frame, rejects, counts = read(str(path))
    assert frame.height == 9 and counts["duplicate_page"] == 11 and frame["page_id"].is_unique().all()


def bulk(*pairs: bytes) -> bytes:
    return b"\n".join(pairs) + b"\n"


def action(pid):
    return json.dumps({"index": {"_type": "_doc", "_id": str(pid)}}).encode()


def doc(title, **fields):
    return json.dumps({"namespace": 0, "title": title, "opening_text": LEAD, **fields}).encode()


def test_bad_cirrus_input_is_named_by_line(tmp_path):
    path = tmp_path / "enwiki-x-cirrussearch-content.json.gz"
    data = bulk(
        action(1),
        doc("Kept"),
        action(2),  # a pair missing its document
        action(3),
        doc("No lead", opening_text=None),
        action(4),
        b'{"namespace": 0, "title": "Bad \xff bytes", "opening_text": "x"}',
        action(5),
        b"{not json",
        action(6),
    )
    path.write_bytes(gzip.compress(data))
    frame, rejects, counts = read(str(path))
    assert frame["title"].to_list() == ["Kept"]
    got = reasons(rejects)
    assert got == {
        "2": "missing_document",
        "3": "no_lead",
        "4": "not_utf8",
        "5": "malformed_record",
        "6": "missing_document",
    }
    details = dict(zip(rejects["question_id"], rejects["detail"]))
    assert "line 3" in details["2"] and "line 7" in details["4"] and "0xff" in details["4"]
    assert counts["records"] == 6


def test_a_truncated_gzip_is_an_error_naming_the_file_and_line(tmp_path):
    whole = gzip.compress(bulk(*[p for i in range(400) for p in (action(i), doc(f"Page {i}"))]))
    path = tmp_path / "cut-cirrussearch-content.json.gz"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(WikipediaFileError, match=r"cut-cirrussearch-content\.json\.gz.*after line \d+"):
        read(str(path))
    broken = tmp_path / "summaries.jsonl.bz2"
    broken.write_bytes(bz2.compress(b"x" * 10000)[:-20])
    with pytest.raises(WikipediaFileError, match="summaries.jsonl.bz2"):
        read(str(broken))


def test_daily_view_files_of_every_era_read_by_their_header():
    reader = ViewReader("en.wikipedia")
    april = reader.read_month([os.path.join(VIEWS, "2025-4-1.csv")], "2025-04")
    assert april.height == 42 and reader.counts["bad_views"] == 2
    assert sorted(r["detail"].split(": ")[1] for r in reader.rejects) == [
        "count '-4' is not a count of at least 0",
        "count 'n/a' is not a count of at least 0",
    ]
    # 548,000 views in April: a day's 18,266 over three countries (9,133 + 5,479 + 3,653)
    assert april.filter(pl.col("page_id") == "1000").row(0) == ("1000", "Albert Einstein", 18265)
    for name, month in (("2023-2-6.tsv", "2023-02"), ("2025-05-01.tsv.gz", "2025-05")):
        frame = ViewReader().read_month([os.path.join(VIEWS, name)], month)
        assert frame.height == 42 and frame["views"].min() > 0, name
    assert day_of("2023-2-6.tsv").isoformat() == "2023-02-06" and day_of("pageviews.json") is None


def test_the_page_views_api_counts_its_items_of_the_month_by_title():
    path = os.path.join(VIEWS, "pageviews-2024-06.json")
    assert api_months(path) == {"2024-06"}
    frame = ViewReader().read_month([path], "2024-06")
    assert sorted(frame["title"]) == ["Albert Einstein", "Mona Lisa"] and frame["page_id"].null_count() == 2
    assert ViewReader().read_month([path], "2024-07").is_empty()


def test_bad_view_input_is_a_reject_or_an_error_naming_the_file(tmp_path):
    no_count = tmp_path / "2024-1-2.tsv"
    no_count.write_text("country\tproject\tpage_id\tpage_title\tviews\nFR\ten.wikipedia\t1\tA\t5\n")
    with pytest.raises(WikipediaFileError, match=r"2024-1-2\.tsv line 1: the header has no count column"):
        ViewReader().read_month([str(no_count)], "2024-01")
    mixed = tmp_path / "2024-1-3.tsv.gz"
    mixed.write_bytes(
        gzip.compress(
            b"country\tproject\tpage_id\tpage_title\tgbc\n"
            b"FR\ten.wikipedia\t1\tGood_title\t100\n"
            b"FR\ten.wikipedia\t2\tBad_\xff_title\t100\n"
            b"FR\ten.wikipedia\tx9\tNo_id\t100\n"
            b"FR\ten.wikipedia\t3\tShort\n"
            b"FR\ten.wikipedia\t4\tToo\tmany\tfields\n"
            b"DE\tde.wikipedia\t1\tGut\t-1\n"
        )
    )
    reader = ViewReader()
    frame = reader.read_month([str(mixed)], "2024-01")
    assert frame.rows() == [("1", "Good title", 100)]
    assert sorted(r["reason"] for r in reader.rejects) == ["malformed_record"] * 3 + ["not_utf8"]
    cut = tmp_path / "2024-1-4.tsv.gz"
    cut.write_bytes(mixed.read_bytes()[:-10])
    with pytest.raises(WikipediaFileError, match=r"2024-1-4\.tsv\.gz"):
        ViewReader().read_month([str(cut)], "2024-01")


def test_a_day_of_numbers_and_a_day_read_as_bytes_count_alike(tmp_path):
    """A day whose counts and ids all parse reads straight to numbers; one bad field sends the
    day through the row-by-row reading. Both count the same rows the same way."""
    day = open(os.path.join(VIEWS, "2023-2-6.tsv"), "rb").read()
    numbers = tmp_path / "2023-2-7.tsv"
    bad = b"France\tFR\ten.wikipedia\t1000\tAlbert_Einstein\t-3\nGermany\tDE\ten.wikipedia\t1000\tAlbert_Einstein\t\n"
    numbers.write_bytes(day + bad)
    as_bytes = tmp_path / "2023-2-8.tsv"
    # another project's row: not counted, but its count is no number, so the day is read as bytes
    as_bytes.write_bytes(numbers.read_bytes() + b"Germany\tDE\tde.wikipedia\t7\tSieben\tsieben\n")
    counted = {}
    for path in (numbers, as_bytes):
        reader = ViewReader()
        counted[path.name] = reader.read_month([str(path)], "2023-02"), sorted(r["detail"] for r in reader.rejects)
    (typed, typed_rejects), (read_as_bytes, bytes_rejects) = counted.values()
    assert typed.sort("page_id").equals(read_as_bytes.sort("page_id")) and typed.height == 42
    lines = len(day.rstrip(b"\n").split(b"\n"))
    assert typed_rejects == [
        f"2023-2-7.tsv line {lines + 1}: count '-3' is not a count of at least 0",
        f"2023-2-7.tsv line {lines + 2}: count '' is not a count of at least 0",
    ]
    assert [d.replace("2023-2-8", "2023-2-7") for d in bytes_rejects] == typed_rejects


def fixture_pages():
    ids = pl.concat([read(p)[0].drop("summary") for p in (CIRRUS, HF, REST)])
    return ids.unique("page_id", keep="first", maintain_order=True)


def fixture_totals():
    totals = ViewTotals(window_months(*WINDOW))
    for name, month in (
        ("2023-2-6.tsv", "2023-02"),
        ("pageviews-2024-06.json", "2024-06"),
        ("2025-4-1.csv", "2025-04"),
        ("2025-05-01.tsv.gz", "2025-05"),
    ):
        totals.add(ViewReader().read_month([os.path.join(VIEWS, name)], month), month)
    return totals


def test_the_join_counts_as_the_fixture_hand_checks_them():
    ids = fixture_pages()
    assert ids.height == 45  # 46 summaries, Albert Einstein twice
    eligible, no_views = join_pages(ids, fixture_totals(), 4)
    assert (eligible.height, no_views.height) == (42, 3)
    assert sorted(no_views["detail"].str.extract(r"^(.*):", 1)) == ["Agnes Pockels", "Le roi d'Ys", "Stargazy pie"]
    einstein = eligible.filter(pl.col("page_id") == "1000").row(0, named=True)
    # 18,265 x 2 (two daily files of April's numbers) + 19,165 (May) + 17,700 x 2 (the API's June,
    # by title "Albert_Einstein"), over the 4 months read; views in all 4
    assert einstein["mean_monthly_views"] == (18265 * 2 + 19165 + 17700 * 2) / 4 and einstein["months"] == 4
    chess = eligible.filter(pl.col("title") == "Chess").row(0, named=True)
    assert chess["months"] == 3  # no API items: 3 of the 4 months


def test_titles_are_normalized_as_mediawiki_compares_them():
    assert normalize_title("mona_Lisa") == "Mona Lisa" and normalize_title(" Le  roi_d'Ys ") == "Le roi d'Ys"


def test_the_draw_is_seeded_uniform_or_stratified_and_ignores_the_shard_order():
    eligible, _ = join_pages(fixture_pages(), fixture_totals(), 4)
    drawn = draw_pages(eligible, 12, 7)
    assert drawn.height == 12 and drawn.equals(draw_pages(eligible.reverse(), 12, 7))
    assert not drawn.equals(draw_pages(eligible, 12, 8))
    assert drawn["page_id"].cast(pl.Int64).is_sorted()
    strata = draw_pages(eligible, 12, 7, strata=3)
    ranked = eligible.with_columns(q=(pl.col("mean_monthly_views").rank("ordinal") - 1) * 3 // eligible.height)
    per = ranked.filter(pl.col("page_id").is_in(strata["page_id"].implode())).group_by("q").len()
    assert sorted(per["len"]) == [4, 4, 4]
    assert draw_pages(eligible, None, 0).height == 42


# --- the checks fail broken tables -------------------------------------------------------------


def test_broken_wikipedia_tables_fail_their_checks():
    from assets.wikiprofile.settings import WikiProfileSettings
    from checks.wikiprofile import wikipedia as checks

    settings = WikiProfileSettings()
    summaries, _, _ = read(CIRRUS)
    assert checks.summary_rules(summaries, settings).passed
    short = summaries.with_columns(pl.col("summary").str.slice(0, 20), words=pl.lit(3, pl.Int32))
    assert not checks.summary_rules(short, settings).passed
    assert not checks.summary_rules(summaries.with_columns(page_id=pl.lit("Albert")), settings).passed
    views = ViewReader().read_month([os.path.join(VIEWS, "2025-4-1.csv")], "2025-04")
    assert checks.view_rules(views).passed
    assert not checks.view_rules(views.with_columns(views=pl.lit(-1, pl.Int64))).passed
    assert not checks.view_rules(views.with_columns(page_id=pl.lit("x1"))).passed


# --- the assets, materialized from the fixtures -------------------------------------------------


def test_the_assets_build_source_pages_from_the_fixtures_and_their_checks_pass(tmp_path):
    from assets.wikiprofile.assets.extraction import source_pages
    from assets.wikiprofile.assets.wikipedia import wikipedia_summaries, wikipedia_views
    from assets.wikiprofile.settings import WikiProfileSettings
    from checks.wikiprofile import wikipedia as checks
    from checks.wikiprofile.sources import page_rules, source_rejects_reasons
    from resources.storage import StorageResource, parquet_io_manager

    folder = tmp_path / "wikipedia"
    shutil.copytree(FIXTURES, folder, ignore=shutil.ignore_patterns("*.py"))
    settings = WikiProfileSettings(pages_source="wikipedia", wikipedia_path=str(folder), max_pages=12)
    resources = {
        "storage": StorageResource(root=str(tmp_path / "storage")),
        "io_manager": parquet_io_manager,
        "wikiprofile_settings": settings,
    }
    instance = dg.DagsterInstance.ephemeral()
    shards = sorted(os.listdir(folder / "summaries"))
    instance.add_dynamic_partitions("wikipedia_shards", shards)
    with_checks = [checks.summaries_schema, checks.summary_rules, checks.summary_rejects_reasons]
    for shard in shards:
        result = dg.materialize(
            [wikipedia_summaries, *with_checks], partition_key=shard, instance=instance, resources=resources
        )
        assert all(c.passed for c in result.get_asset_check_evaluations()), shard
    view_checks = [checks.views_schema, checks.view_rules, checks.view_rejects_reasons]
    for month in ("2023-02-01", "2024-06-01", "2025-04-01", "2025-05-01"):
        result = dg.materialize(
            [wikipedia_views, *view_checks], partition_key=month, instance=instance, resources=resources
        )
        assert all(c.passed for c in result.get_asset_check_evaluations()), month
    with pytest.raises(dg.Failure, match="no page-view file of 2023-03"):
        dg.materialize([wikipedia_views], partition_key="2023-03-01", instance=instance, resources=resources)
    result = dg.materialize(
        [source_pages, page_rules, source_rejects_reasons, checks.window_accounted],
        instance=instance,
        resources=resources,
        selection=[dg.AssetKey(["wikiprofile", "source_pages"]), dg.AssetKey(["wikiprofile", "source_rejects"])],
    )
    evaluations = result.get_asset_check_evaluations()
    assert len(evaluations) == 3 and all(c.passed for c in evaluations), evaluations
    pages = result.output_for_node("wikiprofile_source_pages", "source_pages")
    rejects = result.output_for_node("wikiprofile_source_pages", "source_rejects")
    assert pages.height == 12 and pages["summary"].null_count() == 0
    counted = rejects.group_by("reason").len().sort("reason").rows()
    assert counted == [("duplicate_page", 1), ("missing_month", 25), ("no_views", 3)]
    metadata = result.asset_materializations_for_node("wikiprofile_source_pages")[0].metadata
    assert metadata["eligible"].value == 42 and metadata["months_read"].value == 4


def test_make_run_plans_the_shards_and_months_of_the_folder(tmp_path, capsys):
    from pipelines.run_default import parse, plan

    planned = plan(parse(["--benchmarks", "wikiprofile", "--wikipedia", FIXTURES]))
    assert [s for s, _ in planned.stages][:2] == ["wikipedia_summaries", "wikipedia_views"]
    assert sorted(planned.partitions["wikipedia_shards"]) == sorted(os.listdir(os.path.join(FIXTURES, "summaries")))
    assert planned.partitions["wikipedia_months"] == ["2023-02-01", "2024-06-01", "2025-04-01", "2025-05-01"]
    with pytest.raises(SystemExit):
        parse(["--benchmarks", "wikiprofile", "--wikipedia", str(tmp_path)])
    assert "has no summaries/ and no views/ folder" in capsys.readouterr().err
