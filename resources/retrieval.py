"""The retriever registry and the retrievers behind it (BM25 on Lucene, dense on FAISS,
late interaction in ``resources.multi_vector``), and the two ways to bring one's own system: a
TREC run file and a Python entry point.

Every retriever shares one verb: ``search(queries, qids, k) -> {qid: [Hit, ...]}``.

``BENCHFOUNDRY_RETRIEVERS`` and ``BENCHFOUNDRY_RERANKERS`` point a deployment (or a test
instance) at other registry files, as ``BENCHFOUNDRY_MODELS`` does for the model registry.

Models the project trains itself register their aliases in a second, written registry: one
YAML file per alias in ``<storage root>/models/registry`` (``BENCHFOUNDRY_TRAINED`` names
another folder), each in the registry file's own format, merged into the loaded registry.
Only the files the project wrote there are read (see :func:`read_trained`).
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import math
import numbers
import os
import string
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

import numpy as np
import pyarrow.fs as pafs
import yaml

from resources.encoders import encode_blocks, encode_texts
from resources.lucene import Hit
from resources.names import check_name
from resources.storage import filesystem, join, read_text, read_yaml, storage_root, write_bytes

log = logging.getLogger(__name__)

RETRIEVERS_PATH = os.environ.get("BENCHFOUNDRY_RETRIEVERS") or str(Path(__file__).with_name("retrievers.yaml"))
# The trained models' registry. It is read where the static files are read, at wiring time and
# by the registry sensor, which see no resource config: so its folder follows the deployment's
# storage root, not a root set in the launchpad.
TRAINED_DIR = os.environ.get("BENCHFOUNDRY_TRAINED") or join(storage_root(), "models", "registry")

# A system the project does not run itself: its rankings come from a TREC run file, or from
# a function the project imports and calls.
RUN, ENTRYPOINT = "run", "entrypoint"
EXTERNAL_KINDS = {RUN, ENTRYPOINT}
# What a run file template may name: the benchmark (quit, recor), the part (a QUIT split or a
# RECOR domain), the retriever alias and, for a reranker, its own alias.
TEMPLATE_FIELDS = {"benchmark", "part", "retriever", "reranker"}


@dataclasses.dataclass(frozen=True)
class RetrieverSpec:
    alias: str
    kind: str
    k1: float = 0.9
    b: float = 0.4
    encoder: str | None = None
    query_prefix: str | None = None
    passage_prefix: str | None = None
    # dense: texts per forward pass of the encoder (a GPU takes far more than the CPU default).
    batch_size: int = 64
    # kind run: a run file template; the one RECOR query strategy its rankings answer.
    path: str | None = None
    strategy: str = "baseline"
    # kind entrypoint: ``package.module:function``.
    function: str | None = None
    # The benchmark a trained model learned from (``quit``): it is evaluated there only.
    trained_on: str | None = None
    # A trained model's positive passages per train question (a count of QUIT's sweep).
    positives: int | None = None


def _load(path: str, section: str, spec_type: type, kinds: set[str]) -> dict:
    """Parse one registry section into specs; errors name the file and the alias."""
    raw = read_yaml(path) or {}
    raw = raw.get(section) if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f"{path}: expected a non-empty {section!r} mapping")
    return _parse(raw, path, section, spec_type, kinds)


def _parse(raw: dict, path: str, section: str, spec_type: type, kinds: set[str]) -> dict:
    specs = {}
    for alias, entry in raw.items():
        check_name(alias, f"{path}: {section[:-1]} alias")
        if not isinstance(entry, dict) or entry.get("kind") not in kinds:
            raise ValueError(f"{path}: {section[:-1]} {alias!r} needs kind {' or '.join(sorted(kinds))}")
        unknown = set(entry) - {f.name for f in dataclasses.fields(spec_type)}
        if unknown:
            raise ValueError(f"{path}: {section[:-1]} {alias!r} has unknown keys {sorted(unknown)}")
        specs[alias] = spec_type(alias=alias, **entry)
        _check_external(path, section[:-1], specs[alias])
    return specs


def _check_external(path: str, what: str, spec) -> None:
    """A run file kind needs a template naming only known fields; an entry point kind a
    ``module:function`` target. Errors name the registry file, the alias and the key."""
    if spec.kind == RUN:
        if not spec.path:
            raise ValueError(f"{path}: run {what} {spec.alias!r} needs a path (a TREC run file template)")
        try:
            named = {f for _, f, _, _ in string.Formatter().parse(spec.path) if f is not None}
        except ValueError as e:
            raise ValueError(f"{path}: run {what} {spec.alias!r}: path {spec.path!r} is not a template: {e}") from None
        if named - TEMPLATE_FIELDS:
            raise ValueError(f"{path}: run {what} {spec.alias!r}: path names unknown fields {sorted(named - TEMPLATE_FIELDS)} "
                             f"(use {', '.join(sorted(TEMPLATE_FIELDS))})")
    if spec.kind == ENTRYPOINT:
        if not spec.function:
            raise ValueError(f"{path}: entrypoint {what} {spec.alias!r} needs a function (package.module:function)")
        module, _, name = spec.function.partition(":")
        if not module or not name:
            raise ValueError(f"{path}: entrypoint {what} {spec.alias!r}: function {spec.function!r} "
                             f"is not package.module:function")


# The mark ``register_trained`` puts in every file it writes: the trained registry's folder
# is a folder of the storage root anyone may write to, and a file dropped there by hand (or
# left by another tool) must not become a retriever, least of all an entry point the project
# would import and call.
WRITTEN_BY = "benchfoundry"
# What the project trains: the only kinds a trained registry file may name (never a run file
# or an entry point, whatever its mark says).
TRAINED_KINDS = {"retrievers": {"dense", "multi_vector"}, "rerankers": {"cross_encoder"}}


def trained_path(section: str, alias: str, directory: str = TRAINED_DIR) -> str:
    """The one file of a trained alias: a file per alias, so training runs of different
    partitions never write the same file."""
    return join(directory, f"{section}.{check_name(alias, 'trained alias')}.yaml")


def register_trained(section: str, alias: str, entry: dict, directory: str = TRAINED_DIR) -> str:
    """Write (or replace) a trained model's registry entry, marked as the project's; returns
    the file written."""
    uri = trained_path(section, alias, directory)
    write_bytes(uri, yaml.safe_dump({"written_by": WRITTEN_BY, section: {alias: entry}}, sort_keys=False).encode())
    return uri


@dataclasses.dataclass
class TrainedRegistry:
    """A section's trained aliases, and the files of the folder that were not read, each
    with its reason."""

    specs: dict
    ignored: dict[str, str]


def read_trained(section: str, spec_type: type, directory: str = TRAINED_DIR) -> TrainedRegistry:
    """The trained aliases of ``section`` in ``directory`` (none while nothing is trained).
    A file is read when it is what ``register_trained`` writes: named
    ``<section>.<alias>.yaml``, marked ``written_by: benchfoundry``, holding that one alias of
    a kind the project trains. Any other file is ignored with its reason; another section's
    files are that section's."""
    fs, root = filesystem(directory)
    names = sorted(info.base_name for info in fs.get_file_info(pafs.FileSelector(root, allow_not_found=True))
                   if info.type == pafs.FileType.File)
    found = TrainedRegistry({}, {})
    for name in names:
        stem, _, alias = name.removesuffix(".yaml").partition(".")
        if name.endswith(".yaml") and stem in TRAINED_KINDS and stem != section:
            continue
        uri = join(directory, name)
        try:
            found.specs |= _trained_file(uri, name, section, alias, spec_type)
        except ValueError as e:
            found.ignored[uri] = str(e).removeprefix(f"{uri}: ")
    return found


