"""Checking and scoring a RETECO Track 2 submission (run and generation files) under the
rules written in :mod:`assets.eval.recor.reteco.rules`, which re-exports every name here:
import them from there."""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Collection, Iterable, Mapping

import polars as pl

from assets.common.metadata import md_table
from assets.common.records import json_lines
from assets.eval.metrics import grouped_per_question_metrics
from assets.eval.recor.reteco.rules import (
    DEPTHS,
    DIMENSIONS,
    METRIC_NAMES,
    METRICS,
    OFFICIAL,
    PROJECT_QID,
    TASK_QID,
    TURN_SCHEMA,
    Targets,
    project_qid,
    split_qid,
    to_task_qid,
)
from assets.eval.uncertainty import UncertaintySettings, definitions, summarize
from resources.retrieval import trec_order
from resources.retrieval.runs import BadLine, RunLine, numbered_lines, read_run_line
from resources.storage import NotUtf8, utf8_text

# --- Checking a submission ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Problem:
    """One thing wrong with a submitted file: ``line`` (1-based; None for the file as a
    whole), a ``kind``, whether it makes the file unscorable (``fatal``), and what the scorer
    does about it otherwise."""

    line: int | None
    kind: str
    fatal: bool
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line is not None else "file"
        return f"{'ERROR' if self.fatal else 'warning'} {where} [{self.kind}]: {self.message}"


@dataclasses.dataclass
class Checked:
    """A submitted file read under the task's rules: what the scorer will use (``rankings``:
    project qid -> documents best first, or ``answers``: project qid -> answer), the problems
    found, and the counts of what the rules did."""

    source: str
    kind: str
    problems: list[Problem]
    counts: dict[str, int]
    run_id: str | None = None
    rankings: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    answers: dict[str, str] = dataclasses.field(default_factory=dict)
    missing: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.fatal for p in self.problems)

    def summary(self) -> str:
        """What the scorer will do with the file, one line per rule that applied."""
        if not self.ok:
            errors = sum(p.fatal for p in self.problems)
            return f"{self.source}: not scorable, {errors} error{'s' * (errors != 1)}: fix the lines named above"
        said = {
            "turns_scored": "target turns answered",
            "missing_turns": "target turns missing: scored 0",
            "duplicates_removed": "duplicate documents removed after their first occurrence",
            "unknown_documents": "unknown documents discarded",
            "unknown_turns": "lines of query ids that are no target turn: ignored",
            "order_disagreements": "turns whose rank column disagrees with their scores: ordered by score",
            "project_style_ids": "lines with query ids as <conversation>_turn_<n>: read here, not by the task's scorer",
        }
        lines = [f"{self.source}: scorable ({self.kind}{', run ' + self.run_id if self.run_id else ''})"]
        lines += [f"  {self.counts[k]:,} {text}" for k, text in said.items() if self.counts.get(k)]
        return "\n".join(lines)


# What a warning of each kind counts in :attr:`Checked.counts`.
COUNTED = {
    "duplicate": "duplicates_removed",
    "unknown_document": "unknown_documents",
    "unknown_turn": "unknown_turns",
    "order": "order_disagreements",
    "q0": "not_q0",
    "empty_answer": "empty_answers",
}


class _Problems(list):
    def add(self, line: int | None, kind: str, message: str, fatal: bool = False) -> None:
        self.append(Problem(line, kind, fatal, message))

    def counts(self, found: Mapping[str, object], missing: list[str]) -> dict[str, int]:
        """What the rules did: the warnings of each counted kind, the turns found and missing."""
        counts = collections.Counter(COUNTED[p.kind] for p in self if p.kind in COUNTED)
        return {**counts, "turns_scored": len(found), "missing_turns": len(missing)}

    def missing(
        self, targets: Targets, found: Mapping[str, object], lacking: str, outcome: str, listed: Collection[str] = ()
    ) -> list[str]:
        """The target turns not in ``found``, named in one problem; those among ``listed``
        (turns the file has lines for, every one naming an unknown document) in another."""
        missing = [q for q in targets.turns["qid"] if q not in found]
        for turns, have in (
            ([q for q in missing if q not in listed], lacking),
            ([q for q in missing if q in listed], "lines naming unknown documents only, all discarded"),
        ):
            if turns:
                shown = ", ".join(to_task_qid(q) for q in turns[:10])
                self.add(
                    None,
                    "missing_turn",
                    f"{len(turns)} target turns have {have} ({shown}{', ...' if len(turns) > 10 else ''}); {outcome}",
                )
        return missing

    def id_style(self, lines: list[int], rewrite: str) -> dict[str, int]:
        """One warning for the ``lines`` whose query ids are in the project's style, which the
        task's scorer does not read; their count, for :attr:`Checked.counts`."""
        if not lines:
            return {}
        self.add(
            lines[0],
            "id_style",
            f"{len(lines)} lines write query ids as <conversation>_turn_<n>; this project reads them, "
            f"the task's scorer reads <conversation>#turn<n> only: {rewrite}",
        )
        return {"project_style_ids": len(lines)}


