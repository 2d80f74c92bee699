"""TREC run files: a system's rankings read from files rather than computed, strictly (any
repeat or unknown document an error) or leniently as RETECO Track 2 reads a run."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator, Mapping

from resources.lucene import Hit
from resources.names import check_name
from resources.retrieval.registry import RerankerSpec
from resources.storage import read_text


@dataclasses.dataclass(frozen=True)
class RunLine:
    """One well-formed line of a run file: where it is, its query id, document and score, and
    its other columns (the second, the rank, the run id)."""

    source: str
    number: int
    qid: str
    docid: str
    score: float
    q0: str = "Q0"
    rank: int = 1
    run_id: str = ""

    @property
    def where(self) -> str:
        return f"{self.source} line {self.number}"


@dataclasses.dataclass(frozen=True)
class BadLine:
    """A run file line that is no run line: its number, what is at fault (``columns`` for the
    line as a whole, ``rank``, ``score``), the text found there (for ``columns``, how many),
    and what is wrong, worded without that text."""

    number: int
    column: str
    found: str
    detail: str


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    r"""A run file's lines numbered from 1. A line ends at ``\n`` only, as trec_eval reads it:
    a form feed or U+2028 is whitespace inside its line (``str.splitlines`` would cut there,
    and number every later line wrong)."""
    return enumerate(text.split("\n"), start=1)


def read_run_line(source: str, number: int, line: str, positive_rank: bool = False) -> RunLine | BadLine | None:
    """One line of a TREC run file (``qid Q0 docid rank score tag``, whitespace separated):
    None where it is blank, a :class:`BadLine` where it is not six columns with an integer
    rank (with ``positive_rank``, as RETECO Track 2 reads a run: 1 or more) and a finite
    score. The one reading of a run line, for the loaders and RETECO's checker alike."""
    columns = line.split()
    if not columns:
        return None
    if len(columns) != 6:
        detail = f"expected 6 columns (qid Q0 docid rank score tag), found {len(columns)}"
        return BadLine(number, "columns", str(len(columns)), detail)
    qid, q0, docid, rank_text, score_text, run_id = columns
    try:
        rank = int(rank_text)
    except ValueError:
        return BadLine(number, "rank", rank_text, "column 4 (rank) is not an integer")
    if positive_rank and rank < 1:
        return BadLine(number, "rank", rank_text, "column 4 (rank) is below 1")
    try:
        score = float(score_text)
    except ValueError:
        return BadLine(number, "score", score_text, "column 5 (score) is not a number")
    if not math.isfinite(score):
        return BadLine(number, "score", score_text, "column 5 (score) is not finite")
    return RunLine(source, number, qid, docid, score, q0, rank, run_id)


def run_lines(text: str, source: str, positive_rank: bool = False) -> Iterator[RunLine]:
    """The lines of a TREC run file (:func:`read_run_line`, one line per retrieved
    document), blank lines skipped. A line that is no run line is an error naming the file,
    line and column, never quoting them: a template may point at any file (an ``.env``
    among them)."""
    for number, line in numbered_lines(text):
        read = read_run_line(source, number, line, positive_rank)
        if isinstance(read, BadLine):
            raise ValueError(f"{source} line {number}: {read.detail}")
        if read is not None:
            yield read


def one_run(lines: Iterable[RunLine]) -> Iterator[RunLine]:
    """``lines``, up to the first whose run id (column 6) is not the first line's: an error
    naming both lines, as RETECO Track 2 holds a run file to one run."""
    first = None
    for line in lines:
        first = first or line
        if line.run_id != first.run_id:
            raise ValueError(
                f"{line.where}: column 6 (run id) differs from line {first.number}'s; a run file holds one run"
            )
        yield line