def _trained_file(uri: str, name: str, section: str, alias: str, spec_type: type) -> dict:
    if not name.startswith(f"{section}.") or not name.endswith(".yaml"):
        raise ValueError("not a trained registry file (<section>.<alias>.yaml)")
    check_name(alias, "the alias its name gives")
    raw = read_yaml(uri)
    if not isinstance(raw, dict) or raw.get("written_by") != WRITTEN_BY:
        raise ValueError(f"not written by {WRITTEN_BY} (register_trained marks its files written_by: {WRITTEN_BY})")
    entries = raw.get(section)
    if set(raw) != {"written_by", section} or not isinstance(entries, dict) or list(entries) != [alias]:
        raise ValueError(f"expected one {section!r} entry, {alias!r} as the file is named")
    kinds = TRAINED_KINDS[section]
    if not isinstance(entries[alias], dict) or entries[alias].get("kind") not in kinds:
        kind = entries[alias].get("kind") if isinstance(entries[alias], dict) else None
        raise ValueError(f"kind {kind!r} is not one the project trains ({', '.join(sorted(kinds))})")
    return _parse(entries, uri, section, spec_type, kinds)


def trained_specs(section: str, spec_type: type, directory: str = TRAINED_DIR) -> dict:
    """The trained aliases of ``section`` (:func:`read_trained`), each ignored file logged
    as a warning with its reason."""
    found = read_trained(section, spec_type, directory)
    for uri, reason in found.ignored.items():
        log.warning(f"{uri}: ignored: {reason}")
    return found.specs


