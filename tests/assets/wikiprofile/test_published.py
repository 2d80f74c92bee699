"""The published WikiProfile file (``wikiprofile.csv``) read into the project's benchmark: the
bundled sample whole, each kind of bad record rejected with its reason while the rest loads,
the mapping from the published column names, and the benchmark checks on the result."""

import csv
import io
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from assets.wikiprofile import published, release, sources
from checks.factories import rejects_check
from checks.wikiprofile import release as wrelease

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "releases" / "wikiprofile" / "wikiprofile.csv"

# The columns a third-party reader of the published file requires before it runs:
# djaxchi/CoT-checker, scripts/parametric_retrieval/prg_sample_facts.py, REQUIRED_COLS.
THIRD_PARTY_REQUIRED = (
    "fact_id",
    "page_title",
    "item_id",
    "gbc",
    "category",
    "subject",
    "object",
    "subject_type",
    "object_type",
    "completion",
    "direct",
    "direct_answer",
    "direct_natural",
    "reverse",
    "reverse_answer",
    "reverse_natural",
)
# The option lists the same file's docstring names ("MC (direct_choices / reverse_choices: answer in
# prompt)"), parsed by src/analysis/parametric_retrieval_access.py parse_choices.
THIRD_PARTY_OPTIONS = ("direct_choices", "reverse_choices")
# Its golds (src/analysis/parametric_retrieval.py build_prompt_instances): the completion is
# graded against the object, direct questions against direct_answer, reverse against reverse_answer.
THIRD_PARTY_GOLDS = {
    "completion": "object",
    "direct": "direct_answer",
    "direct_natural": "direct_answer",
    "reverse": "reverse_answer",
    "reverse_natural": "reverse_answer",
}


def sample_rows() -> tuple[list[str], list[dict]]:
    reader = csv.DictReader(io.StringIO(SAMPLE.read_text(encoding="utf-8"), newline=""))
    return list(reader.fieldnames), list(reader)


def write(path: Path, header: list[str], rows: list) -> str:
    """A CSV file of ``rows`` (dicts by column, or raw field lists written as they are)."""
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(header)
    for row in rows:
        writer.writerow([row.get(c, "") for c in header] if isinstance(row, dict) else row)
    path.write_text(out.getvalue(), encoding="utf-8")
    return str(path)


def run(check, benchmark: pl.DataFrame):
    """A benchmark check with ``benchmark`` as its one input."""
    return check(**{arg: benchmark for arg in check.keys_by_input_name})


def test_the_bundled_sample_loads_whole_as_ten_tasks_per_fact():
    benchmark, rejects = published.load_release(str(SAMPLE))
    assert rejects.height == 0, rejects.to_dicts()
    assert benchmark.schema == pl.Schema(release.BENCHMARK_SCHEMA)
    assert benchmark.height == 90 and benchmark["fact_id"].n_unique() == 9
    assert benchmark["page_id"].unique().sort().to_list() == ["albert_einstein", "dna", "eiffel_tower", "japan", "nile"]
    by = {(r["fact_id"], r["task"]): r for r in benchmark.iter_rows(named=True)}
    assert by[("0", "completion")]["question"].endswith("born on 14 March 1879 in the city of")
    assert by[("0", "completion")]["answer"] == by[("0", "direct")]["answer"] == "Ulm"
    assert by[("0", "reverse_natural")]["answer"] == "Albert Einstein"
    assert by[("0", "mc_direct_natural")]["question"] == "What city was Einstein born in?"
    assert by[("0", "mc_direct_natural")]["options"] == ["Ulm", "Munich", "Stuttgart", "Augsburg"]
    assert by[("2", "mc_reverse")]["options"] == ["Blue Nile", "White Nile", "Atbara River", "Sobat River"]
    assert by[("0", "direct")]["options"] is None
    # The 19 types in Figure 11's groups: IDEA -> CONCEPT, SUBSTANCE -> BIO_CHEM, the rest as they are.
    assert [by[(f, "direct")]["type_group"] for f in "01467"] == ["LOCATION", "CONCEPT", "PERSON", "BIO_CHEM", "DATE"]
    assert set(benchmark["question_origin"]) == {"release"}
    assert benchmark.filter(pl.col("task").str.starts_with("mc_"))["options_origin"].unique().to_list() == ["release"]


