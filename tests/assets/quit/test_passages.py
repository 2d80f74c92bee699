import math
from itertools import permutations

import polars as pl

from assets.quit.rules import ORDERS, PASSAGES_PER_QUESTION, passage_batches, passages_frame


def questions(n=3):
    return pl.DataFrame(
        {"question_id": [f"q{i}" for i in range(n)], "hints": [[f"Q{i} hint {j}." for j in range(5)] for i in range(n)]}
    )


def test_325_ordered_subsets():
    assert PASSAGES_PER_QUESTION == sum(math.comb(5, k) * math.factorial(k) for k in range(1, 6)) == 325
    assert set(ORDERS) == {p for k in range(1, 6) for p in permutations(range(5), k)}


def test_passages_encode_hint_order_in_ids_and_text():
    frame = passages_frame(questions(3))
    assert frame.height == 3 * 325
    assert frame["passage_id"].n_unique() == frame.height
    row = frame.filter(pl.col("passage_id") == "q1_10100_20").row(0, named=True)
    assert row["text"] == "Q1 hint 2. Q1 hint 0."
    assert row["num_hints"] == 2 and row["hint_order"] == "20" and row["question_id"] == "q1"
    # each question's passages are contiguous
    assert frame["question_id"].to_list() == [f"q{i}" for i in range(3) for _ in range(325)]


def test_batches_agree_with_a_naive_loop():
    qs = questions(5)
    fast = pl.concat(list(passage_batches(qs, batch_questions=2)))
    naive = []
    for qid, hints in qs.iter_rows():
        for order in ORDERS:
            mask = "".join("1" if i in order else "0" for i in range(5))
            naive.append((f"{qid}_{mask}_{''.join(map(str, order))}", " ".join(hints[i] for i in order)))
    assert list(zip(fast["passage_id"], fast["text"])) == naive


def test_questions_without_five_hints_are_an_error():
    bad = pl.DataFrame({"question_id": ["x"], "hints": [["a", "b"]]})
    try:
        passages_frame(bad)
    except ValueError as e:
        assert "x" in str(e)
    else:
        raise AssertionError("expected an error")
