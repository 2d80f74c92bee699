"""RECOR as Track 2 of RETECO (SemEval-2027 Task 1) scores it: the task's query ids, its rules
for run and generation files, and its tables.

The rules, from the task's evaluation page:
- Official retrieval score (sub-tracks 2a and 2c): binary nDCG@10 per target turn (a turn's
  gold documents relevant, every other document not), macro-averaged over the target turns.
  Diagnostics: MAP@10, Recall@10 and MRR, per domain, and by conversation depth T1..T4, T5+.
- Runs are six-column TREC (``query_id Q0 doc_id rank score run_id``). A target turn the run
  misses scores 0; a duplicate document is removed after its first occurrence; an unknown
  document is discarded.
- Query ids are ``<conversation_id>#turn<turn_id>``; the release's own scripts, and this
  project's tables, use ``<conversation_id>_turn_<turn_id>``. Both are read everywhere.
- Generation files are UTF-8 JSONL with ``turn_id`` and ``answer``; five judged dimensions on
  a 1-5 scale, each normalized as (score - 1) / 4, macro-averaged; no composite with retrieval.

Where the page is silent, the project reads it as follows (README, "SemEval-2027 RETECO Track
2"): the target turns are the turns with gold documents (the release's qrels); a run's
documents are ordered as trec_eval orders them (score descending, ties by document id
descending), after duplicates are removed in file order; the official corpus is the union of
the release's documents; MRR has no cut-off; a generation file's ``turn_id`` is a query id in
either style, and a target turn without an answer scores 0 on every dimension.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import re
from collections.abc import Iterable, Mapping

import polars as pl

from assets.eval.metrics import grouped_per_question_metrics
from resources.retrieval import trec_order
from resources.storage import NotUtf8, utf8_text

TASK_QID = re.compile(r"^(?P<conversation>\S+)#turn(?P<turn>[1-9][0-9]*)$")
PROJECT_QID = re.compile(r"^(?P<conversation>\S+)_turn_(?P<turn>[1-9][0-9]*)$")
# ranx names: linear gain, which is binary nDCG on 0/1 labels.
OFFICIAL = "ndcg@10"
DIAGNOSTICS = ["map@10", "recall@10", "mrr"]
METRICS = [OFFICIAL, *DIAGNOSTICS]
METRIC_NAMES = {"ndcg@10": "nDCG@10", "map@10": "MAP@10", "recall@10": "Recall@10", "mrr": "MRR"}
DEPTHS = ["T1", "T2", "T3", "T4", "T5+"]
DIMENSIONS = ["correctness", "completeness", "relevance", "coherence", "faithfulness"]
TURN_SCHEMA = {
    "qid": pl.String,
    "task_qid": pl.String,
    "domain": pl.String,
    "conversation_id": pl.String,
    "turn_id": pl.Int32,
    "depth": pl.String,
}


def task_qid(conversation_id: str, turn_id: int) -> str:
    """The task's query id, ``<conversation_id>#turn<turn_id>``."""
    return f"{conversation_id}#turn{turn_id}"


def split_qid(qid: str) -> tuple[str, int] | None:
    """``(conversation_id, turn_id)`` of a query id in either style; None for anything else."""
    match = TASK_QID.match(qid) or PROJECT_QID.match(qid)
    return (match["conversation"], int(match["turn"])) if match else None


def project_qid(qid: str) -> str:
    """The project's id (``<conversation>_turn_<n>``) of a query id in either style; an id
    in neither style is returned as it is (it names no turn, and is reported as unknown)."""
    parts = split_qid(qid)
    return f"{parts[0]}_turn_{parts[1]}" if parts else qid


def to_task_qid(qid: str) -> str:
    """The task's id of a query id in either style."""
    parts = split_qid(qid)
    if parts is None:
        raise ValueError(f"{qid!r} is not a RECOR query id (<conversation>#turn<n> or <conversation>_turn_<n>)")
    return task_qid(*parts)


def depth(turn_id: int) -> str:
    """The conversation-depth group of a turn: T1..T4, then T5+."""
    return f"T{turn_id}" if turn_id < 5 else "T5+"


def task_qid_expr() -> pl.Expr:
    """:func:`task_qid` of a table's ``conversation_id`` and ``turn_id``."""
    return pl.format("{}#turn{}", "conversation_id", "turn_id")


def depth_expr() -> pl.Expr:
    """:func:`depth` of a table's ``turn_id``."""
    return pl.when(pl.col("turn_id") < 5).then(pl.format("T{}", "turn_id")).otherwise(pl.lit("T5+"))


