"""The QUIT construction rules as plain functions (paper sections 3.1-3.2)."""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Iterator
from itertools import permutations

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from assets.common.text import (
    contains_phrase,
    english_stopwords,
    exact_match,
    normalize,
    normalize_once,
    tokens,
)
from resources.llm import ParseError
from resources.storage import FrameTable, StoredTable, as_table

NO_ANSWER = "NO ANSWER"
TOP_HINTS = 5

# --- parsing model output ----------------------------------------------------------------

_PREFIX = re.compile(r"^\s*(final\s+)?answer\s*[:\-]\s*", re.I)


def _answer_lines(text: str) -> list[str]:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        raise ParseError("empty answer")
    return lines


def _short_answer(line: str, text: str) -> str | None:
    # quotes inside or outside a final period: "Paris". and "Paris." both read Paris
    answer = _PREFIX.sub("", line).strip().strip("\"'*`").rstrip(".").strip("\"'*`").strip()
    if not answer:
        raise ParseError(f"no answer text in {text[:80]!r}")
    if "no answer" in answer.lower():
        return None
    return answer


def parse_short_answer(text: str) -> str | None:
    """A short answer from its first line (the labelers' and the closed-book answers, and
    the reader's ``first_line`` option); None for NO ANSWER. Empty output is unparsable."""
    return _short_answer(_answer_lines(text)[0], text)


def parse_last_line_answer(text: str) -> str | None:
    """A reader's short answer as the QUIT release's answer cleaning takes it: its last
    line, one leading "(" dropped ("Let me think.\nParis" is Paris), then the prefixes and
    quotes of :func:`parse_short_answer` removed; None for NO ANSWER."""
    line = _answer_lines(text)[-1]
    return _short_answer(line[1:] if line.startswith("(") else line, text)


# How the reader's answer is read from its reply: the release's last line (the default) or
# the first line, as the project read it before.
READER_PARSES = {"last_line": parse_last_line_answer, "first_line": parse_short_answer}


TAXONOMY = {
    "ABBR": {"abb", "exp"},
    "DESC": {"def", "desc", "manner", "reason"},
    "ENTY": {"animal", "body", "color", "cremat", "currency", "dismed", "event", "food", "instru",
             "lang", "letter", "other", "plant", "product", "religion", "sport", "substance",
             "symbol", "techmeth", "termeq", "veh", "word"},
    "HUM": {"desc", "gr", "ind", "title"},
    "LOC": {"city", "country", "mount", "other", "state"},
    "NUM": {"code", "count", "date", "dist", "money", "ord", "other", "perc", "period", "speed",
            "temp", "volsize", "weight"},
}


def parse_type_label(text: str) -> tuple[str, str]:
    """A COARSE:fine label from the taxonomy."""
    m = re.search(r"\b([A-Za-z]{3,4})\s*:\s*([A-Za-z]+)", text)
    if m:
        coarse, fine = m.group(1).upper(), m.group(2).lower()
        if fine in TAXONOMY.get(coarse, ()):
            return coarse, fine
    raise ParseError(f"no taxonomy label in {text[:80]!r}")


def coarse_type(major: str | None) -> str | None:
    """Source spellings ('HUMAN', 'HUM:HUMAN', 'HUM') reduced to the coarse code."""
    if not major:
        return None
    head = major.split(":")[0].strip().upper()
    aliases = {"HUMAN": "HUM", "LOCATION": "LOC", "ENTITY": "ENTY", "NUMERIC": "NUM",
               "DESCRIPTION": "DESC", "ABBREVIATION": "ABBR"}
    return aliases.get(head, head)


def fine_type(minor: str | None) -> str | None:
    if not minor:
        return None
    return minor.split(":")[0].strip().lower()


# --- answer leakage (3.1.2) ----------------------------------------------------------------


def leaking_alias(hint: str, answers: list[str]) -> str | None:
    """The answer or alias a hint names outright (normalized, on word boundaries)."""
    for a in answers:
        if contains_phrase(hint, a):
            return a
    return None