_BOM = b"\xef\xbb\xbf"


def _decode(data: bytes, source: str, problems: _Problems) -> str | None:
    """The file's text; a byte that is not UTF-8 is an error naming its line. A leading byte
    order mark is dropped with a warning."""
    if data.startswith(_BOM):
        problems.add(1, "encoding", "starts with a UTF-8 byte order mark; it is ignored")
        data = data[3:]
    try:
        return utf8_text(data, source)
    except NotUtf8 as e:
        problems.add(e.line, "encoding", e.detail, fatal=True)
        return None


def shown(value: object, limit: int = 60) -> str:
    """``value`` quoted for a message, cut after ``limit`` characters: a line may be megabytes."""
    if isinstance(value, str):
        return repr(value if len(value) <= limit else value[:limit] + "...")
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _target_turn(
    problems: _Problems, targets: Targets, number: int, qid: str, what: str, project_ids: list[int]
) -> str | None:
    """The target turn (project id) a line's ``qid`` names; None, with a warning, where it
    names none. A line naming a turn as ``<conversation>_turn_<n>``, which only this project
    reads, joins ``project_ids``."""
    if TASK_QID.match(qid) is None and PROJECT_QID.match(qid) is not None:
        project_ids.append(number)
    turn = project_qid(qid)
    if turn in targets.gold:
        return turn
    if split_qid(qid) is None:
        problems.add(
            number,
            "unknown_turn",
            f"{what} {shown(qid)} is not a RECOR query id (<conversation>#turn<n>); the line is ignored",
        )
    else:
        problems.add(
            number, "unknown_turn", f"{what} {shown(qid)} is no target turn of the release; the line is ignored"
        )
    return None


# The checker's words for a line that is no run line (``resources.retrieval.runs.read_run_line``,
# the loaders' reading too), quoting what it found.
BAD_LINE = {
    "columns": "{} columns; a run line is six: query_id Q0 doc_id rank score run_id",
    "rank": "rank {} is not a positive integer",
    "score": "score {} is not a finite number",
}


def _bad_line(problems: _Problems, bad: BadLine) -> None:
    found = bad.found if bad.column == "columns" else shown(bad.found)
    problems.add(bad.number, bad.column, BAD_LINE[bad.column].format(found), fatal=True)


def _rankings(kept: dict[str, dict[str, tuple[float, int, int]]], problems: _Problems) -> dict[str, list[str]]:
    """Each turn's kept documents ordered by score (the scorer's order), with a warning where
    the rank column gives another order."""
    rankings = {}
    for turn, docs in kept.items():
        ordered = [d for d, _ in trec_order({d: s for d, (s, _, _) in docs.items()})]
        by_rank = sorted(docs, key=lambda d: (docs[d][1], docs[d][2]))
        if by_rank != ordered:
            line = next(docs[a][2] for a, b in zip(by_rank, ordered) if a != b)
            problems.add(
                line,
                "order",
                f"{to_task_qid(turn)}: the rank column and the scores give different "
                "orders; the scorer orders by score (ties by document id, descending)",
            )
        rankings[turn] = ordered
    return rankings