@dataclasses.dataclass(frozen=True)
class Targets:
    """What a submission is checked and scored against: the target turns (``TURN_SCHEMA``,
    project ids), each one's gold documents, and the official corpus's document ids."""

    turns: pl.DataFrame
    gold: Mapping[str, frozenset[str]]
    documents: frozenset[str]

    @classmethod
    def from_tables(cls, benchmark: pl.DataFrame, documents: Iterable[str]) -> Targets:
        """From release turns (``qid``, ``domain``, ``conversation_id``, ``turn_id``,
        ``gold_doc_ids``); a turn without gold documents is no target: no metric scores it."""
        scored = (
            benchmark.filter(pl.col("gold_doc_ids").list.len() > 0)
            .with_columns(pl.col("qid").map_elements(project_qid, return_dtype=pl.String))
            .sort("domain", "conversation_id", "turn_id")
        )
        # A task id names a conversation and a turn, not a domain: two domains holding one
        # conversation id (BRIGHT numbers its questions per domain) cannot share a run file.
        shared = scored.group_by("qid").agg(pl.col("domain").unique().sort()).filter(pl.col("domain").list.len() > 1)
        if shared.height:
            row = shared.row(0)
            raise ValueError(
                f"{shared.height} query ids are turns of several domains (e.g. {to_task_qid(row[0])} in "
                f"{', '.join(row[1])}): check and score those domains one at a time"
            )
        turns = scored.select(
            "qid",
            task_qid_expr().alias("task_qid"),
            "domain",
            "conversation_id",
            pl.col("turn_id").cast(pl.Int32),
            depth_expr().alias("depth"),
        )
        gold = {q: frozenset(g) for q, g in scored.select("qid", "gold_doc_ids").iter_rows()}
        return cls(turns, gold, frozenset(documents))

    def qrels(self) -> pl.DataFrame:
        """The targets' qrels (``question_id`` in project ids, ``passage_id``, ``label`` 1)."""
        rows = [(q, d, 1) for q in self.turns["qid"] for d in sorted(self.gold[q])]
        return pl.DataFrame(
            rows, schema={"question_id": pl.String, "passage_id": pl.String, "label": pl.Int32}, orient="row"
        )


def release_targets(root: str, domains: Iterable[str] | None = None, log=None) -> Targets:
    """The targets of a RECOR release in the published layout under ``root`` (a folder or
    ``s3://`` prefix): every domain it holds, or ``domains``. One domain's documents are
    read at a time and only their ids kept."""
    from assets.recor.published import load_release, release_domains

    held = release_domains(root) if domains is None else list(domains)
    if not held:
        raise FileNotFoundError(
            f"no RECOR domain under {root}: expected data/benchmark/<domain>_benchmark.jsonl and "
            "data/corpus/<domain>_documents.jsonl"
        )
    turns, documents = [], set()
    for domain in held:
        release = load_release(root, domain)
        turns.append(release.benchmark.select("qid", "domain", "conversation_id", "turn_id", "gold_doc_ids"))
        documents.update(release.corpus["doc_id"])
        if log:
            log(
                f"{domain}: {release.benchmark.height:,} turns, {release.corpus.height:,} documents, "
                f"{release.rejects.height:,} records rejected by the loader"
            )
    return Targets.from_tables(pl.concat(turns), documents)


def qrels_text(targets: Targets) -> str:
    """The targets' qrels as the task writes them: ``<conversation_id>#turn<n> 0 <doc_id> 1``."""
    task = dict(targets.turns.select("qid", "task_qid").iter_rows())
    return "".join(f"{task[q]} 0 {d} {label}\n" for q, d, label in targets.qrels().iter_rows())


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

    def missing(self, targets: Targets, found: Mapping[str, object], lacking: str, outcome: str) -> list[str]:
        """The target turns not in ``found``, named in one problem."""
        missing = [q for q in targets.turns["qid"] if q not in found]
        if missing:
            shown = ", ".join(to_task_qid(q) for q in missing[:10])
            self.add(
                None,
                "missing_turn",
                f"{len(missing)} target turns have {lacking} ({shown}"
                f"{', ...' if len(missing) > 10 else ''}); {outcome}",
            )
        return missing


def _decode(data: bytes, source: str, problems: _Problems) -> str | None:
    """The file's text; a byte that is not UTF-8 is an error naming its line. A leading byte
    order mark is dropped with a warning."""
    if data.startswith(b"\xef\xbb\xbf"):
        problems.add(1, "encoding", "starts with a UTF-8 byte order mark; it is ignored")
        data = data[3:]
    try:
        return utf8_text(data, source)
    except NotUtf8 as e:
        problems.add(e.line, "encoding", e.detail, fatal=True)
        return None


def _shown(value: str, limit: int = 60) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")


def _unknown_turn(problems: _Problems, number: int, qid: str, what: str) -> None:
    if split_qid(qid) is None:
        problems.add(
            number,
            "unknown_turn",
            f"{what} {_shown(qid)} is not a RECOR query id (<conversation>#turn<n>); the line is ignored",
        )
    else:
        problems.add(
            number, "unknown_turn", f"{what} {_shown(qid)} is no target turn of the release; the line is ignored"
        )