def leakage_spans(hint: str, answers: list[str], threshold: float = 0.75) -> list[str]:
    """Spans of a hint close enough to an answer to be worth asking the judge about.

    The paper used BEM to test whether any words of a hint are equivalent to the answer.
    Offline, exact alias matches are decided by :func:`leaking_alias`; near misses (a
    misspelling, a plural, a part of a multi-word name) are the candidates sent to the
    LLM judge. A span is a run of 1..n words, n being the longest answer's length.
    """
    words = tokens(hint)
    targets = [normalize(a) for a in answers if normalize(a)]
    longest = max((len(t.split()) for t in targets), default=1)
    spans = []
    for n in range(1, longest + 1):
        for i in range(len(words) - n + 1):
            span = " ".join(words[i : i + n])
            if len(span) < 4 or span in spans:
                continue
            if any(difflib.SequenceMatcher(None, span, t).ratio() >= threshold for t in targets):
                spans.append(span)
    return spans


# --- hint convergence and selection (3.1.2, HintEval) --------------------------------------


def convergence(gold_fits: bool, fits: list[bool]) -> float:
    """HintEval's convergence of one hint over m candidates (m-1 wrong ones plus the gold).

    0 when the hint does not fit the gold answer; otherwise the share of candidates it
    rules out, counting the gold as kept: 1 - (wrong candidates it fits) / m. A hint that
    fits only the gold scores 1; one that fits everything scores 1/m.
    """
    if not gold_fits:
        return 0.0
    m = len(fits) + 1
    return round(1.0 - sum(fits) / m, 4)


def top_hints(hints: list[str], scores: list[float | None], k: int = TOP_HINTS) -> tuple[list[str], list[float]]:
    """The k highest-convergence hints, ties broken by source order (stable)."""
    order = sorted(range(len(hints)), key=lambda i: -(scores[i] if scores[i] is not None else -1.0))
    keep = order[:k]
    return [hints[i] for i in keep], [float(scores[i]) if scores[i] is not None else float("nan") for i in keep]


# --- difficulty (3.1.3) ----------------------------------------------------------------------


def reference_complexity(contains: list[bool], similarities: list[float]) -> float:
    """Reference-based question complexity in [0, 1] (after Gabburo et al., 2024).

    A question is easy when the passages retrieved for it contain the answer and are close
    to it in meaning. Each of the k retrieved passages contributes its similarity when it
    contains the answer; complexity is 1 minus the mean contribution. No passages: 1.
    """
    if not contains:
        return 1.0
    support = sum(max(s, 0.0) for c, s in zip(contains, similarities) if c)
    return round(1.0 - support / len(contains), 4)


def difficulty_bucket(complexity: float) -> str:
    if complexity < 1 / 3:
        return "easy"
    if complexity < 2 / 3:
        return "medium"
    return "hard"


# --- splits (3.1.4) ---------------------------------------------------------------------------


# The split of a question whose answerability a failed call left open: in no split.
UNDETERMINED = "undetermined"


def parametric_answerable(correct: list[bool | None]) -> bool | None:
    """Answerable when any closed-book answer was correct; not answerable when every answer
    was decided and none was; None (undetermined) when none was correct and a failed call
    left some answer undecided."""
    if any(c is True for c in correct):
        return True
    return None if any(c is None for c in correct) else False


def assign_splits(
    answerable: dict[str, bool | None], train_size: int, test_size: int, seed: int
) -> dict[str, str]:
    """train: sampled from parametrically answerable questions; test: sampled from the
    non-answerable ones; dev: the rest of the non-answerable. Answerable questions beyond
    ``train_size`` are left out (split ``unused``), as in the paper, and so are undetermined
    ones (split ``undetermined``): neither side may take them on a guess."""
    rng = random.Random(seed)
    yes = sorted(q for q, a in answerable.items() if a is True)
    no = sorted(q for q, a in answerable.items() if a is False)
    rng.shuffle(yes)
    rng.shuffle(no)
    splits = {q: UNDETERMINED for q, a in answerable.items() if a is None}
    splits.update({q: "train" for q in yes[:train_size]})
    splits.update({q: "unused" for q in yes[train_size:]})
    splits.update({q: "test" for q in no[:test_size]})
    splits.update({q: "dev" for q in no[test_size:]})
    return splits


# --- labels (3.2.2, 3.2.4) ----------------------------------------------------------------------


def is_correct(candidate: str | None, golds: list[str], judged: bool | None) -> bool:
    """Normalized exact match counts without the judge; otherwise the judge's verdict (None
    for no verdict that may decide: unparsable, or an advisory judge's)."""
    if candidate is None:
        return False
    if exact_match(candidate, golds):
        return True
    return bool(judged)


