"""Hint-permutation passages: every ordered non-empty subset of a question's 5 hints.

sum_{k=1..5} C(5,k) k! = 325 passages per question. A passage id encodes its hints and their order
as the public release does: ``<question_id>_<mask>_<order>``, where the mask has one 0/1
digit per hint (convergence rank order) and the order lists the 0-based ranks in passage
order (``q_10100_20`` = hint 2 then hint 0).

Texts are built column-wise with pyarrow (one vectorised join per permutation over a batch of
questions), so 2.4M passages are produced in seconds and streamed in bounded memory.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from itertools import permutations

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

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