def _merged(specs: dict, path: str, section: str, trained: dict, directory: str) -> dict:
    for alias, spec in trained.items():
        if alias in specs:
            raise ValueError(f"{trained_path(section, alias, directory)}: trained alias {alias!r} is already in {path}: "
                             "rename one of them")
        specs[alias] = spec
    return specs


# multi_vector: a ColBERT-style model scoring each passage by MaxSim over token vectors.
MULTI_VECTOR = "multi_vector"
ENCODER_KINDS = {"dense", MULTI_VECTOR}
RETRIEVER_KINDS = {"bm25", "oracle", *ENCODER_KINDS, *EXTERNAL_KINDS}


def load_retrievers(path: str = RETRIEVERS_PATH, trained: str | None = TRAINED_DIR) -> dict[str, RetrieverSpec]:
    """The registry file's retrievers and the trained ones in ``trained`` (None: the file only)."""
    specs = _load(path, "retrievers", RetrieverSpec, RETRIEVER_KINDS)
    if trained is not None:
        specs = _merged(specs, path, "retrievers", trained_specs("retrievers", RetrieverSpec, trained), trained)
    for spec in specs.values():
        if spec.kind in ENCODER_KINDS and not spec.encoder:
            raise ValueError(f"{path}: {spec.kind} retriever {spec.alias!r} needs an encoder")
        if spec.kind == MULTI_VECTOR and (spec.query_prefix is not None or spec.passage_prefix is not None):
            raise ValueError(f"{path}: multi_vector retriever {spec.alias!r}: the model's own query and document "
                             "markers apply; query_prefix and passage_prefix are for dense retrievers")
    return specs


def dense_search(spec: RetrieverSpec, faiss_resource, index, doc_ids: list[str], queries: list[str],
                 qids: list[str], k: int) -> dict[str, list[Hit]]:
    """Encode the queries with the retriever's encoder and search its FAISS index."""
    vecs = encode_texts(spec.encoder, queries, "query", spec.batch_size, query_prefix=spec.query_prefix)
    scores, ids = faiss_resource.search(index, vecs, k)
    out = {}
    for qid, row_scores, row_ids in zip(qids, scores, ids):
        hits = [(int(i), float(s)) for i, s in zip(row_ids, row_scores) if i >= 0]
        out[qid] = [Hit(doc_ids[i], s, r + 1) for r, (i, s) in enumerate(hits)]
    return out