def passage_label(correct_by_labeler: list[bool | None]) -> int | None:
    """2 when any labeler answered correctly from the passage, else 1; no label (None) while
    any labeler's answer is undecided (a failed call), even beside a correct one: the label
    and the answer pool are made from every labeler's answer or from none."""
    if any(c is None for c in correct_by_labeler):
        return None
    return 2 if any(correct_by_labeler) else 1


# Hint-permutation passages: every ordered non-empty subset of a question's 5 hints.
# sum_{k=1..5} C(5,k) k! = 325 passages per question. A passage id encodes its hints and their order
# as the public release does: ``<question_id>_<mask>_<order>``, where the mask has one 0/1
# digit per hint (convergence rank order) and the order lists the 0-based ranks in passage
# order (``q_10100_20`` = hint 2 then hint 0).
# Texts are built column-wise with pyarrow (one vectorised join per permutation over a batch of
# questions), so 2.4M passages are produced in seconds and streamed in bounded memory.

HINTS_PER_QUESTION = 5


def hint_orders(n: int = HINTS_PER_QUESTION) -> list[tuple[int, ...]]:
    """All ordered non-empty subsets of ``range(n)``, shortest first."""
    return [p for k in range(1, n + 1) for p in permutations(range(n), k)]


ORDERS = hint_orders()
ORDER_CODES = [
    "".join("1" if i in order else "0" for i in range(HINTS_PER_QUESTION)) + "_" + "".join(map(str, order))
    for order in ORDERS
]
PASSAGES_PER_QUESTION = len(ORDERS)  # 325


def sampled_orders(k: int | None, seed: int) -> list[str] | None:
    """``k`` of the 325 hint orders (the ``hint_order`` codes), drawn with ``seed`` and listed
    shortest first; None (no cap) when ``k`` is None or covers them all. Every question gets
    the same orders, so a capped run still compares questions on equal passages."""
    if k is None or k >= PASSAGES_PER_QUESTION:
        return None
    if k < 1:
        raise ValueError(f"a cap on passages per question must be at least 1, got {k}")
    picked = sorted(random.Random(seed).sample(range(PASSAGES_PER_QUESTION), k))
    return [ORDER_CODES[i].split("_")[1] for i in picked]


_SPACE = pa.scalar(" ", pa.large_string())
_UNDERSCORE = pa.scalar("_", pa.large_string())

PASSAGE_SCHEMA = pa.schema(
    [
        ("passage_id", pa.large_string()),
        ("question_id", pa.large_string()),
        ("hint_order", pa.large_string()),
        ("num_hints", pa.int8()),
        ("text", pa.large_string()),
    ]
)


def passage_batch(question_ids: pa.Array, hints: list[pa.Array]) -> pa.Table:
    """Passages for a batch of questions, grouped by question, in ``ORDERS`` order.

    ``hints[j]`` holds the j-th ranked hint of every question in the batch.
    """
    n = len(question_ids)
    ids, codes, sizes, texts = [], [], [], []
    for order, code in zip(ORDERS, ORDER_CODES):
        cols = [hints[j] for j in order]
        texts.append(cols[0] if len(cols) == 1 else pc.binary_join_element_wise(*cols, _SPACE))
        ids.append(pc.binary_join_element_wise(question_ids, pa.scalar(code, pa.large_string()), _UNDERSCORE))
        codes.append(pa.array([code.split("_")[1]] * n, pa.large_string()))
        sizes.append(np.full(n, len(order), dtype=np.int8))
    # Rows come out permutation-major; reorder to question-major so a question's 325
    # passages are contiguous (labeling walks them in that order).
    take = (np.arange(n)[:, None] + np.arange(PASSAGES_PER_QUESTION)[None, :] * n).ravel()
    qids = pa.chunked_array([question_ids] * PASSAGES_PER_QUESTION)
    table = pa.table(
        {
            "passage_id": pa.chunked_array(ids),
            "question_id": qids,
            "hint_order": pa.chunked_array(codes),
            "num_hints": pa.array(np.concatenate(sizes)),
            "text": pa.chunked_array(texts),
        },
        schema=PASSAGE_SCHEMA,
    )
    return table.take(pa.array(take))


