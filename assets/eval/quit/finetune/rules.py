"""QUIT's fine-tuning data (section 5.2, Tables 10-12) as pure functions: which passages a
train question is trained on as positives, and which as negatives.

The rule, and where it departs from the authors' ``experiments/finetuning`` scripts:

- **Questions** are the train split only; the **negative pool** is the passages of train
  questions only, as the scripts read ``index/train``: no dev or test passage is ever
  trained on.
- **Positives** are the question's label-2 passages in a seeded shuffle, then its label-1
  passages in a seeded shuffle (:func:`ordered_positives`); the first ``positives`` are
  kept. Label 1 is relevant in the qrels (Hit and Recall count it, nDCG gains 1), so it is a
  weaker positive, used after label 2 runs out and never a negative. The scripts sample any
  own passage, with no preference for label 2. A model of count n trains on each question's
  first n pairs (:func:`first_positives`), so one table, drawn for the largest count, serves
  the whole sweep of counts (Tables 10-12's 1 to 200).
- **Negatives**, one per positive, are BM25's hard negatives (:func:`bm25_negatives`):
  passages of another train question that BM25 ranks high for this one, cycled when fewer
  than the positives. The scripts draw a random passage of a random other train question
  instead (:func:`random_negatives`): that is the ``random`` setting, and the fallback of a
  question BM25 finds no negative for. Either way a passage in the question's own qrels, or
  of a question with the same normalized answer, is never a negative: it would teach the
  model to push away a passage that answers the question.
- A question without a positive, or with no negative at all (a train split of one
  question), is rejected with the reason.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Collection, Mapping, Sequence

import polars as pl

from assets.common.rejects import Rejects
from assets.common.text import normalize

TRAIN = "train"
BM25, RANDOM = "bm25", "random"
NEGATIVE_SOURCES = (BM25, RANDOM)

# One row per (positive, negative) pair; ``pair`` numbers a question's pairs from 0 in the
# order its positives were drawn, and ``negative_rank`` is the negative's BM25 rank (null
# for a random one).
PAIRS_SCHEMA = {
    "question_id": pl.String,
    "question": pl.String,
    "pair": pl.Int32,
    "positive_id": pl.String,
    "positive": pl.String,
    "positive_label": pl.Int8,
    "negative_id": pl.String,
    "negative": pl.String,
    "negative_question_id": pl.String,
    "negative_source": pl.String,
    "negative_rank": pl.Int32,
}

REJECTS = Rejects(("question_id",))
NO_POSITIVE, NO_NEGATIVE = "no_positive", "no_negative"
REASONS = (NO_POSITIVE, NO_NEGATIVE)


@dataclasses.dataclass(frozen=True)
class Negative:
    passage_id: str
    question_id: str
    source: str
    rank: int | None = None


def ordered_positives(qrels_of_question: Mapping[str, int], seed: int, question_id: str) -> list[tuple[str, int]]:
    """``(passage_id, label)`` of the question's relevant passages: label 2 in a seeded
    shuffle, then label 1 in a seeded shuffle; label 0 is not a positive. The generator is
    seeded by the question alone, so adding or removing another question never reorders
    this one's, and the passages are sorted first, so neither does the qrels' row order."""
    rng = random.Random(f"{seed}/{question_id}")
    ordered = []
    for label in (2, 1):
        ids = sorted(p for p, got in qrels_of_question.items() if got == label)
        rng.shuffle(ids)
        ordered += [(p, label) for p in ids]
    return ordered


def _other_question(question_id: str, answer_of: Mapping[str, str]):
    """Whether a question may lend its passages to ``question_id`` as negatives: not the
    question itself, nor one whose normalized answer is the same (its passages point at the
    same answer)."""
    answer = answer_of.get(question_id, "")
    return lambda other: other != question_id and not (answer and answer_of.get(other) == answer)


def bm25_negatives(
    hits: Sequence[str],
    question_id: str,
    qrels_of_question: Collection[str],
    owner: Mapping[str, str],
    answer_of: Mapping[str, str],
    n: int,
) -> list[Negative]:
    """The first ``n`` of the question's BM25 hits (passage ids, best first; rank = position
    + 1) that belong to another question of the pool (``owner``: passage -> question), are
    not in the question's qrels, and are not of a question with the same normalized answer
    (``answer_of``: question -> normalized answer)."""
    other = _other_question(question_id, answer_of)
    found = []
    for rank, pid in enumerate(hits, start=1):
        if len(found) == n:
            break
        if pid in owner and pid not in qrels_of_question and other(owner[pid]):
            found.append(Negative(pid, owner[pid], BM25, rank))
    return found


def random_negatives(
    question_id: str,
    qrels_of_question: Collection[str],
    pool: Mapping[str, Sequence[str]],
    answer_of: Mapping[str, str],
    seed: int,
    n: int,
) -> list[Negative]:
    """``n`` negatives as the published scripts draw them: each a random passage of a random
    other question of the pool (``pool``: question -> its passage ids), with the same
    exclusions as :func:`bm25_negatives`; empty when no question can lend one. Drawn with
    replacement, from a generator of its own per question, so that the positives' order
    does not depend on the negatives' setting."""
    other = _other_question(question_id, answer_of)
    lenders = [q for q in sorted(pool) if other(q)]
    rng = random.Random(f"{seed}/{question_id}/negatives")
    drawn = []
    while lenders and len(drawn) < n:
        q = rng.choice(lenders)
        passages = sorted(p for p in pool[q] if p not in qrels_of_question)
        if passages:
            drawn.append(Negative(rng.choice(passages), q, RANDOM))
        else:
            # Every passage of q is labeled for this question: q has none to lend.
            lenders.remove(q)
    return drawn