def encode_corpus(spec: RetrieverSpec, texts: Iterable[str], log=None) -> Iterator[np.ndarray]:
    """The retriever's passage vectors of ``texts``, block by block, for an index to take in
    as they come (``log`` hears the progress)."""
    return encode_blocks(spec.encoder, texts, "passage", spec.batch_size, passage_prefix=spec.passage_prefix, log=log)


RERANKERS_PATH = os.environ.get("BENCHFOUNDRY_RERANKERS") or str(Path(__file__).with_name("rerankers.yaml"))


LLM_RERANKERS = {"rankgpt", "pointwise", "upr"}


@dataclasses.dataclass(frozen=True)
class RerankerSpec:
    alias: str
    kind: str
    # An alias of the model registry for LLM rerankers; a local path (or a cached model
    # name) for seq2seq ones; a local folder for cross-encoders.
    model: str | None = None
    top_k: int = 100
    window: int = 20
    step: int = 10
    top_logprobs: int = 20
    true_token: str = "true"
    false_token: str = "false"
    score: str = "softmax"
    batch_size: int = 16
    # kind run: a run file template of reranked lists; kind entrypoint: package.module:function.
    path: str | None = None
    function: str | None = None
    # The benchmark a trained model learned from (``quit``), as for retrievers.
    trained_on: str | None = None
    positives: int | None = None


RERANKER_KINDS = LLM_RERANKERS | {"seq2seq", "cross_encoder"} | EXTERNAL_KINDS


def load_rerankers(path: str = RERANKERS_PATH, models_path: str | None = None,
                   trained: str | None = TRAINED_DIR) -> dict[str, RerankerSpec]:
    """The registry file's rerankers and the trained ones in ``trained`` (None: the file only)."""
    from resources.llm import REGISTRY_PATH, load_registry

    specs = _load(path, "rerankers", RerankerSpec, RERANKER_KINDS)
    if trained is not None:
        specs = _merged(specs, path, "rerankers", trained_specs("rerankers", RerankerSpec, trained), trained)
    registry = load_registry(models_path or REGISTRY_PATH)
    for spec in specs.values():
        if spec.top_k < 1:
            raise ValueError(f"{path}: reranker {spec.alias!r}: top_k must be positive")
        if spec.kind in EXTERNAL_KINDS:
            continue
        if not spec.model:
            raise ValueError(f"{path}: reranker {spec.alias!r} needs a model")
        if spec.kind in LLM_RERANKERS and spec.model not in registry:
            raise ValueError(f"{path}: reranker {spec.alias!r} names unknown model alias {spec.model!r}")
        if spec.kind == "seq2seq" and spec.score not in {"softmax", "logit"}:
            raise ValueError(f"{path}: reranker {spec.alias!r}: score must be softmax or logit")
    return specs


# --- Run files ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RunLine:
    """One well-formed line of a run file: where it is, its query id, document and score."""

    source: str
    number: int
    qid: str
    docid: str
    score: float

    @property
    def where(self) -> str:
        return f"{self.source} line {self.number}"


def run_lines(text: str, source: str) -> Iterator[RunLine]:
    """The lines of a TREC run file (``qid Q0 docid rank score tag``, whitespace separated,
    one line per retrieved document), blank lines skipped. Any other line that is not six
    columns with an integer rank and a finite score is an error naming the file, line and
    column, never quoting them: a template may point at any file (an ``.env`` among them)."""
    for number, line in enumerate(text.splitlines(), start=1):
        columns = line.split()
        if not columns:
            continue
        where = f"{source} line {number}"
        if len(columns) != 6:
            raise ValueError(f"{where}: expected 6 columns (qid Q0 docid rank score tag), found {len(columns)}")
        qid, _, docid, rank, score, _ = columns
        try:
            int(rank)
        except ValueError:
            raise ValueError(f"{where}: column 4 (rank) is not an integer") from None
        try:
            value = float(score)
        except ValueError:
            raise ValueError(f"{where}: column 5 (score) is not a number") from None
        if not math.isfinite(value):
            raise ValueError(f"{where}: column 5 (score) is not finite")
        yield RunLine(source, number, qid, docid, value)