def passage_batches(questions: pl.DataFrame, batch_questions: int = 256) -> Iterator[pl.DataFrame]:
    """Stream passages for a frame with ``question_id`` and ``hints`` (5 ranked hints each)."""
    bad = questions.filter(pl.col("hints").list.len() != HINTS_PER_QUESTION)
    if bad.height:
        raise ValueError(
            f"questions need exactly {HINTS_PER_QUESTION} selected hints; "
            f"offending: {bad['question_id'].head(5).to_list()}"
        )
    for start in range(0, questions.height, batch_questions):
        chunk = questions.slice(start, batch_questions)
        # polars hands strings over as large_string; every column is built in that type.
        qids = chunk["question_id"].to_arrow().cast(pa.large_string())
        hints = [chunk["hints"].list.get(j).to_arrow().cast(pa.large_string()) for j in range(HINTS_PER_QUESTION)]
        yield pl.from_arrow(passage_batch(qids, hints))


def passages_frame(questions: pl.DataFrame) -> pl.DataFrame:
    return pl.concat(list(passage_batches(questions)), rechunk=True) if questions.height else pl.from_arrow(
        PASSAGE_SCHEMA.empty_table()
    )


# Table 1 of the QUIT paper: the benchmark's statistical summary, with the definitions of the
# release's results/statistics/dataset_statistics.py. Its words are the pieces of a text split
# on single spaces (``str.split(" ")``), as written: no lower-casing, punctuation attached.

TABLE_1_SCHEMA = {"metric": pl.String, "value": pl.Float64, "definition": pl.String}


def space_words(text: str) -> list[str]:
    """A text's words as the release counts them: split on each single space."""
    return text.split(" ")


def lexical_overlap(question: str, passage: str) -> float:
    """Jaccard overlap of the space-split word sets of question and passage, NLTK's English
    stop words removed, case kept ("The" is not the stop word "the"); 0 when both are only
    stop words (the release would divide by zero)."""
    stop = english_stopwords()
    q = {w for w in space_words(question) if w not in stop}
    p = {w for w in space_words(passage) if w not in stop}
    return len(q & p) / len(q | p) if q | p else 0.0


def contains_answer(passage: str, answers: list[str]) -> bool:
    """Whether any answer occurs in the passage as a substring, both lower-cased ("Paris"
    is contained in "Parisian"); blank answers are skipped (one would be in every passage)."""
    text = passage.lower()
    return any(a.strip() and a.lower() in text for a in answers)


class _SemanticOverlap:
    """The running sum of question-passage cosines, a block of passages at a time: each
    distinct question text is encoded once, and memory holds one block's vectors, not 2.4M
    of them. Blocks span many questions, so the encoder's length-sorted batches pad less than
    a call per question did; the model's arithmetic, not the calls, is most of the cost
    (bench/encoding_bench.py)."""

    def __init__(self, question_texts: dict[str, str], asked: list[str], encode):
        # The distinct question texts, in the order asked (Table 1 counts and measures them).
        self.texts = texts = list(dict.fromkeys(question_texts[qid] for qid in asked))
        self.row = {text: i for i, text in enumerate(texts)}
        self.question_texts = question_texts
        self.encode = encode
        self.question_vecs = np.asarray(encode(texts), dtype=np.float32) if texts else None
        self.total, self.done = 0.0, 0

    def add(self, question_ids: list[str], texts: list[str]) -> None:
        if not texts:
            return
        passage_vecs = np.asarray(self.encode(texts), dtype=np.float32)
        paired = self.question_vecs[[self.row[self.question_texts[qid]] for qid in question_ids]]
        self.total += float(np.einsum("ij,ij->i", passage_vecs, paired).astype(np.float64).sum())
        self.done += len(texts)

    @property
    def mean(self) -> float:
        return self.total / self.done if self.done else 0.0


def semantic_overlap(question_texts: dict[str, str], corpus: pl.DataFrame | StoredTable | FrameTable, encode,
                     block_size: int = 8192, log=None) -> float:
    """Mean cosine of every corpus passage (``question_id``, ``text``: a frame, or a stored
    table read a block at a time) with its question's text, ``encode`` returning unit vectors
    (:class:`_SemanticOverlap`, blocks of ``block_size`` passages). ``log`` (a callable taking
    a line) hears the progress."""
    corpus = as_table(corpus)
    height = corpus.height
    overlap = _SemanticOverlap(question_texts, corpus.read("question_id")["question_id"].unique(maintain_order=True).to_list(),
                               encode)
    for block in corpus.batches("question_id", "text", rows=block_size):
        overlap.add(block["question_id"].to_list(), block["text"].to_list())
        if log:
            log(f"semantic overlap: {overlap.done:,} of {height:,} passages encoded")
    return overlap.mean