def check_run(data: bytes, source: str, targets: Targets) -> Checked:
    """A TREC run file read under the task's rules (module docstring). Errors, which make the
    file unscorable: not UTF-8, a line that is not six columns, a rank that is not a positive
    integer, a score that is not a finite number, more than one run id. Warnings, each
    naming its line and what the scorer does: a second column other than ``Q0`` (read
    anyway), a query id that is no target turn (ignored), a document repeated for a turn
    (removed after its first occurrence), a document outside the official corpus
    (discarded), a rank column that disagrees with the scores (ordered by score), query ids
    as ``<conversation>_turn_<n>`` (read, though the task's scorer does not), a target turn
    with no line or only unknown documents (scored 0). Lines end at ``\\n`` only, and are read
    as the project's loaders read a run (``resources.retrieval.runs.read_run_line``)."""
    problems = _Problems()
    text = _decode(data, source, problems)
    if text is None:
        return Checked(source, "run", list(problems), {})
    kept: dict[str, dict[str, tuple[float, int, int]]] = {}
    first_line: dict[tuple[str, str], int] = {}
    run_ids: dict[str, int] = {}
    project_ids: list[int] = []
    for number, line in numbered_lines(text):
        read = read_run_line(source, number, line, positive_rank=True)
        if isinstance(read, BadLine):
            _bad_line(problems, read)
        if not isinstance(read, RunLine):
            continue
        qid, doc = read.qid, read.docid
        run_ids.setdefault(read.run_id, number)
        if read.q0 != "Q0":
            problems.add(number, "q0", f"second column is {shown(read.q0)}, not Q0; read anyway")
        if (turn := _target_turn(problems, targets, number, qid, "query id", project_ids)) is None:
            continue
        if (turn, doc) in first_line:
            problems.add(
                number,
                "duplicate",
                f"document {shown(doc)} again for {qid} (first on line {first_line[turn, doc]}); removed",
            )
            continue
        first_line[turn, doc] = number
        if doc not in targets.documents:
            problems.add(number, "unknown_document", f"document {shown(doc)} is not in the official corpus; discarded")
            continue
        kept.setdefault(turn, {})[doc] = (read.score, read.rank, number)
    if len(run_ids) > 1:
        named = ", ".join(f"{shown(r)} (from line {n})" for r, n in list(run_ids.items())[:5])
        problems.add(None, "run_id", f"{len(run_ids)} run ids ({named}); a run file holds one run", fatal=True)
    style = problems.id_style(project_ids, "`python -m pipelines.reteco export` rewrites the file")
    rankings = _rankings(kept, problems)
    missing = problems.missing(targets, rankings, "no line", "each scores 0", {turn for turn, _ in first_line})
    return Checked(
        source,
        "run",
        list(problems),
        {**problems.counts(rankings, missing), **style},
        next(iter(run_ids), None),
        rankings=rankings,
        missing=missing,
    )


def check_generation(data: bytes, source: str, targets: Targets) -> Checked:
    """A generation file (UTF-8 JSONL, one object per line with ``turn_id``, a query id in
    either style, and ``answer``, a string) read under the task's rules. Errors: not UTF-8, a
    line that is not a JSON object, a missing or non-string ``turn_id`` or ``answer``, a
    turn answered twice. Warnings: a turn that is no target (ignored), an empty answer
    (judged as it is), a ``turn_id`` as ``<conversation>_turn_<n>`` (read, though the task's
    scorer does not), a target turn with no answer (0 on every dimension). Lines are read as
    the project's loaders read JSON Lines (``assets.common.records.json_lines``): they end at
    a line break only (U+2028 is part of its line), and one nested too deeply is an error."""
    problems = _Problems()
    text = _decode(data, source, problems)
    if text is None:
        return Checked(source, "generation", list(problems), {})
    answers: dict[str, str] = {}
    first: dict[str, int] = {}
    project_ids: list[int] = []
    for number, record, why in json_lines(data.removeprefix(_BOM)):
        if why is not None:
            problems.add(number, "json", why, fatal=True)
            continue
        if not isinstance(record, dict):
            problems.add(
                number, "json", f"a JSON {type(record).__name__}, not an object with turn_id and answer", fatal=True
            )
            continue
        turn_id, answer = record.get("turn_id"), record.get("answer")
        if not isinstance(turn_id, str):
            problems.add(
                number,
                "turn_id",
                "turn_id is missing or not a string; write the query id, "
                "<conversation>#turn<n>" + (f" (got {shown(turn_id)})" if turn_id is not None else ""),
                fatal=True,
            )
            continue
        if not isinstance(answer, str):
            problems.add(number, "answer", f"answer of {shown(turn_id)} is missing or not a string", fatal=True)
            continue
        if (turn := _target_turn(problems, targets, number, turn_id, "turn_id", project_ids)) is None:
            continue
        if turn in first:
            problems.add(
                number, "duplicate", f"{shown(turn_id)} answered again (first on line {first[turn]})", fatal=True
            )
            continue
        first[turn] = number
        if not answer.strip():
            problems.add(number, "empty_answer", f"{shown(turn_id)}: the answer is empty; it is judged as it is")
        answers[turn] = answer
    style = problems.id_style(project_ids, "write each turn_id as <conversation>#turn<n>")
    missing = problems.missing(targets, answers, "no answer", "each scores 0 on every dimension")
    return Checked(
        source,
        "generation",
        list(problems),
        {**problems.counts(answers, missing), **style},
        answers=answers,
        missing=missing,
    )