def first_lines(
    lines: Iterable[RunLine], query_id: Callable[[str], str] | None = None
) -> tuple[dict[str, dict[str, RunLine]], list[tuple[str, RunLine, RunLine]]]:
    """Each query's documents at the line that first lists them, and every later line that
    lists one again, as ``(query, line, first line)``. ``query_id`` maps the file's query ids
    to the benchmark's first, so a query written two ways is one query."""
    found: dict[str, dict[str, RunLine]] = {}
    repeats = []
    for line in lines:
        qid = query_id(line.qid) if query_id else line.qid
        docs = found.setdefault(qid, {})
        if line.docid in docs:
            repeats.append((qid, line, docs[line.docid]))
        else:
            docs[line.docid] = line
    return found, repeats


def ranked_hits(docs: Iterable[RunLine]) -> list[Hit]:
    """A query's documents ranked as trec_eval ranks them (:func:`trec_order`), 1..n."""
    order = trec_order({line.docid: line.score for line in docs})
    return [Hit(docid, score, rank) for rank, (docid, score) in enumerate(order, start=1)]


def _listed_twice(repeat: tuple[str, RunLine, RunLine]) -> ValueError:
    _, line, first = repeat
    return ValueError(
        f"{line.where}: the document (column 3) is listed twice for its query (first on line {first.number})"
    )


def parse_trec_run(text: str, source: str) -> dict[str, list[Hit]]:
    """A TREC run file (:func:`run_lines`) as ranked hits per query. The ranking is
    trec_eval's: each query's documents by score descending, equal scores by docid
    descending (trec_eval sorts on score, then on the docid string reversed), ranked 1..n;
    the file's own rank column is read as an integer but does not order anything, as in
    trec_eval. A document listed twice for one query is an error naming both lines."""
    found, repeats = first_lines(run_lines(text, source))
    if repeats:
        raise _listed_twice(repeats[0])
    return {qid: ranked_hits(docs.values()) for qid, docs in found.items()}


def trec_order(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """``(docid, score)`` best first as trec_eval orders them: score descending, then docid
    descending."""
    return sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)


def run_file_uri(spec, benchmark: str, part: str, retriever: str | None = None) -> str:
    """The run file ``spec``'s template names for one benchmark part (a QUIT split or a RECOR
    domain); a template without ``{part}`` names one file for every part. Each field must be
    a name of the allowed set: the retriever comes from a partition key, which may have been
    added by hand."""
    fields = {"benchmark": benchmark, "part": part, "retriever": retriever or spec.alias, "reranker": spec.alias}
    return spec.path.format(**{f: check_name(v, f"run file of {spec.alias!r}: {f}") for f, v in fields.items()})


# Why a lenient read leaves a line out (``Dropped.reason``), as RETECO's rules for runs word it.
DUPLICATE, UNKNOWN_DOCUMENT = "duplicate", "unknown_document"
# Dropped lines a run's metadata names; the rest are counted.
DROPPED_SHOWN = 10


@dataclasses.dataclass(frozen=True)
class Dropped:
    """A well-formed run file line that a lenient read leaves out, and why."""

    line: RunLine
    reason: str
    detail: str

    def __str__(self) -> str:
        return f"{self.line.where}: {self.line.qid} {self.line.docid}: {self.detail}"


@dataclasses.dataclass
class RunFiles:
    """Rankings read from run files for a benchmark's queries, with what did not match."""

    hits: dict[str, list[Hit]]
    files: list[str]
    # Benchmark queries no file ranks anything for: they score 0.
    missing: list[str]
    # Query ids in the files that are not the benchmark's queries of that file's parts: ignored.
    ignored: list[str]
    # A lenient read's lines left out, in file and line order; None for a strict read, where
    # any such line is an error.
    dropped: list[Dropped] | None = None

    def metadata(self) -> dict:
        found = {
            "run_files": ", ".join(self.files),
            "run_queries_missing": len(self.missing),
            "run_queries_missing_ids": ", ".join(self.missing[:20]) or "none",
            "run_ids_ignored": len(self.ignored),
            "run_ids_ignored_examples": ", ".join(self.ignored[:20]) or "none",
        }
        if self.dropped is None:
            return found
        shown = "; ".join(map(str, self.dropped[:DROPPED_SHOWN]))
        more = len(self.dropped) - DROPPED_SHOWN
        return {
            **found,
            "run_duplicates_removed": sum(d.reason == DUPLICATE for d in self.dropped),
            "run_unknown_documents": sum(d.reason == UNKNOWN_DOCUMENT for d in self.dropped),
            "run_lines_dropped": (shown + (f"; and {more} more" if more > 0 else "")) or "none",
        }


