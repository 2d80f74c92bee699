"""WikiProfile as its authors published it (HF ``google/WikiProfile``): one CSV file,
``wikiprofile.csv``, one row per fact, melted here into the project's own benchmark table
(``release.BENCHMARK_SCHEMA``: one row per fact and task, ten tasks per fact), so that the
profiling assets read a published fact exactly as they read a built one.

What is known about the format, and from where (the dataset card's own column list was not
found in any searchable source, and the file itself was not downloaded):

- Confirmed: one CSV file ``wikiprofile.csv`` with a header and no splits (the dataset's
  HF file listing, as the project's research notes record it; the paper names the dataset,
  not its columns). The columns ``fact_id``, ``page_title``, ``item_id``, ``gbc``, ``category``,
  ``subject``, ``object``, ``subject_type``, ``object_type``, ``completion``, ``direct``,
  ``direct_answer``, ``direct_natural``, ``reverse``, ``reverse_answer`` and
  ``reverse_natural`` are the ones a third-party reader of the file requires before it
  will run (``REQUIRED_COLS`` in djaxchi/CoT-checker,
  ``scripts/parametric_retrieval/prg_sample_facts.py``). The same project grades the
  completion against ``object``, the direct questions against ``direct_answer`` and the
  reverse ones against ``reverse_answer`` (``src/analysis/parametric_retrieval.py``).
- Named, not required: ``direct_choices`` and ``reverse_choices``, the multiple-choice
  options, stored as Python-literal lists (that reader's docstring, and its
  ``parse_choices``: "WikiProfile MC choices are stringified python lists"). They are
  parsed here with ``ast.literal_eval``, never evaluated as code.
- Inferred: a ``contextual`` column. The same docstring says that "contextual (not
  closed-book)" questions were left out alongside the option columns; the exact column name
  is a guess. When the file has no such column, the contextual question is built by the
  project's own rule (``steps.contextual_question``: the completion prompt without its
  unfinished last sentence, then the direct question), marked ``question_origin = rules``;
  every fact still has its ten tasks, so the checks need no exception.
- Inferred: four options per list, holding the gold (the paper: the gold and three
  distractors), shared by a question and its natural rephrasing (two lists for four
  multiple-choice tasks). Their order in the file is unknown; the gold is moved first here,
  as the project stores it (profiling shuffles around index 0).
- Inferred: ``gbc`` is the popularity count (the page views of February 2023 to June 2025,
  per the paper); ``fact_id`` may be written as a number (the third party casts it to a
  string); the entity types are the paper's 19, written as ``rules.ENTITY_TYPES`` writes
  them (compared upper-case, spaces and hyphens as underscores).

Columns beyond these are ignored. A record that cannot be a benchmark fact is rejected with
its line and reason (``REASONS``), never dropped: a row whose field count differs from the
header's, a missing field, an options literal that does not parse, a ``gbc`` that is not a
number, a repeated ``fact_id``, an object type outside the 19, option lists without the gold
or not four distinct options, and closed-book questions that name their answer (by the
project's rule, ``rules.answer_leaks``, the one its benchmark check blocks on).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

import polars as pl

from assets.common.parsing import python_literal
from assets.common.records import decode, project_path
from assets.common.rejects import Rejects
from assets.common.text import normalize
from assets.wikiprofile import release, rules, sources, steps
from resources.storage import read_bytes

FILE_NAME = "wikiprofile.csv"
# The columns the third-party reader requires (see the module docstring), and the two option
# lists; a file without one of them is not this release.
REQUIRED_COLUMNS = (
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
    "direct_choices",
    "reverse_choices",
)
CONTEXTUAL = "contextual"
# Fields a fact cannot do without (a Wikidata id is not needed to ask or grade anything).
NOT_EMPTY = tuple(c for c in REQUIRED_COLUMNS if c != "item_id")
N_OPTIONS = 1 + rules.N_DISTRACTORS
TASKS = ("completion", "contextual", *release.CLOSED_BOOK, *(f"mc_{kind}" for kind in release.CLOSED_BOOK))
# Each task's prompt, gold and option columns in the published file.
TASK_COLUMNS = {
    "completion": ("completion", "object", None),
    "contextual": (CONTEXTUAL, "direct_answer", None),
    "direct": ("direct", "direct_answer", None),
    "direct_natural": ("direct_natural", "direct_answer", None),
    "reverse": ("reverse", "reverse_answer", None),
    "reverse_natural": ("reverse_natural", "reverse_answer", None),
    "mc_direct": ("direct", "direct_answer", "direct_choices"),
    "mc_direct_natural": ("direct_natural", "direct_answer", "direct_choices"),
    "mc_reverse": ("reverse", "reverse_answer", "reverse_choices"),
    "mc_reverse_natural": ("reverse_natural", "reverse_answer", "reverse_choices"),
}
# Where a task's question came from: the file, or the project's rule for a missing contextual column.
RELEASE_ORIGIN = "release"
# The paper's popularity window, February 2023 to June 2025: ``gbc`` over it as a monthly
# mean, the unit ``popularity_report`` reads (the tiers only rank, so the unit is cosmetic).
POPULARITY_MONTHS = 29

PAGES_SCHEMA = {
    "page_id": pl.String,
    "title": pl.String,
    "item_id": pl.String,
    "gbc": pl.Int64,
    "months": pl.Int32,
    "mean_monthly_views": pl.Float64,
}
# A rejected record: its fact id (None when the row is too broken to tell) and its line.
REJECTS = Rejects(("fact_id", "line"))
STEP = "release"
REASONS = frozenset(
    {"malformed_record", "missing_field", "duplicate_id", "unknown_type", "bad_options", "answer_in_question"}
)


def _options(raw: str, gold: str) -> tuple[list[str] | None, str | None, str | None]:
    """``(options with the gold first, reason, detail)`` of a published options literal; the
    options are None and the reason given when the literal does not parse, or is not four
    distinct options of which one is the gold (the same string, or the same after
    ``normalize``)."""
    value, problem = python_literal(raw.strip())
    if problem is not None:
        return None, "malformed_record", f"options are {problem}: {raw[:120]!r}"
    if not isinstance(value, (list, tuple)) or not all(isinstance(o, str) for o in value):
        return None, "malformed_record", f"options are not a list of strings: {raw[:120]!r}"
    options = [" ".join(o.split()) for o in value]
    if len(options) != N_OPTIONS:
        return None, "bad_options", f"{len(options)} options (needs {N_OPTIONS}): {options}"
    at = next((i for i, o in enumerate(options) if o == gold), None)
    if at is None:
        at = next((i for i, o in enumerate(options) if normalize(o) == normalize(gold)), None)
    if at is None:
        return None, "bad_options", f"the gold {gold!r} is not among the options {options}"
    ordered = [gold, *options[:at], *options[at + 1 :]]
    if len({o.lower() for o in ordered}) != len(ordered):
        return None, "bad_options", f"an option is repeated: {options}"
    return ordered, None, None


def _object_type(raw: str) -> str:
    return raw.strip().upper().replace(" ", "_").replace("-", "_")


def _gbc(raw: str) -> int | None:
    """The popularity count, written as an integer or (by a float column) as ``48210.0``."""
    try:
        value = float(raw.replace(",", ""))
    except ValueError:
        return None
    return int(value) if value.is_integer() and value >= 0 else None


def fact_tasks(fact: dict[str, str]) -> tuple[list[dict], str | None, str | None]:
    """The ten benchmark rows of one published fact (a record with every required field),
    or ``([], reason, detail)`` when it cannot be a benchmark fact."""
    etype = _object_type(fact["object_type"])
    if etype not in rules.ENTITY_TYPES:
        return (
            [],
            "unknown_type",
            f"object_type {fact['object_type']!r} is not one of the {len(rules.ENTITY_TYPES)} types",
        )
    options = {}
    for column, gold in (("direct_choices", fact["direct_answer"]), ("reverse_choices", fact["reverse_answer"])):
        options[column], reason, detail = _options(fact[column], gold)
        if reason:
            return [], reason, f"{column}: {detail}"
    leaks = [kind for kind in release.CLOSED_BOOK if rules.answer_leaks(fact[kind], fact[TASK_COLUMNS[kind][1]])]
    if leaks:
        return [], "answer_in_question", f"{', '.join(leaks)} names its answer"
    contextual = fact.get(CONTEXTUAL)
    origin = {t: RELEASE_ORIGIN for t in TASKS}
    if contextual is None:
        contextual, origin["contextual"] = steps.contextual_question(fact["completion"], fact["direct"]), "rules"
    prompts = {**fact, CONTEXTUAL: contextual}
    common = {
        "fact_id": fact["fact_id"],
        "page_id": sources.page_id(fact["page_title"]),
        "category": fact["category"],
        "type_group": rules.type_group(etype),
        "subject": fact["subject"],
        "object": fact["object"],
    }
    rows = []
    for task in TASKS:
        question, answer, choices = TASK_COLUMNS[task]
        rows.append(
            {
                **common,
                "task": task,
                "question": prompts[question],
                "answer": fact[answer],
                "options": options[choices] if choices else None,
                "question_origin": origin[task],
                "options_origin": RELEASE_ORIGIN if choices else None,
            }
        )
    return rows, None, None


def parse_release(text: str, source: str = FILE_NAME) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """``(benchmark, pages, rejects)`` from the text of a published ``wikiprofile.csv``:
    the benchmark in ``release.BENCHMARK_SCHEMA``, the popularity of each page of a loaded
    fact (``PAGES_SCHEMA``: ``mean_monthly_views`` is what ``popularity_report`` reads from
    ``source_pages``), and a reject per record that cannot be a fact. A header without the
    required columns is an error: the file is not this release."""
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""))
    header = _header(reader, source)
    wanted = [*REQUIRED_COLUMNS, *([CONTEXTUAL] if CONTEXTUAL in header else [])]
    where = {c: header.index(c) for c in wanted}
    rows, pages, rejects, seen = [], {}, [], {}
    for start, fields in _records(reader, source):
        at = f"{source} line {start}"
        if len(fields) != len(header):
            rejects.append(
                REJECTS.row(
                    None,
                    start,
                    STEP,
                    "malformed_record",
                    f"{at}: {len(fields)} fields, the header has {len(header)}",
                    fields,
                )
            )
            continue
        fact = {c: fields[i].strip() for c, i in where.items()}
        fid = fact["fact_id"] or None
        empty = [c for c in wanted if c in NOT_EMPTY + (CONTEXTUAL,) and not fact[c]]
        if fid in seen:
            rejects.append(
                REJECTS.row(
                    fid, start, STEP, "duplicate_id", f"{at}: fact_id {fid} first seen on line {seen[fid]}", fact
                )
            )
            continue
        if fid is not None:
            seen[fid] = start
        if empty:
            rejects.append(REJECTS.row(fid, start, STEP, "missing_field", f"{at}: empty {', '.join(empty)}", fact))
            continue
        gbc = _gbc(fact["gbc"])
        if gbc is None:
            rejects.append(
                REJECTS.row(fid, start, STEP, "malformed_record", f"{at}: gbc {fact['gbc']!r} is not a count", fact)
            )
            continue
        tasks, reason, detail = fact_tasks(fact)
        if reason:
            rejects.append(REJECTS.row(fid, start, STEP, reason, f"{at}: {detail}", fact))
            continue
        rows += tasks
        pid = tasks[0]["page_id"]
        # A page's facts share its count; the largest stands for the page if they do not.
        if pid not in pages or gbc > pages[pid]["gbc"]:
            pages[pid] = {
                "page_id": pid,
                "title": fact["page_title"],
                "item_id": fact["item_id"] or None,
                "gbc": gbc,
                "months": POPULARITY_MONTHS,
                "mean_monthly_views": gbc / POPULARITY_MONTHS,
            }
    return (
        pl.DataFrame(rows, schema=release.BENCHMARK_SCHEMA),
        pl.DataFrame(list(pages.values()), schema=PAGES_SCHEMA),
        REJECTS.frame(rejects),
    )


def _header(reader, source: str) -> list[str]:
    """The header's column names; an error where it lacks a required column."""
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise ValueError(f"{source} is empty: expected a header with {', '.join(REQUIRED_COLUMNS)}") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise ValueError(f"{source} is not the published WikiProfile file: its header lacks {', '.join(missing)}")
    return header


def _records(reader, source: str) -> Iterator[tuple[int, list[str]]]:
    """Each non-empty record after the header with the line it starts on (a quoted field may
    span lines); text that is not CSV is an error."""
    line = reader.line_num
    while True:
        start = line + 1
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise ValueError(f"{source} line {start}: not CSV ({e})") from e
        line = reader.line_num
        if fields:
            yield start, fields


def load_release(path: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(benchmark, rejects)`` of the published ``wikiprofile.csv`` at ``path`` (a local
    path, relative to the project root unless absolute, or an ``s3://`` URI), or of the
    folder that holds it."""
    benchmark, _, rejects = parse_release(*read_release(path))
    return benchmark, rejects


def load_release_pages(path: str) -> pl.DataFrame:
    """The pages of the release's loaded facts with their popularity (``PAGES_SCHEMA``)."""
    return parse_release(*read_release(path))[1]


def read_release(path: str) -> tuple[str, str]:
    """The release's text and the file it came from (what :func:`parse_release` takes)."""
    uri = project_path(path)
    if not uri.endswith(".csv"):
        uri = uri.rstrip("/") + "/" + FILE_NAME
    return decode(read_bytes(uri), uri), uri