# --- Scores -------------------------------------------------------------------------------


def run_scores(checked: Checked, targets: Targets, run: str | None = None) -> pl.DataFrame:
    """Per target turn of a scorable run: nDCG@10 (binary), MAP@10, Recall@10 and MRR (ranx;
    a missing turn scores 0), with the turn's domain and depth; ``run`` names it (the file's
    run id by default)."""
    return score_runs([(run or checked.run_id or checked.source, checked, targets)])


def score_runs(runs: Iterable[tuple[str, Checked, Targets]]) -> pl.DataFrame:
    """:func:`run_scores` of several (name, checked run, targets), sharing ranx evaluations
    (:func:`grouped_per_question_metrics`): ranx costs about two seconds a call before the
    first line, and a report scores a hundred runs (retrievers x strategies x domains). Each
    run's query ids and targets are its own; two runs of one name would be one row of the
    tables, and are refused."""
    rankings, qrels, turns, names = [], [], [], collections.Counter()
    for n, (name, checked, targets) in enumerate(runs):
        if not checked.ok:
            raise ValueError(checked.summary())
        names[name] += 1
        rankings += [(n, q, d, rank) for q, docs in checked.rankings.items() for rank, d in enumerate(docs, start=1)]
        qrels.append(targets.qrels().with_columns(pl.lit(n, dtype=pl.UInt32).alias("_run")))
        turns.append(targets.turns.with_columns(pl.lit(name).alias("run"), pl.lit(n, dtype=pl.UInt32).alias("_run")))
    if shared := [f"{n} runs are named {name!r}" for name, n in names.items() if n > 1]:
        raise ValueError(f"{'; '.join(shared)}: name each run once, or their turns are pooled in one row")
    if not turns:
        return pl.DataFrame(schema={**TURN_SCHEMA, "run": pl.String, **{m: pl.Float64 for m in METRICS}})
    frame = pl.DataFrame(
        rankings,
        orient="row",
        schema={"_run": pl.UInt32, "question_id": pl.String, "passage_id": pl.String, "rank": pl.Int32},
    )
    del rankings
    values = grouped_per_question_metrics(pl.concat(qrels), frame, ["_run"], METRICS).rename({"question_id": "qid"})
    # a run with no line for any target turn has no group: its turns score 0
    return (
        pl.concat(turns)
        .join(values, on=["_run", "qid"], how="left", maintain_order="left")
        .with_columns(pl.col(m).fill_null(0.0) for m in METRICS)
        .drop("_run")
    )


def official_table(scores: pl.DataFrame) -> pl.DataFrame:
    """One row per run: the official nDCG@10 and the diagnostics, each the mean over target
    turns (a missing turn's 0 included), and the turns counted."""
    return (
        scores.group_by("run")
        .agg(pl.len().alias("turns"), *(pl.col(m).mean() for m in METRICS))
        .sort(OFFICIAL, "run", descending=[True, False])
        .rename(METRIC_NAMES)
    )


def domain_table(scores: pl.DataFrame, metric: str = OFFICIAL) -> pl.DataFrame:
    """``metric`` per run and domain (the mean over the domain's target turns): a diagnostic,
    not the ranking."""
    return scores.pivot(on="run", index="domain", values=metric, aggregate_function="mean", sort_columns=True).sort(
        "domain"
    )