def test_the_loaded_sample_passes_the_benchmark_checks():
    benchmark, _ = published.load_release(str(SAMPLE))
    for check in (
        wrelease.benchmark_schema,
        wrelease.ten_tasks_per_fact,
        wrelease.lengths,
        wrelease.distractors_apart_from_gold,
    ):
        result = run(check, benchmark)
        assert result.passed, (check, result.metadata)
    broken = benchmark.filter(pl.col("task") != "contextual")
    assert not run(wrelease.ten_tasks_per_fact, broken).passed


def test_popularity_is_the_page_count_per_month_for_the_popularity_tiers():
    benchmark, _ = published.load_release(str(SAMPLE))
    pages = published.load_release_pages(str(SAMPLE))
    assert pages.schema == pl.Schema(published.PAGES_SCHEMA) and pages.height == 5
    einstein = pages.filter(pl.col("page_id") == "albert_einstein").row(0, named=True)
    assert (
        einstein["gbc"] == 14_500_000 and einstein["mean_monthly_views"] == 500_000.0 and einstein["item_id"] == "Q937"
    )
    # As popularity_report ranks facts: 9 facts, 20% is one at each end; Einstein's facts share
    # the most views (the lower fact_id wins the tie), DNA's the fewest.
    views = (
        benchmark.select("fact_id", "page_id")
        .unique()
        .join(pages.select("page_id", "mean_monthly_views"), on="page_id")
    )
    tiers = dict(sources.popularity_tiers(views, key="fact_id").iter_rows())
    assert [f for f, t in sorted(tiers.items()) if t != "middle"] == ["0", "7"] and tiers["0"] == "top"


def test_a_folder_or_a_path_from_the_project_root_reads_the_same_file():
    whole, _ = published.load_release(str(SAMPLE))
    assert published.load_release(str(SAMPLE.parent))[0].equals(whole)
    assert published.load_release("data/releases/wikiprofile/wikiprofile.csv")[0].equals(whole)


def test_bad_records_are_rejected_with_their_reason_and_line_while_the_rest_loads(tmp_path):
    header, rows = sample_rows()
    good, second = rows[0], rows[1]
    shuffled = {**rows[2], "direct_choices": "['Lake Victoria', 'Lake Tana', 'Lake Albert', 'Lake Turkana']"}
    bad = [
        list(good.values())[:-2],  # line 4: two fields short
        {**rows[3], "direct": ""},  # line 5: missing field
        {**rows[4], "fact_id": "0"},  # line 6: fact_id of line 2
        {**rows[5], "direct_choices": "['Chrysler Building', 'Empire State Building'"},  # line 7: not a literal
        {**rows[5], "fact_id": "51", "reverse_choices": "__import__('os').getcwd()"},  # line 8: code, never run
        {**rows[6], "direct_choices": "['uracil', 'inosine', 'xanthine', 'guanine']"},  # line 9: gold missing
        {**rows[7], "reverse_choices": "['DNA', 'RNA', 'collagen']"},  # line 10: three options
        {**rows[7], "fact_id": "71", "reverse_choices": "['DNA', 'RNA', 'dna', 'ATP']"},  # line 11: repeated
        {**rows[3], "fact_id": "31", "object_type": "PLANET"},  # line 12: not a type
        {**rows[3], "fact_id": "32", "reverse": "Which river, the Nile, runs past Cairo?"},  # line 13: names its answer
        {**rows[3], "fact_id": "33", "gbc": "many"},  # line 14: gbc not a count
    ]
    path = write(tmp_path / "wikiprofile.csv", header, [good, second, *bad, shuffled])
    benchmark, rejects = published.load_release(path)
    assert benchmark["fact_id"].unique().sort().to_list() == ["0", "1", "2"] and benchmark.height == 30
    assert rejects.columns == ["fact_id", "line", "step", "reason", "detail", "record"]
    assert list(zip(rejects["line"], rejects["reason"])) == [
        ("4", "malformed_record"),
        ("5", "missing_field"),
        ("6", "duplicate_id"),
        ("7", "malformed_record"),
        ("8", "malformed_record"),
        ("9", "bad_options"),
        ("10", "bad_options"),
        ("11", "bad_options"),
        ("12", "unknown_type"),
        ("13", "answer_in_question"),
        ("14", "malformed_record"),
    ]
    assert rejects["fact_id"].to_list() == [None, "3", "0", "5", "51", "6", "7", "71", "31", "32", "33"]
    details = rejects["detail"].to_list()
    assert "17 fields, the header has 19" in details[0] and "empty direct" in details[1]
    assert (
        "first seen on line 2" in details[2]
        and "not a Python literal" in details[3]
        and "not a Python literal" in details[4]
    )
    assert "'thymine' is not among" in details[5] and "3 options" in details[6] and "repeated" in details[7]
    assert "PLANET" in details[8] and "reverse names its answer" in details[9] and "'many'" in details[10]
    assert all(d.startswith(f"{path} line ") for d in details)
    assert set(rejects["reason"]) <= published.REASONS and set(rejects["step"]) == {"release"}
    vocabulary = rejects_check(
        dg.AssetKey(["wikiprofile", "release_rejects"]), published.REASONS, published.REJECTS.keys
    )
    assert run(vocabulary, rejects).passed
    # A gold that is not first in the file is moved first; the other options keep their order.
    mc = benchmark.filter((pl.col("fact_id") == "2") & (pl.col("task") == "mc_direct_natural")).row(0, named=True)
    assert mc["options"] == ["Lake Tana", "Lake Victoria", "Lake Albert", "Lake Turkana"]
    assert run(wrelease.ten_tasks_per_fact, benchmark).passed