def table1(questions: pl.DataFrame, corpus: pl.DataFrame | StoredTable | FrameTable, qrels: pl.DataFrame, encode,
           block_size: int = 8192, log=None) -> pl.DataFrame:
    """Table 1 over the (question, passage) pairs: every corpus passage with its question's
    text and answer pool (``answers``), as the release's statistics script reads them. The
    corpus is a frame or a stored table, read in one pass a block of ``block_size`` passages
    at a time (its texts are never held whole).

    - Total Questions: distinct question texts among the pairs (a question without passages
      is not counted; two ids with the same wording count once).
    - Total Passages: the pairs (corpus passages of the questions).
    - Avg. Question Length: space-split words per distinct question text.
    - Avg. Passage Length: space-split words per passage.
    - Avg. Answer Length: space-split words per answer string, every answer of a question's
      pool counted once for each of its passages.
    - Query-Passage Lexical Overlap: mean over the pairs of :func:`lexical_overlap`.
    - Answer Containment: share of the pairs whose passage contains an answer
      (:func:`contains_answer`, the release's lower-cased substring rule).
    - Query-Passage Semantic Overlap: mean over the pairs of the cosine similarity of
      question and passage embeddings (``encode`` returns unit vectors; :class:`_SemanticOverlap`;
      ``log`` hears the progress).

    Two rows are the project's: Answer Containment (whole words), the share with an answer
    on word boundaries after ``normalize`` (the rule hints are screened with, so 0 by
    construction), and the Label-2 / Label-1 passage counts of the qrels. Each row's
    ``definition`` says what it counts."""
    corpus = as_table(corpus)
    q = {r["question_id"]: r for r in questions.select("question_id", "question", "answers").iter_rows(named=True)}
    asked = corpus.read("question_id")["question_id"].unique(maintain_order=True)
    missing = sorted(set(asked) - set(q))
    if missing:
        raise ValueError(f"corpus passages of questions not in the benchmark questions: {missing[:5]}")
    # Sums over the pairs, a block of passages at a time, not a list of every pair and of
    # each value (0.23 KB a passage more, about 0.55 GB at 2.4M; and 16% slower).
    sums = {"pairs": 0, "passage_words": 0, "answers": 0, "answer_words": 0, "lexical": 0.0, "contained": 0,
            "whole_words": 0}
    pool_words = {qid: (len(r["answers"] or []), sum(len(space_words(a)) for a in r["answers"] or []))
                  for qid, r in q.items()}
    # Whole-word containment (contains_phrase) with each answer normalized once per question
    # and each passage once, uncached: a passage is read once.
    pool_phrases = {qid: [f" {p} " for p in (normalize(a) for a in r["answers"] or []) if p] for qid, r in q.items()}
    question_texts = {qid: r["question"] for qid, r in q.items()}
    semantic = _SemanticOverlap(question_texts, asked.to_list(), encode)
    height = corpus.height
    for block in corpus.batches("question_id", "text", rows=block_size):
        question_ids, texts = block["question_id"].to_list(), block["text"].to_list()
        for qid, text in zip(question_ids, texts):
            question, pool = q[qid]["question"], q[qid]["answers"] or []
            sums["pairs"] += 1
            sums["passage_words"] += len(space_words(text))
            sums["answers"] += pool_words[qid][0]
            sums["answer_words"] += pool_words[qid][1]
            sums["lexical"] += lexical_overlap(question, text)
            sums["contained"] += contains_answer(text, pool)
            padded = f" {normalize_once(text)} " if pool_phrases[qid] else ""
            sums["whole_words"] += any(p in padded for p in pool_phrases[qid])
        semantic.add(question_ids, texts)
        if log:
            log(f"table 1: {semantic.done:,} of {height:,} passages read and encoded")
    texts = semantic.texts

    def avg(total: float, count: int) -> float:
        return float(total / count) if count else 0.0

    n = sums["pairs"]
    space = "split on single spaces"
    rows = [
        ("Total Questions", len(texts), "distinct question texts with passages"),
        ("Total Passages", n, "question-passage pairs"),
        ("Avg. Question Length (words)", avg(sum(len(space_words(t)) for t in texts), len(texts)),
         f"per distinct question, {space}"),
        ("Avg. Passage Length (words)", avg(sums["passage_words"], n), f"per passage, {space}"),
        ("Avg. Answer Length (words)", avg(sums["answer_words"], sums["answers"]),
         f"per pool answer, once per passage of its question, {space}"),
        ("Query-Passage Lexical Overlap", avg(sums["lexical"], n),
         f"Jaccard of word sets ({space}, case kept, NLTK English stop words removed)"),
        ("Answer Containment", avg(sums["contained"], n),
         "share of pairs with a pool answer as a lower-cased substring of the passage"),
        ("Answer Containment (whole words)", avg(sums["whole_words"], n),
         "share of pairs with a pool answer on word boundaries after normalize (project's rule)"),
        ("Query-Passage Semantic Overlap", semantic.mean, "mean cosine of question and passage embeddings"),
        ("Label-2 Passages", int((qrels["label"] == 2).sum()) if qrels.height else 0, "qrels with label 2 (project's row)"),
        ("Label-1 Passages", int((qrels["label"] == 1).sum()) if qrels.height else 0, "qrels with label 1 (project's row)"),
    ]
    return pl.DataFrame([(m, float(v), d) for m, v, d in rows], schema=TABLE_1_SCHEMA, orient="row")


