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
  project's tables, use ``<conversation_id>_turn_<turn_id>``. Both are read everywhere; a
  submitted file in the project's style is read with a warning, as the task's scorer is not.
- Generation files are UTF-8 JSONL with ``turn_id`` and ``answer``; five judged dimensions on
  a 1-5 scale, each normalized as (score - 1) / 4, macro-averaged; no composite with retrieval.

Where the page is silent, the project reads it as follows (docs/benchmarks/reteco.md, "SemEval-2027 RETECO Track
2"): the target turns are the turns with gold documents (the release's qrels); a run's
documents are ordered as trec_eval orders them (score descending, ties by document id
descending), after duplicates are removed in file order; the official corpus is the union of
the release's documents; MRR has no cut-off; a generation file's ``turn_id`` is a query id in
either style, and a target turn without an answer scores 0 on every dimension.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping

import polars as pl

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
    project ids), each one's gold documents, and the official corpus's document ids.
    ``total`` is the number of target turns in the release files read (turns naming a gold
    document, those the loader rejected included), where the targets were read from a
    release; ``turns`` may hold fewer."""

    turns: pl.DataFrame
    gold: Mapping[str, frozenset[str]]
    documents: frozenset[str]
    total: int | None = None

    @classmethod
    def from_tables(cls, benchmark: pl.DataFrame, documents: Iterable[str], total: int | None = None) -> Targets:
        """From release turns (``qid``, ``domain``, ``conversation_id``, ``turn_id``,
        ``gold_doc_ids``); a turn without gold documents is no target: no metric scores it."""
        scored = (
            benchmark.filter(pl.col("gold_doc_ids").list.len() > 0)
            .with_columns(pl.col("qid").map_elements(project_qid, return_dtype=pl.String))
            .sort("domain", "conversation_id", "turn_id")
        )
        # A task id names a conversation and a turn, not a domain: two domains holding one
        # conversation id (BRIGHT numbers its questions per domain) cannot share a run file.
        shared = (
            scored.group_by("qid")
            .agg(pl.col("domain").unique().sort())
            .filter(pl.col("domain").list.len() > 1)
            .sort("qid")
        )
        if shared.height:
            named = "; ".join(f"{to_task_qid(q)} in {', '.join(d)}" for q, d in shared.head(5).iter_rows())
            domains = sorted({d for ds in shared["domain"] for d in ds})
            raise ValueError(
                f"{shared.height} query ids are turns of several domains ({named}"
                f"{'; ...' if shared.height > 5 else ''}): a run file cannot tell them apart. Check and score "
                f"those domains one at a time: {', then '.join(f'--domain {d}' for d in domains)}"
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
        return cls(turns, gold, frozenset(documents), total)

    def qrels(self) -> pl.DataFrame:
        """The targets' qrels (``question_id`` in project ids, ``passage_id``, ``label`` 1)."""
        rows = [(q, d, 1) for q in self.turns["qid"] for d in sorted(self.gold[q])]
        return pl.DataFrame(
            rows, schema={"question_id": pl.String, "passage_id": pl.String, "label": pl.Int32}, orient="row"
        )

    def coverage(self) -> str:
        """How many of the release's target turns are scored, by domain, and why not all."""
        total = self.turns.height if self.total is None else self.total
        by = ", ".join(f"{d} {n:,}" for d, n in self.turns.group_by("domain", maintain_order=True).len().rows())
        line = (
            f"{self.turns.height:,} of {total:,} target turns in the files read are scored ({by}); "
            f"{len(self.documents):,} documents"
        )
        if total > self.turns.height:
            line += (
                f"; {total - self.turns.height:,} turns of the release files name gold documents but are no target: "
                "the loader rejected their conversation, or their gold documents (the rejects above say which)"
            )
        return line


class ReleaseError(ValueError):
    """A release that cannot be scored as asked; the message names the files and what to do."""


def release_targets(root: str, domains: Iterable[str] | None = None, log=None) -> Targets:
    """The targets of a RECOR release in the published layout under ``root`` (a folder or
    ``s3://`` prefix): every domain it holds, or ``domains``. ``log`` gets the files read
    for each domain and each file of the release left unread. With no ``domains``, a file
    that no domain reads is an error: its turns would drop out of the score unseen. One
    domain's documents are read at a time and only their ids kept."""
    from assets.common.records import project_path
    from assets.partitions import DOMAINS
    from assets.recor.published import partition_key, read_release, release_contents
    from assets.recor.release import release_name

    say, base = log or (lambda line: None), project_path(root)
    contents = release_contents(root)
    unread = "".join(f"\n  {f} ({why})" for f, why in contents.unread.items())
    if not contents.files:
        raise FileNotFoundError(
            f"no RECOR domain under {base}: expected data/benchmark/<domain>_benchmark.jsonl and "
            "data/corpus/<domain>_documents.jsonl" + (f"; not read:{unread}" if unread else "")
        )
    if domains is None and unread:
        raise ReleaseError(
            f"{len(contents.unread)} file{'s' * (len(contents.unread) != 1)} under {base} would not be read:"
            f"{unread}\nRename each to its "
            f"domain's name ({', '.join(release_name(d) for d in DOMAINS)}; any case), remove it, or score "
            f"the domains the release holds with --domain ({', '.join(contents.files)})"
        )
    asked = list(contents.files) if domains is None else list(dict.fromkeys(partition_key(d) for d in domains))
    absent = [d for d in asked if d not in contents.files]
    if absent:
        raise FileNotFoundError(
            f"the release under {base} holds no {', '.join(absent)}; it holds {', '.join(contents.files)}"
        )
    if unread:
        say(f"not read:{unread}")
    if others := [d for d in contents.files if d not in asked]:
        say(f"not read: the files of {', '.join(others)} (not among the domains asked for)")
    turns, documents, total = [], set(), 0
    for domain in asked:
        bench, docs = contents.files[domain]
        release = read_release(domain, bench, docs)
        if not release.benchmark.height:
            why = "; ".join(release.rejects["detail"].head(3))
            raise ReleaseError(
                f"no turn of {domain} could be read from {bench}{': ' + why if why else ''}. Fix the file, or "
                f"name the other domains with --domain"
            )
        turns.append(release.benchmark.select("qid", "domain", "conversation_id", "turn_id", "gold_doc_ids"))
        documents.update(release.corpus["doc_id"])
        total += release.gold_turns
        say(
            f"{domain}: {release.benchmark.height:,} turns, {release.corpus.height:,} documents, "
            f"{release.rejects.height:,} records rejected by the loader (read {bench} and {docs})"
        )
    return Targets.from_tables(pl.concat(turns), documents, total)


def qrels_text(targets: Targets) -> str:
    """The targets' qrels as the task writes them: ``<conversation_id>#turn<n> 0 <doc_id> 1``."""
    task = dict(targets.turns.select("qid", "task_qid").iter_rows())
    return "".join(f"{task[q]} 0 {d} {label}\n" for q, d, label in targets.qrels().iter_rows())


# Checking and scoring a submission live in their own module; their names stay importable from here.
from assets.eval.recor.reteco.submissions import (  # noqa: E402, F401
    BREAKDOWNS,
    COUNTED,
    Checked,
    Problem,
    breakdown_markdown,
    breakdown_tables,
    check_generation,
    check_run,
    depth_table,
    domain_table,
    generation_scores,
    generation_table,
    normalized,
    official_table,
    official_uncertainty,
    run_scores,
    score_runs,
    uncertainty_tables,
)
