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

from assets.common.text import contains_phrase, exact_match, normalize, tokens
from resources.llm import ParseError

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


# Li and Roth's question taxonomy: each coarse class and its fine classes, written as one string
# of codes.
TAXONOMY = {
    coarse: set(fine.split())
    for coarse, fine in {
        "ABBR": "abb exp",
        "DESC": "def desc manner reason",
        "ENTY": "animal body color cremat currency dismed event food instru lang letter other plant product religion sport "
        "substance symbol techmeth termeq veh word",
        "HUM": "desc gr ind title",
        "LOC": "city country mount other state",
        "NUM": "code count date dist money ord other perc period speed temp volsize weight",
    }.items()
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
    aliases = {
        "HUMAN": "HUM",
        "LOCATION": "LOC",
        "ENTITY": "ENTY",
        "NUMERIC": "NUM",
        "DESCRIPTION": "DESC",
        "ABBREVIATION": "ABBR",
    }
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


def assign_splits(answerable: dict[str, bool | None], train_size: int, test_size: int, seed: int) -> dict[str, str]:
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


LABEL_SCHEMA = {
    "passage_id": pl.String,
    "question_id": pl.String,
    "num_hints": pl.Int8,
    "labelers": pl.UInt32,
    "label": pl.Int8,
    "error": pl.String,
}


def labels_and_pool(
    answers: pl.DataFrame, passages: pl.DataFrame, questions: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Passage labels and each question's pool of valid answers (gold, aliases and every
    generated answer judged correct).

    A passage is labeled 2 if any labeler was correct, else 1, once every labeler's answer on
    it is decided. A passage with an undecided answer (a failed call, ``steps._graded``) gets
    no label (null) and an ``error`` naming each failed call. A rerun asks only those calls.
    """
    # The failures are joined on the few undecided answers alone: a string aggregation over
    # all 7.2M answers of the papers' size cost more memory than the rest of the step.
    failure = pl.format("{}: {}", "model", pl.coalesce("error", pl.format("judge: {}", "judge_error")))
    errors = (
        answers.filter(pl.col("correct").is_null())
        .group_by("passage_id")
        .agg(failure.drop_nulls().str.join("; ").alias("error"))
    )
    decided = (
        answers.group_by("passage_id")
        .agg(pl.col("correct").any().alias("any_correct"), pl.col("model").n_unique().alias("labelers"))
        .join(errors, on="passage_id", how="left")
        .with_columns(pl.when(pl.col("error") != "").then(pl.col("error")).alias("error"))
    )
    labels = (
        passages.select("passage_id", "question_id", "num_hints")
        .join(decided, on="passage_id", how="left")
        .with_columns(
            pl.when(pl.col("error").is_null())
            .then(pl.when(pl.col("any_correct")).then(2).otherwise(1))
            .cast(pl.Int8)
            .alias("label")
        )
        .select(list(LABEL_SCHEMA))
    )
    generated = (
        answers.filter(pl.col("correct") & pl.col("answer").is_not_null())
        .group_by("question_id")
        .agg(pl.col("answer").unique().sort().alias("generated_correct"))
    )
    pool = (
        questions.select("question_id", "answer", "aliases")
        .join(generated, on="question_id", how="left")
        .with_columns(pl.col("generated_correct").fill_null([]))
        .with_columns(
            pl.struct("aliases", "generated_correct")
            .map_elements(
                lambda s: _merge_answers(s["aliases"], s["generated_correct"]), return_dtype=pl.List(pl.String)
            )
            .alias("answer_pool")
        )
    )
    return labels, pool


def _merge_answers(golds: list[str], extra: list[str]) -> list[str]:
    seen, out = set(), []
    for a in list(golds) + list(extra):
        k = normalize(a)
        if k and k not in seen:
            seen.add(k)
            out.append(a)
    return out


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
    return (
        pl.concat(list(passage_batches(questions)), rechunk=True)
        if questions.height
        else pl.from_arrow(PASSAGE_SCHEMA.empty_table())
    )


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
        "question_id", "answer", "correct"
    )
    groups = (
        given.with_columns(normalized(given["answer"]).alias("key"))
        .with_row_index("row")
        .group_by("question_id", "key")
        .agg(
            pl.col("answer").first().alias("candidate"),
            pl.len().alias("occurrences"),
            pl.col("correct").fill_null(False).any().alias("judged_correct"),
            pl.col("row").first().alias("first"),
        )
    )
    return (
        groups.join(asked, on="question_id")
        .join(
            gold_keys(questions).with_columns(pl.lit(True).alias("exact_match")), on=["question_id", "key"], how="left"
        )
        .with_columns(pl.col("exact_match").fill_null(False))
        .sort(["question_id", "occurrences", "first"], descending=[False, True, False])
        .select(list(CANDIDATE_SCHEMA))
        .cast(CANDIDATE_SCHEMA)
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
    return golds.select("question_id", normalized(golds["aliases"]).alias("key")).filter(pl.col("key") != "").unique()


# The label update of 3.2.4 from the human verification decisions (``{question_id: {"accepted":
# [...], "rejected": [...]}}``), computed on columns: 7.2M answers at the papers' size.


def decided(decisions: dict[str, dict], kind: str) -> dict[str, set[str]]:
    """Each question's ``kind`` answers (``accepted`` or ``rejected``), normalized."""
    return {q: {normalize(a) for a in d.get(kind, [])} for q, d in decisions.items()}


def relabeled(
    decisions: dict[str, dict], answers: pl.DataFrame, labels: pl.DataFrame, questions: pl.DataFrame
) -> tuple[pl.DataFrame, int]:
    """The passage labels after the decisions, and how many went from 2 to 1."""
    accepted, rejected = decided(decisions, "accepted"), decided(decisions, "rejected")
    # An answer stays correct when it matches a gold answer; otherwise, for a question with
    # decisions, when it was accepted, or judged correct and not rejected; for one without,
    # when it was judged correct.
    verdicts = (
        pl.DataFrame(
            [(q, key, True, False) for q, keys in accepted.items() for key in keys]
            + [(q, key, False, True) for q, keys in rejected.items() for key in keys],
            schema={"question_id": pl.String, "key": pl.String, "accepted": pl.Boolean, "rejected": pl.Boolean},
            orient="row",
        )
        .group_by("question_id", "key")
        .agg(pl.col("accepted").any(), pl.col("rejected").any())
    )
    given = answers.select("passage_id", "question_id", "answer", "correct")
    judged_correct = pl.col("correct").fill_null(False)
    any_correct = (
        given.with_columns(normalized(given["answer"]).alias("key"))
        .join(gold_keys(questions).with_columns(pl.lit(True).alias("exact")), on=["question_id", "key"], how="left")
        .join(verdicts, on=["question_id", "key"], how="left")
        .select(
            "passage_id",
            pl.when(pl.col("answer").is_null())
            .then(False)
            .when(pl.col("exact").fill_null(False))
            .then(True)
            .when(~pl.col("question_id").is_in(list(decisions)))
            .then(judged_correct)
            .otherwise(pl.col("accepted").fill_null(False) | (judged_correct & ~pl.col("rejected").fill_null(False)))
            .alias("correct"),
        )
        .group_by("passage_id")
        .agg(pl.col("correct").any().alias("ok"))
    )
    # A passage left without a label by a failed call stays without one: no decision fills it.
    new_labels = (
        labels.join(any_correct, on="passage_id", how="left")
        .with_columns(
            pl.when(pl.col("label").is_not_null())
            .then(pl.when(pl.col("ok")).then(2).otherwise(1))
            .cast(pl.Int8)
            .alias("label")
        )
        .drop("ok")
    )
    demoted = int(
        labels.join(new_labels.select("passage_id", pl.col("label").alias("new")), on="passage_id")
        .filter((pl.col("label") == 2) & (pl.col("new") == 1))
        .height
    )
    return new_labels, demoted


def revised_pools(decisions: dict[str, dict], pools: pl.DataFrame, questions: pl.DataFrame) -> pl.DataFrame:
    """The answer pools after the decisions: a rejected answer leaves its question's pool
    unless it matches a gold answer, and accepted answers not yet in it join it."""
    golds = {r["question_id"]: r["aliases"] for r in questions.select("question_id", "aliases").iter_rows(named=True)}
    rejected = decided(decisions, "rejected")

    def pool_for(qid: str, pool: list[str]) -> list[str]:
        if qid not in decisions:
            return pool
        kept = [a for a in pool if exact_match(a, golds.get(qid, [])) or normalize(a) not in rejected[qid]]
        extra = [a for a in decisions[qid].get("accepted", []) if normalize(a) not in {normalize(k) for k in kept}]
        return kept + extra

    return pools.with_columns(
        pl.struct("question_id", "answer_pool")
        .map_elements(lambda s: pool_for(s["question_id"], list(s["answer_pool"])), return_dtype=pl.List(pl.String))
        .alias("answer_pool")
    )


def newly_accepted(decisions: dict[str, dict], pools: pl.DataFrame, questions: pl.DataFrame) -> list[str]:
    """The questions with an accepted answer their pool did not hold."""
    asked = set(questions["question_id"])
    accepted = decided(decisions, "accepted")
    pooled = {
        q: {normalize(a) for a in pool or [] if a is not None}
        for q, pool in pools.select("question_id", "answer_pool").iter_rows()
    }
    return [q for q in decisions if q in asked and accepted[q] - pooled.get(q, set())]