def hint_count_plot(corpus: pl.DataFrame | StoredTable | FrameTable, qrels: pl.DataFrame):
    """Share of label-2 passages by number of hints (the shape behind Figure 6)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    joined = as_table(corpus).read("passage_id", "num_hints").join(qrels.select("passage_id", "label"), on="passage_id")
    by = joined.group_by("num_hints").agg(pl.len().alias("n"), (pl.col("label") == 2).mean().alias("share")).sort("num_hints")
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.bar(by["num_hints"].to_list(), by["share"].to_list(), color="#4c72b0")
    ax.set_xlabel("hints in passage")
    ax.set_ylabel("share labeled 2")
    ax.set_title("Fully relevant passages by number of hints")
    return fig


# Human verification (appendix A.1): the distinct generated answers a person decides on.
CANDIDATE_SCHEMA = {
    "question_id": pl.String,
    "question": pl.String,
    "gold": pl.String,
    "candidate": pl.String,
    "occurrences": pl.Int64,
    "judged_correct": pl.Boolean,
    "exact_match": pl.Boolean,
}


def candidates(answers: pl.DataFrame, questions: pl.DataFrame) -> pl.DataFrame:
    """Distinct generated answers per question with how often they occur and the verdicts:
    answers are the same when they normalize alike, shown as first given; most frequent first,
    ties in the order they first occur. Computed on columns (7.2M answers at the papers' size)."""
    asked = questions.select("question_id", "question", pl.col("answer").alias("gold"))
    given = answers.filter(pl.col("answer").is_not_null() & pl.col("question_id").is_in(asked["question_id"])).select(
        "question_id", "answer", "correct")
    groups = (
        given.with_columns(normalized(given["answer"]).alias("key")).with_row_index("row")
        .group_by("question_id", "key").agg(
            pl.col("answer").first().alias("candidate"),
            pl.len().alias("occurrences"),
            pl.col("correct").fill_null(False).any().alias("judged_correct"),
            pl.col("row").first().alias("first"),
        )
    )
    return (
        groups.join(asked, on="question_id")
        .join(gold_keys(questions).with_columns(pl.lit(True).alias("exact_match")), on=["question_id", "key"], how="left")
        .with_columns(pl.col("exact_match").fill_null(False))
        .sort(["question_id", "occurrences", "first"], descending=[False, True, False])
        .select(list(CANDIDATE_SCHEMA)).cast(CANDIDATE_SCHEMA)
    )


def normalized(values: pl.Series) -> pl.Series:
    """:func:`normalize` of each value (null stays null), computed once per distinct value:
    the same answers recur across a question's passages and the labelers."""
    distinct = values.drop_nulls().unique()
    return values.replace_strict(distinct, [normalize(v) for v in distinct], default=None, return_dtype=pl.String)


def gold_keys(questions: pl.DataFrame) -> pl.DataFrame:
    """``question_id`` and ``key``: each question's answers (``aliases``) normalized, blank ones
    left out. An answer whose normalized ``key`` is among its question's is an
    :func:`exact_match`."""
    golds = questions.select("question_id", "aliases").explode("aliases").drop_nulls("aliases")
    return (golds.select("question_id", normalized(golds["aliases"]).alias("key"))
            .filter(pl.col("key") != "").unique())