def first_lines(lines: Iterable[RunLine], query_id: Callable[[str], str] | None = None
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
    return ValueError(f"{line.where}: the document (column 3) is listed twice for its query (first on line {first.number})")


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
        found = {"run_files": ", ".join(self.files), "run_queries_missing": len(self.missing),
                 "run_queries_missing_ids": ", ".join(self.missing[:20]) or "none",
                 "run_ids_ignored": len(self.ignored), "run_ids_ignored_examples": ", ".join(self.ignored[:20]) or "none"}
        if self.dropped is None:
            return found
        shown = "; ".join(map(str, self.dropped[:DROPPED_SHOWN]))
        more = len(self.dropped) - DROPPED_SHOWN
        return {**found, "run_duplicates_removed": sum(d.reason == DUPLICATE for d in self.dropped),
                "run_unknown_documents": sum(d.reason == UNKNOWN_DOCUMENT for d in self.dropped),
                "run_lines_dropped": (shown + (f"; and {more} more" if more > 0 else "")) or "none"}


def read_run_files(spec, benchmark: str, parts: Mapping[str, list[str]], k: int | None = None,
                   documents: set[str] | None = None, retriever: str | None = None,
                   query_id: Callable[[str], str] | None = None, lenient: bool = False) -> RunFiles:
    """The top ``k`` hits of every query in ``parts`` (part -> query ids) from the run files
    ``spec``'s template names (local path, relative to the working directory, or ``s3://``).
    ``query_id`` maps a file's query ids to the benchmark's (RECOR reads the task's
    ``<conversation>#turn<n>`` beside its own ``<conversation>_turn_<n>``; one turn written
    both ways is one query). A part whose file is missing, or a malformed line, is an error.
    A document listed again for a query, or one outside ``documents`` (where given: the run
    was made on another corpus), is an error too; with ``lenient`` (RECOR, read as RETECO
    Track 2 reads a run), the repeat is removed after the line that first lists it and the
    unknown document discarded, each kept in :attr:`RunFiles.dropped` with its file and
    line; a query left with no document is missing. Only the wanted queries' lines count;
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
        # As the RETECO checker (assets.eval.recor.reteco.rules) reads it: a leading byte order mark is no part of the first query id.
        found, repeats = first_lines(run_lines(text.removeprefix("\ufeff") if lenient else text, uri), query_id)
        if repeats and not lenient:
            raise _listed_twice(repeats[0])
        dropped += [Dropped(line, DUPLICATE, f"listed again after line {first.number}: removed")
                    for qid, line, first in repeats if qid in wanted]
        for qid, docs in found.items():
            if qid not in wanted:
                ignored.append(qid)
                continue
            unknown = [line for line in docs.values() if documents is not None and line.docid not in documents]
            if unknown and not lenient:
                named = [h.docid for h in ranked_hits(docs.values()) if h.docid not in documents]
                raise ValueError(f"{owner}: {uri}: query {qid!r} ranks {len(unknown)} documents that are not in the "
                                 f"{benchmark} corpus (e.g. {', '.join(named[:3])})")
            dropped += [Dropped(line, UNKNOWN_DOCUMENT, f"not in the {benchmark} corpus: discarded") for line in unknown]
            kept = ranked_hits(line for line in docs.values() if documents is None or line.docid in documents)
            if kept:  # a query whose every document was discarded is missing: it scores 0
                hits[qid] = kept[:k] if k else kept
    missing = sorted(q for qids in parts.values() for q in qids if q not in hits)
    dropped.sort(key=lambda d: (d.line.source, d.line.number))
    return RunFiles(hits, sorted(by_file), missing, sorted(ignored), dropped if lenient else None)


# --- Entry points ---------------------------------------------------------------------------


class EntryPointError(RuntimeError):
    """An entry point raised: the message names the system and its function, the cause is
    the function's own error."""


def load_function(owner: str, target: str) -> Callable:
    """The callable ``package.module:function`` names (the function part may be dotted, as
    ``module:Class.method``); errors name ``owner`` and what failed to resolve. Called, it
    raises :class:`EntryPointError` for whatever the function raises, so a bare ``KeyError``
    from a team's code still says which system and function it came from."""
    module_name, _, name = target.partition(":")
    try:
        value = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"{owner}: cannot import module {module_name!r} of entry point {target!r}: {e}") from e
    for attribute in name.split("."):
        if not hasattr(value, attribute):
            raise ValueError(f"{owner}: entry point {target!r}: {module_name} has no attribute {name!r}")
        value = getattr(value, attribute)
    if not callable(value):
        raise ValueError(f"{owner}: entry point {target!r} is not callable")

    def call(*args, **kwargs):
        try:
            return value(*args, **kwargs)
        except Exception as e:
            raise EntryPointError(f"{owner}: entry point {target!r} raised {type(e).__name__}: {e}") from e

    return call