def _run_line(number: int, columns: list[str], problems: _Problems) -> tuple[str, str, str, int, float, str] | None:
    """A run line's six columns with its rank and score read; None, with an error, for a line
    that is not six columns, a rank that is not a positive integer or a score that is not finite."""
    if len(columns) != 6:
        problems.add(
            number,
            "columns",
            f"{len(columns)} columns; a run line is six: query_id Q0 doc_id rank score run_id",
            fatal=True,
        )
        return None
    qid, q0, doc, rank_text, score_text, run_id = columns
    try:
        rank = int(rank_text)
    except ValueError:
        rank = 0
    if rank < 1:
        problems.add(number, "rank", f"rank {_shown(rank_text)} is not a positive integer", fatal=True)
        return None
    try:
        score = float(score_text)
    except ValueError:
        score = math.nan
    if not math.isfinite(score):
        problems.add(number, "score", f"score {_shown(score_text)} is not a finite number", fatal=True)
        return None
    return qid, q0, doc, rank, score, run_id


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
    (discarded), a rank column that disagrees with the scores (ordered by score), a target
    turn with no line (scored 0)."""
    problems = _Problems()
    text = _decode(data, source, problems)
    if text is None:
        return Checked(source, "run", list(problems), {})
    kept: dict[str, dict[str, tuple[float, int, int]]] = {}
    first_line: dict[tuple[str, str], int] = {}
    run_ids: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        columns = line.split()
        if not columns:
            continue
        if (parsed := _run_line(number, columns, problems)) is None:
            continue
        qid, q0, doc, rank, score, run_id = parsed
        run_ids.setdefault(run_id, number)
        if q0 != "Q0":
            problems.add(number, "q0", f"second column is {_shown(q0)}, not Q0; read anyway")
        turn = project_qid(qid)
        if turn not in targets.gold:
            _unknown_turn(problems, number, qid, "query id")
            continue
        if (turn, doc) in first_line:
            problems.add(
                number,
                "duplicate",
                f"document {_shown(doc)} again for {qid} (first on line {first_line[turn, doc]}); removed",
            )
            continue
        first_line[turn, doc] = number
        if doc not in targets.documents:
            problems.add(number, "unknown_document", f"document {_shown(doc)} is not in the official corpus; discarded")
            continue
        kept.setdefault(turn, {})[doc] = (score, rank, number)
    if len(run_ids) > 1:
        named = ", ".join(f"{_shown(r)} (from line {n})" for r, n in list(run_ids.items())[:5])
        problems.add(None, "run_id", f"{len(run_ids)} run ids ({named}); a run file holds one run", fatal=True)
    rankings = _rankings(kept, problems)
    missing = problems.missing(targets, rankings, "no line", "each scores 0")
    return Checked(
        source,
        "run",
        list(problems),
        problems.counts(rankings, missing),
        next(iter(run_ids), None),
        rankings=rankings,
        missing=missing,
    )


def check_generation(data: bytes, source: str, targets: Targets) -> Checked:
    """A generation file (UTF-8 JSONL, one object per line with ``turn_id``, a query id in
    either style, and ``answer``, a string) read under the task's rules. Errors: not UTF-8, a
    line that is not a JSON object, a missing or non-string ``turn_id`` or ``answer``, a
    turn answered twice. Warnings: a turn that is no target (ignored), an empty answer
    (judged as it is), a target turn with no answer (0 on every dimension)."""
    problems = _Problems()
    text = _decode(data, source, problems)
    if text is None:
        return Checked(source, "generation", list(problems), {})
    answers: dict[str, str] = {}
    first: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            problems.add(number, "json", f"not JSON ({e.msg} at column {e.colno})", fatal=True)
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
                "<conversation>#turn<n>" + (f" (got {turn_id!r})" if turn_id is not None else ""),
                fatal=True,
            )
            continue
        if not isinstance(answer, str):
            problems.add(number, "answer", f"answer of {_shown(turn_id)} is missing or not a string", fatal=True)
            continue
        turn = project_qid(turn_id)
        if turn not in targets.gold:
            _unknown_turn(problems, number, turn_id, "turn_id")
            continue
        if turn in first:
            problems.add(
                number, "duplicate", f"{_shown(turn_id)} answered again (first on line {first[turn]})", fatal=True
            )
            continue
        first[turn] = number
        if not answer.strip():
            problems.add(number, "empty_answer", f"{_shown(turn_id)}: the answer is empty; it is judged as it is")
        answers[turn] = answer
    missing = problems.missing(targets, answers, "no answer", "each scores 0 on every dimension")
    return Checked(
        source, "generation", list(problems), problems.counts(answers, missing), answers=answers, missing=missing
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
    run's query ids and targets are its own."""
    rankings, qrels, turns = [], [], []
    for n, (name, checked, targets) in enumerate(runs):
        if not checked.ok:
            raise ValueError(checked.summary())
        rankings += [(n, q, d, rank) for q, docs in checked.rankings.items() for rank, d in enumerate(docs, start=1)]
        qrels.append(targets.qrels().with_columns(pl.lit(n, dtype=pl.UInt32).alias("_run")))
        turns.append(targets.turns.with_columns(pl.lit(name).alias("run"), pl.lit(n, dtype=pl.UInt32).alias("_run")))
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