def depth_table(scores: pl.DataFrame, metric: str = OFFICIAL) -> pl.DataFrame:
    """``metric`` per run and conversation depth (T1..T4, T5+), with the turns in each group."""
    by = scores.pivot(on="run", index="depth", values=metric, aggregate_function="mean", sort_columns=True)
    counts = scores.group_by("depth").agg((pl.len() // scores["run"].n_unique()).alias("turns"))
    order = pl.DataFrame({"depth": DEPTHS})
    return order.join(counts, on="depth", how="inner").join(by, on="depth", how="left")


# The diagnostic tables of every metric, by what they group: name, title and table function.
BREAKDOWNS = {"by_domain": ("per domain", domain_table), "by_depth": ("by conversation depth", depth_table)}


def breakdown_tables(scores: pl.DataFrame) -> dict[str, tuple[str, pl.DataFrame]]:
    """Every metric per domain and by conversation depth (diagnostics, not the ranking), each
    with its title: ``by_domain`` and ``by_depth`` hold nDCG@10, ``by_domain_<metric>`` and
    ``by_depth_<metric>`` MAP@10, Recall@10 and MRR (ranx names)."""
    return {
        grouping if metric == OFFICIAL else f"{grouping}_{metric}": (
            f"{METRIC_NAMES[metric]} {title} (diagnostic)",
            table(scores, metric),
        )
        for grouping, (title, table) in BREAKDOWNS.items()
        for metric in METRICS
    }


def breakdown_markdown(scores: pl.DataFrame) -> dict[str, str]:
    """:func:`breakdown_tables` as markdown for an asset's metadata: ``by_domain`` and
    ``by_depth``, each every metric's table under its title, nDCG@10's first."""
    tables = breakdown_tables(scores)
    return {
        grouping: "\n\n".join(
            f"{title}\n\n{md_table(table, 20)}"
            for name, (title, table) in tables.items()
            if name == grouping or name.startswith(f"{grouping}_")
        )
        for grouping in BREAKDOWNS
    }


# How the intervals' definitions name a run and its figures.
RUN_KEY = "a run (retriever/strategy)"
TURN_MEAN = "the mean over the target turns (a turn the run missed scores 0)"


def _turns(scores: pl.DataFrame) -> pl.DataFrame:
    """Per-turn scores as the intervals read them: each turn named with its domain (two domains
    may number their conversations alike), the metrics by the tables' names."""
    return scores.with_columns(pl.format("{}/{}", "domain", "qid").alias("item")).rename(METRIC_NAMES)


def official_uncertainty(scores: pl.DataFrame, settings: UncertaintySettings) -> tuple[pl.DataFrame, dict]:
    """Issue 48's intervals and tests of :func:`official_table`, with their columns'
    definitions: each run's nDCG@10 and diagnostics over the target turns, every run
    compared with the best."""
    long = summarize(_turns(scores), ["run"], "item", [METRIC_NAMES[m] for m in METRICS], settings)
    return long, {
        **definitions({"run": f"{RUN_KEY}, compared with the best run"}, settings, "target turns"),
        "metric": f"{METRIC_NAMES[OFFICIAL]} (official) or a diagnostic",
        "value": f"the figure as the official table reports it, {TURN_MEAN}",
    }


def uncertainty_tables(scores: pl.DataFrame, settings: UncertaintySettings) -> dict[str, tuple[pl.DataFrame, dict]]:
    """Issue 48's intervals and tests, by the name of the table they belong to, with their
    columns' definitions: ``official`` (:func:`official_uncertainty`) and ``by_domain``
    (nDCG@10 over each domain's target turns, the runs of each domain compared with its best)."""
    official = METRIC_NAMES[OFFICIAL]
    by_domain = summarize(_turns(scores), ["domain", "run"], "item", [official], settings, within=["domain"])
    return {
        "official": official_uncertainty(scores, settings),
        "by_domain": (
            by_domain.sort("domain", "run"),
            {
                **definitions(
                    {"domain": "a RECOR domain", "run": f"{RUN_KEY}, compared with the best run of the domain"},
                    settings,
                    "target turns",
                ),
                "value": f"{official} as by_domain reports it, {TURN_MEAN} of the domain",
            },
        ),
    }


def normalized(score: int | float | None) -> float:
    """A judge's 1-5 score as the task normalizes it, (score - 1) / 4; no score is 0."""
    return 0.0 if score is None else (float(score) - 1.0) / 4.0


def generation_scores(judged: pl.DataFrame, targets: Targets, system: str) -> pl.DataFrame:
    """Per target turn, each dimension's judged 1-5 score normalized (``judged``: ``qid`` in
    either style and one column per dimension, null where the judge gave none); a target
    turn the file did not answer, or a dimension not judged, scores 0."""
    known = {project_qid(r["qid"]): r for r in judged.iter_rows(named=True)}
    rows = []
    for qid in targets.turns["qid"]:
        grade = known.get(qid, {})
        rows.append({"qid": qid, "system": system, **{d: normalized(grade.get(d)) for d in DIMENSIONS}})
    frame = pl.DataFrame(rows, schema={"qid": pl.String, "system": pl.String, **{d: pl.Float64 for d in DIMENSIONS}})
    return targets.turns.join(frame, on="qid")


def generation_table(scores: pl.DataFrame) -> pl.DataFrame:
    """Per system: each dimension's normalized score averaged over the target turns, and
    their macro average over the five dimensions."""
    means = scores.group_by("system").agg(pl.len().alias("turns"), *(pl.col(d).mean() for d in DIMENSIONS))
    return means.with_columns(pl.mean_horizontal(*DIMENSIONS).alias("macro")).sort(
        "macro", "system", descending=[True, False]
    )