def checked_ranking(owner: str, qid: str, ranked, known: Mapping | set, limit: int | None = None) -> list[tuple[str, float]]:
    """An entry point's ranking for one query, validated: a list of ``(doc_id, score)``
    best first, each id known and listed once, scores finite and never rising down the
    list (the order is the ranking; a TREC file of it must not reorder), at most ``limit``."""
    where = f"{owner}: query {qid!r}"
    if isinstance(ranked, (str, bytes, Mapping)) or not hasattr(ranked, "__iter__"):
        raise ValueError(f"{where}: expected a list of (doc_id, score) pairs, got {type(ranked).__name__}")
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    for position, pair in enumerate(ranked, start=1):
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(f"{where}: item {position} is {pair!r}, not a (doc_id, score) pair")
        doc, score = pair
        if not isinstance(doc, str):
            raise ValueError(f"{where}: item {position}: doc id {doc!r} is not a string")
        if isinstance(score, bool) or not isinstance(score, numbers.Real) or not math.isfinite(float(score)):
            raise ValueError(f"{where}: document {doc!r}: score {score!r} is not a finite number")
        if doc not in known:
            raise ValueError(f"{where}: unknown document {doc!r}")
        if doc in seen:
            raise ValueError(f"{where}: document {doc!r} is ranked twice")
        if out and float(score) > out[-1][1]:
            raise ValueError(f"{where}: document {doc!r} (rank {position}) scores {float(score)}, above the "
                             f"{out[-1][1]} of rank {position - 1}: return the list best first")
        seen.add(doc)
        out.append((doc, float(score)))
    if limit is not None and len(out) > limit:
        raise ValueError(f"{where}: {len(out)} documents returned, more than the k={limit} asked for")
    return out


def entrypoint_search(spec: RetrieverSpec, queries: Mapping[str, str], corpus: Mapping[str, str], k: int) -> dict[str, list[Hit]]:
    """Call the retriever's function ``f(queries, corpus, k)`` (``{qid: text}``,
    ``{doc_id: text}``, the depth) and turn its ``{qid: [(doc_id, score), ...]}``, best
    first, into hits. Every call hands over the whole corpus, so a function that indexes
    should cache its index (e.g. keyed by the corpus ids). A query it returns nothing for
    gets no hits (it scores 0); a query id it invents is an error."""
    owner = f"retriever {spec.alias!r}"
    result = load_function(owner, spec.function)(dict(queries), corpus, k)
    if not isinstance(result, Mapping):
        raise ValueError(f"{owner}: {spec.function} returned {type(result).__name__}, expected {{qid: [(doc_id, score), ...]}}")
    unknown = sorted(str(q) for q in result if q not in queries)
    if unknown:
        raise ValueError(f"{owner}: {spec.function} returned {len(unknown)} query ids it was not given (e.g. {', '.join(unknown[:3])})")
    return {qid: [Hit(doc, score, rank) for rank, (doc, score) in enumerate(checked_ranking(owner, qid, result[qid], corpus, k), start=1)]
            for qid in queries if qid in result}