def read_run_files(
    spec,
    benchmark: str,
    parts: Mapping[str, list[str]],
    k: int | None = None,
    documents: set[str] | None = None,
    retriever: str | None = None,
    query_id: Callable[[str], str] | None = None,
    lenient: bool = False,
) -> RunFiles:
    """The top ``k`` hits of every query in ``parts`` (part -> query ids) from the run files
    ``spec``'s template names (local path, relative to the working directory, or ``s3://``).
    ``query_id`` maps a file's query ids to the benchmark's (RECOR reads the task's
    ``<conversation>#turn<n>`` beside its own ``<conversation>_turn_<n>``; one turn written
    both ways is one query). A part whose file is missing, or a malformed line, is an error.
    A document listed again for a query, or one outside ``documents`` (where given: the run
    was made on another corpus), is an error too; with ``lenient`` (RECOR, read as RETECO
    Track 2 reads a run), the repeat is removed after the line that first lists it and the
    unknown document discarded, each kept in :attr:`RunFiles.dropped` with its file and
    line; a query left with no document is missing; a rank below 1, or a second run id in a
    file, is an error, as the checker has it. Only the wanted queries' lines count;
    the top ``k`` are taken from what is kept."""
    owner = f"{'reranker' if isinstance(spec, RerankerSpec) else 'retriever'} {spec.alias!r}"
    by_file: dict[str, set[str]] = {}
    for part, qids in parts.items():
        by_file.setdefault(run_file_uri(spec, benchmark, part, retriever), set()).update(qids)
    hits: dict[str, list[Hit]] = {}
    ignored: list[str] = []
    dropped: list[Dropped] = []
    for uri, wanted in by_file.items():
        try:
            text = read_text(uri)
        except FileNotFoundError:
            raise FileNotFoundError(f"{owner}: no run file at {uri} (template {spec.path!r})") from None
        # As the RETECO checker (assets.eval.recor.reteco) reads it: a leading byte order mark is no
        # part of the first query id, a rank is 1 or more, and the file holds one run.
        lines = run_lines(text.removeprefix("\ufeff") if lenient else text, uri, positive_rank=lenient)
        found, repeats = first_lines(one_run(lines) if lenient else lines, query_id)
        if repeats and not lenient:
            raise _listed_twice(repeats[0])
        dropped += [
            Dropped(line, DUPLICATE, f"listed again after line {first.number}: removed")
            for qid, line, first in repeats
            if qid in wanted
        ]
        for qid, docs in found.items():
            if qid not in wanted:
                ignored.append(qid)
                continue
            unknown = [line for line in docs.values() if documents is not None and line.docid not in documents]
            if unknown and not lenient:
                named = [h.docid for h in ranked_hits(docs.values()) if h.docid not in documents]
                raise ValueError(
                    f"{owner}: {uri}: query {qid!r} ranks {len(unknown)} documents that are not in the "
                    f"{benchmark} corpus (e.g. {', '.join(named[:3])})"
                )
            dropped += [
                Dropped(line, UNKNOWN_DOCUMENT, f"not in the {benchmark} corpus: discarded") for line in unknown
            ]
            kept = ranked_hits(line for line in docs.values() if documents is None or line.docid in documents)
            if kept:  # a query whose every document was discarded is missing: it scores 0
                hits[qid] = kept[:k] if k else kept
    missing = sorted(q for qids in parts.values() for q in qids if q not in hits)
    dropped.sort(key=lambda d: (d.line.source, d.line.number))
    return RunFiles(hits, sorted(by_file), missing, sorted(ignored), dropped if lenient else None)
