"""Reading QUIT as its authors published it (HF ``JamshidJDMY/InferentialQA``) into the three
tables the project builds, ``quit/benchmark_questions``, ``quit/benchmark_corpus`` and
``quit/benchmark_qrels``, so that the evaluation reads either source unchanged.

The release is ``corpus/corpus.jsonl`` (one passage a line) and ``train.json``, ``dev.json``,
``test.json`` (each one JSON list of questions), under a local folder or an ``s3://`` prefix.
It has no qrels file: the labels are made from each question's ``subsets`` (the answers the
labeler models gave from each hint permutation) and its ``answers`` pool, by the rule of the
authors' ``experiments/index/{train,dev,test}/index.py`` (:func:`release_label`). Every
record that cannot go on is kept in a rejects table with its reason; the rest loads.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import polars as pl

from assets.common.records import json_lines, read_records
from assets.common.rejects import Rejects
from resources.storage import exists, join, read_bytes

SPLITS = ("train", "dev", "test")
CORPUS_FILE = "corpus/corpus.jsonl"
QUESTION_FILES = {split: f"{split}.json" for split in SPLITS}

# The fields the authors' code reads, per file, and the only ones this loader reads.
# Question files: ``q['id']``, ``q['question']``, ``q['answers']``, ``q['hints']`` (each
# ``hint['hint']``) and ``q['subsets'][mask][order][model]``, in experiments/index/*/index.py.
# Corpus lines: ``{'id', 'contents', 'title'}`` as that script writes them and
# experiments/finetuning/dpr/make_tevatron_inputs.py reads them back; ``title`` is the id of
# the passage's question.
PUBLISHED_FIELDS = {
    "question": ("id", "question", "answers", "hints", "subsets"),
    "hint": ("hint",),
    "corpus": ("id", "contents", "title"),
}
# The models whose answers decide a label (index.py), and the readers whose answers the
# release also keeps per permutation ("rag_answers"; not needed for the tables).
LABELERS = ("gemma-3-1b", "qwen-3-4b", "llama-31-8b")
READERS = ("llama-32-1b", "gemma-3-4b", "qwen-3-8b")
HINTS_PER_QUESTION = 5

# Columns of the built tables the release does not carry: always null here. ``answer`` (the
# gold answer) is not among them: the release's pool has no separate gold, so the first
# answer of the pool stands for it.
NOT_IN_RELEASE = (
    "hint_convergence",
    "question_type",
    "difficulty",
    "reference_complexity",
    "source",
    "source_id",
    "parametric_answerable",
)

# The schemas of the built tables (assets.quit.release.assemble over the pipeline's frames).
QUESTIONS_SCHEMA = {
    "question_id": pl.String,
    "split": pl.String,
    "question": pl.String,
    "answer": pl.String,
    "answers": pl.List(pl.String),
    "hints": pl.List(pl.String),
    "hint_convergence": pl.List(pl.Float64),
    "question_type": pl.String,
    "difficulty": pl.String,
    "reference_complexity": pl.Float64,
    "source": pl.String,
    "source_id": pl.String,
    "parametric_answerable": pl.Boolean,
}
CORPUS_SCHEMA = {
    "passage_id": pl.String,
    "question_id": pl.String,
    "num_hints": pl.Int8,
    "hint_order": pl.String,
    "text": pl.String,
}
QRELS_SCHEMA = {"question_id": pl.String, "passage_id": pl.String, "label": pl.Int8}

# A rejected question names only its question; a rejected passage or label names both. The
# step is the published file the record came from.
REJECTS = Rejects(("question_id", "passage_id"))
MALFORMED, MISSING_FIELD, DUPLICATE_ID = "malformed", "missing_field", "duplicate_id"
BAD_PASSAGE_ID, UNKNOWN_QUESTION, UNLABELED_PASSAGE = "bad_passage_id", "unknown_question", "unlabeled_passage"
QREL_NOT_IN_CORPUS, NO_PASSAGES = "qrel_not_in_corpus", "no_passages"
REASONS = (
    MALFORMED,
    MISSING_FIELD,
    DUPLICATE_ID,
    BAD_PASSAGE_ID,
    UNKNOWN_QUESTION,
    UNLABELED_PASSAGE,
    QREL_NOT_IN_CORPUS,
    NO_PASSAGES,
)

# ``<mask>_<order>`` after the question id: five 0/1 digits, then the 0-based hint ranks in
# passage order (index.py: ``f'{q_id}_{subset}_{perm}'``, texts from ``hints[int(idx)] for
# idx in perm``). The release's scripts count a passage's hints as the mask's ones
# (results/hint-contribution/rag.py); which digit stands for which hint is not published,
# so only the count is held against the order.
_CODE = re.compile(rf"^([01]{{{HINTS_PER_QUESTION}}})_([0-4]{{1,{HINTS_PER_QUESTION}}})$")


class Release(NamedTuple):
    questions: pl.DataFrame
    corpus: pl.DataFrame
    qrels: pl.DataFrame
    rejects: pl.DataFrame


def release_label(labeler_answers: list[Any], answers: list[str]) -> int:
    """The published label of a passage: 2 when any labeler's answer from it is in the
    question's answer pool, exact string membership as in index.py (``_ga in answers``, no
    normalization: "IRON" is not "Iron"), else 1. Passages of other questions are 0,
    implicitly (no row)."""
    return 2 if any(a in answers for a in labeler_answers) else 1


def passage_code(mask: str, order: str) -> str | None:
    """Why ``<mask>_<order>`` is not a hint-permutation code, or None when it is one."""
    if not _CODE.match(f"{mask}_{order}"):
        return f"{mask}_{order} is not <five 0/1 digits>_<hint ranks 0-4>"
    if len(set(order)) != len(order) or mask.count("1") != len(order):
        return f"order {order} does not hold the {mask.count('1')} distinct hints its mask {mask} marks"
    return None


class _Loader:
    def __init__(self) -> None:
        self.rejects: list[dict] = []
        self.questions: dict[str, dict] = {}
        self.files: dict[str, str] = {}
        self.labels: dict[str, tuple[str, int]] = {}
        self.refused: set[str] = set()
        # Questions with a corpus passage whose label was rejected: kept, even left without
        # passages, since the release's evaluation counts every question.
        self.unlabeled: set[str] = set()

    def reject(self, qid, pid, file: str, reason: str, detail: str, record: Any = None) -> None:
        self.rejects.append(REJECTS.row(qid, pid, file, reason, detail, record))

    # --- question files -------------------------------------------------------------------

    def question(self, split: str, where: str, rec: Any) -> None:
        file = QUESTION_FILES[split]
        if not isinstance(rec, dict):
            return self.reject(
                None, None, file, MALFORMED, f"{where}: a question must be a JSON object, not {type(rec).__name__}", rec
            )
        qid = rec.get("id")
        name = qid if isinstance(qid, str) else None
        missing = [f for f in PUBLISHED_FIELDS["question"] if f not in rec]
        if missing:
            self.refused.add(name)
            return self.reject(name, None, file, MISSING_FIELD, f"{where}: no {', '.join(missing)}", rec)
        problem = _question_problem(rec)
        if problem:
            self.refused.add(name)
            return self.reject(name, None, file, MALFORMED, f"{where}: {problem}", rec)
        if qid in self.questions:
            return self.reject(
                qid,
                None,
                file,
                DUPLICATE_ID,
                f"{where}: question {qid} is already in {self.files[qid]}; the first one is kept",
                rec,
            )
        self.questions[qid] = {
            "question_id": qid,
            "split": split,
            "question": rec["question"],
            "answer": rec["answers"][0],
            "answers": rec["answers"],
            "hints": [h["hint"] for h in rec["hints"]],
        }
        self.files[qid] = file
        self.label(qid, rec, file)

    def label(self, qid: str, rec: dict, file: str) -> None:
        for mask, orders in rec["subsets"].items():
            if not isinstance(orders, dict):
                self.reject(
                    qid, None, file, MALFORMED, f"subsets[{mask!r}] must map hint orders to answers", {mask: orders}
                )
                continue
            for order, given in orders.items():
                pid = f"{qid}_{mask}_{order}"
                entry = {"subset": mask, "order": order, "answers": given}
                problem = passage_code(mask, order)
                if problem:
                    self.reject(qid, pid, file, BAD_PASSAGE_ID, f"subsets entry {mask}/{order}: {problem}", entry)
                elif not isinstance(given, dict):
                    self.reject(
                        qid, pid, file, MALFORMED, f"subsets entry {mask}/{order} must map models to answers", entry
                    )
                elif missing := [m for m in LABELERS if m not in given]:
                    self.reject(
                        qid,
                        pid,
                        file,
                        MISSING_FIELD,
                        f"subsets entry {mask}/{order}: no answer of {', '.join(missing)}",
                        entry,
                    )
                elif wrong := [m for m in LABELERS if not isinstance(given[m], str)]:
                    # The rule reads null or a number as a wrong answer: the label would be 1
                    # where the file may have meant 2. Rejected, not guessed.
                    self.reject(
                        qid,
                        pid,
                        file,
                        MALFORMED,
                        f"subsets entry {mask}/{order}: the answer of "
                        f"{', '.join(f'{m} ({type(given[m]).__name__})' for m in wrong)} is not a string",
                        entry,
                    )
                else:
                    self.labels[pid] = (qid, release_label([given[m] for m in LABELERS], rec["answers"]))

    # --- corpus ---------------------------------------------------------------------------

    def corpus(self, data: bytes) -> list[dict]:
        rows: list[dict] = []
        seen: dict[str, int] = {}
        for n, rec, problem in json_lines(data):
            where = f"{CORPUS_FILE} line {n}"
            if problem is not None:
                self.reject(None, None, CORPUS_FILE, MALFORMED, f"{where}: {problem}", rec)
                continue
            row = self.passage(rec, where, seen, n)
            if row is not None:
                rows.append(row)
        return rows

    def passage(self, rec: Any, where: str, seen: dict[str, int], n: int) -> dict | None:
        if not isinstance(rec, dict):
            return self.reject(
                None,
                None,
                CORPUS_FILE,
                MALFORMED,
                f"{where}: a passage must be a JSON object, not {type(rec).__name__}",
                rec,
            )
        pid, qid = rec.get("id"), rec.get("title")
        names = (qid if isinstance(qid, str) else None, pid if isinstance(pid, str) else None)
        missing = [f for f in PUBLISHED_FIELDS["corpus"] if f not in rec]
        if missing:
            return self.reject(*names, CORPUS_FILE, MISSING_FIELD, f"{where}: no {', '.join(missing)}", rec)
        wrong = [f for f in PUBLISHED_FIELDS["corpus"] if not isinstance(rec[f], str) or not rec[f].strip()]
        if wrong:
            return self.reject(
                *names, CORPUS_FILE, MALFORMED, f"{where}: {', '.join(wrong)} must be non-empty strings", rec
            )
        if pid in seen:
            return self.reject(
                qid,
                pid,
                CORPUS_FILE,
                DUPLICATE_ID,
                f"{where}: passage {pid} is already on line {seen[pid]}; the first one is kept",
                rec,
            )
        seen[pid] = n
        if qid not in self.questions:
            why = "was rejected" if qid in self.refused else "is in no question file"
            return self.reject(qid, pid, CORPUS_FILE, UNKNOWN_QUESTION, f"{where}: its question {qid} {why}", rec)
        mask, _, order = pid.removeprefix(f"{qid}_").partition("_")
        problem = (
            f"{pid} does not start with its question id {qid}"
            if not pid.startswith(f"{qid}_")
            else passage_code(mask, order)
        )
        if problem:
            return self.reject(qid, pid, CORPUS_FILE, BAD_PASSAGE_ID, f"{where}: {problem}", rec)
        if pid not in self.labels:
            self.unlabeled.add(qid)
            return self.reject(
                qid,
                pid,
                CORPUS_FILE,
                UNLABELED_PASSAGE,
                f"{where}: {self.files[qid]} gives no usable labeler answers for {mask}/{order}",
                rec,
            )
        return {
            "passage_id": pid,
            "question_id": qid,
            "num_hints": len(order),
            "hint_order": order,
            "text": rec["contents"],
        }


def _question_problem(rec: dict) -> str | None:
    if not isinstance(rec["id"], str) or not rec["id"].strip():
        return "id must be a non-empty string"
    if not isinstance(rec["question"], str) or not rec["question"].strip():
        return "question must be a non-empty string"
    answers = rec["answers"]
    if not isinstance(answers, list) or not answers or not all(isinstance(a, str) and a.strip() for a in answers):
        return "answers must be a non-empty list of non-empty strings"
    hints = rec["hints"]
    if not isinstance(hints, list) or len(hints) != HINTS_PER_QUESTION:
        return f"hints must be a list of {HINTS_PER_QUESTION} hint objects"
    for i, h in enumerate(hints):
        if not isinstance(h, dict) or "hint" not in h:
            return f"hint {i} must be an object with a hint"
        if not isinstance(h["hint"], str) or not h["hint"].strip():
            return f"hint {i} must be a non-empty string"
    if not isinstance(rec["subsets"], dict):
        return "subsets must map hint subsets to hint orders"
    return None


def release_paths(root: str) -> dict[str, str]:
    """The four published files under ``root``, by name as the release has them."""
    return {name: join(root, *name.split("/")) for name in (CORPUS_FILE, *QUESTION_FILES.values())}


def load_release(root: str) -> Release:
    """Questions, corpus, qrels and rejects of the published release at ``root`` (a folder or
    an ``s3://`` prefix holding ``corpus/corpus.jsonl``, ``train.json``, ``dev.json`` and
    ``test.json``; all four are needed, since the corpus holds every split's passages).

    A question's split is the file it is in; its qrels are its passages with
    :func:`release_label`, one row each. Records that cannot go on are rejected by name:
    malformed (not JSON, not an object, a field of the wrong type), a missing field, a
    repeated question or passage id (the first is kept), a passage id that is not the
    question id and a hint-permutation code, a passage of no known question, a corpus
    passage without labeler answers, a labeled passage not in the corpus (a qrel outside
    the corpus) and a question none of whose passages is in the corpus. A passage whose
    label is rejected (an answer missing or not a string) leaves the corpus and the qrels,
    not its question: a question whose every passage lost its label stays, without
    passages, as the release's evaluation counts every question. A question file that is
    not a JSON list, or a missing file, is an error naming it."""
    paths = release_paths(root)
    absent = [name for name, uri in paths.items() if not exists(uri)]
    if absent:
        raise FileNotFoundError(f"the QUIT release at {root} lacks {', '.join(absent)}")
    loader = _Loader()
    for split, name in QUESTION_FILES.items():
        for where, rec in read_records(paths[name]):
            loader.question(split, where.replace(paths[name], name), rec)
    passages = loader.corpus(read_bytes(paths[CORPUS_FILE]))
    in_corpus = {p["passage_id"] for p in passages}
    qrels = []
    for pid, (qid, label) in loader.labels.items():
        if pid in in_corpus:
            qrels.append((qid, pid, label))
        else:
            loader.reject(
                qid, pid, loader.files[qid], QREL_NOT_IN_CORPUS, f"labeled passage {pid} is not in {CORPUS_FILE}"
            )
    with_passages = {p["question_id"] for p in passages} | loader.unlabeled
    for qid in loader.questions:
        if qid not in with_passages:
            loader.reject(qid, None, loader.files[qid], NO_PASSAGES, f"no passage of {qid} is in {CORPUS_FILE}")
    kept = [q for qid, q in loader.questions.items() if qid in with_passages]
    questions = pl.DataFrame([{**q, **dict.fromkeys(NOT_IN_RELEASE)} for q in kept], schema=QUESTIONS_SCHEMA)
    return Release(
        questions=questions.select(list(QUESTIONS_SCHEMA)).sort("split", "question_id"),
        corpus=pl.DataFrame(passages, schema=CORPUS_SCHEMA),
        qrels=pl.DataFrame(qrels, schema=QRELS_SCHEMA, orient="row").sort("question_id", "passage_id"),
        rejects=REJECTS.frame(loader.rejects),
    )