def test_without_a_contextual_column_the_contextual_question_is_built_by_rule(tmp_path):
    header, rows = sample_rows()
    path = write(tmp_path / "wikiprofile.csv", [c for c in header if c != "contextual"], rows)
    benchmark, rejects = published.load_release(path)
    assert rejects.height == 0 and benchmark.height == 90
    contextual = benchmark.filter((pl.col("fact_id") == "0") & (pl.col("task") == "contextual")).row(0, named=True)
    assert contextual["question"] == (
        "Albert Einstein was a theoretical physicist who developed the theory of relativity and "
        "made major contributions to the development of quantum theory. In which city was "
        "Albert Einstein born in 1879?"
    )
    assert contextual["question_origin"] == "rules" and contextual["answer"] == "Ulm"
    assert benchmark.filter(pl.col("question_origin") == "rules")["task"].unique().to_list() == ["contextual"]
    assert run(wrelease.ten_tasks_per_fact, benchmark).passed


def test_a_file_without_the_published_columns_is_an_error_naming_them(tmp_path):
    header, rows = sample_rows()
    path = write(tmp_path / "wikiprofile.csv", [c for c in header if c not in ("gbc", "reverse_choices")], rows)
    with pytest.raises(ValueError, match="lacks gbc, reverse_choices"):
        published.load_release(path)
    with pytest.raises(FileNotFoundError, match="no file at"):
        published.load_release(str(tmp_path / "elsewhere"))


def test_the_field_mapping_uses_the_published_column_names():
    assert set(published.REQUIRED_COLUMNS) == {*THIRD_PARTY_REQUIRED, *THIRD_PARTY_OPTIONS}
    used = {c for cols in published.TASK_COLUMNS.values() for c in cols if c}
    assert used - {*THIRD_PARTY_REQUIRED, *THIRD_PARTY_OPTIONS} == {published.CONTEXTUAL}
    assert {task: published.TASK_COLUMNS[task][1] for task in THIRD_PARTY_GOLDS} == THIRD_PARTY_GOLDS
    # Each question and its natural rephrasing share their direction's option list.
    assert {t: c[2] for t, c in published.TASK_COLUMNS.items() if c[2]} == {
        "mc_direct": "direct_choices",
        "mc_direct_natural": "direct_choices",
        "mc_reverse": "reverse_choices",
        "mc_reverse_natural": "reverse_choices",
    }
    assert set(published.TASK_COLUMNS) == set(wrelease.TASKS)
    header, _ = sample_rows()
    assert set(header) == {*published.REQUIRED_COLUMNS, published.CONTEXTUAL}