def train_passages(questions: pl.DataFrame, corpus: pl.DataFrame) -> pl.DataFrame:
    """The negative pool: the passages of the train questions, the only passages trained on."""
    train = questions.filter(pl.col("split") == TRAIN)["question_id"].to_list()
    return corpus.filter(pl.col("question_id").is_in(train))


def training_pairs(
    questions: pl.DataFrame,
    corpus: pl.DataFrame,
    qrels: pl.DataFrame,
    hits: Mapping[str, Sequence[str]],
    *,
    positives: int,
    negatives: str,
    seed: int,
) -> tuple[pl.DataFrame, list[dict]]:
    """The pairs table (:data:`PAIRS_SCHEMA`) of the train questions in ``questions``
    (``question_id``, ``split``, ``question``, ``answer``), in their table order, and the
    rejects rows of those without a positive or a negative. ``corpus`` has ``passage_id``,
    ``question_id`` and ``text``; ``qrels`` has ``question_id``, ``passage_id`` and
    ``label``; ``hits`` maps a question to its BM25 hits over the train passages (read only
    under ``negatives: bm25``). A question's i-th positive is paired with its i-th negative."""
    if negatives not in NEGATIVE_SOURCES:
        raise ValueError(f"negatives must be one of {NEGATIVE_SOURCES}, not {negatives!r}")
    if positives < 1:
        raise ValueError(f"positives must be at least 1, not {positives}")
    train = questions.filter(pl.col("split") == TRAIN)
    passages = train_passages(questions, corpus)
    text = dict(zip(passages["passage_id"], passages["text"]))
    owner = dict(zip(passages["passage_id"], passages["question_id"]))
    pool = {q: g["passage_id"].to_list() for (q,), g in passages.group_by("question_id")}
    answer_of = {q: normalize(a) if a else "" for q, a in zip(train["question_id"], train["answer"])}
    labels: dict[str, dict[str, int]] = {}
    for qid, pid, label in qrels.select("question_id", "passage_id", "label").iter_rows():
        labels.setdefault(qid, {})[pid] = label
    rows, rejects = [], []
    for q in train.select("question_id", "question").iter_rows(named=True):
        qid, own = q["question_id"], labels.get(q["question_id"], {})
        # Only a train passage is trained on, even where a qrel points elsewhere.
        relevant = {p: label for p, label in own.items() if label >= 1 and p in text}
        chosen = ordered_positives(relevant, seed, qid)[:positives]
        if not chosen:
            rejects.append(
                REJECTS.row(qid, "positives", NO_POSITIVE, "no passage of label 1 or 2 among the train passages", q)
            )
            continue
        found = bm25_negatives(hits.get(qid, ()), qid, own, owner, answer_of, len(chosen)) if negatives == BM25 else []
        found = found or random_negatives(qid, own, pool, answer_of, seed, len(chosen))
        if not found:
            rejects.append(
                REJECTS.row(
                    qid,
                    "negatives",
                    NO_NEGATIVE,
                    "no other train question with a different answer has a passage to lend",
                    q,
                )
            )
            continue
        for i, ((pid, label), neg) in enumerate(zip(chosen, itertools.cycle(found))):
            rows.append(
                {
                    "question_id": qid,
                    "question": q["question"],
                    "pair": i,
                    "positive_id": pid,
                    "positive": text[pid],
                    "positive_label": label,
                    "negative_id": neg.passage_id,
                    "negative": text[neg.passage_id],
                    "negative_question_id": neg.question_id,
                    "negative_source": neg.source,
                    "negative_rank": neg.rank,
                }
            )
    return pl.DataFrame(rows, schema=PAIRS_SCHEMA), rejects


def first_positives(pairs: pl.DataFrame, count: int) -> pl.DataFrame:
    """The pairs a model of ``count`` positives per question trains on: each question's
    first ``count`` pairs of a table drawn for that many or more. Positives are taken in a
    fixed order and negatives drawn one after another, so these are the very pairs a table
    drawn for ``count`` alone holds."""
    if count < 1:
        raise ValueError(f"positives must be at least 1, not {count}")
    return pairs.filter(pl.col("pair") < count)
