import polars as pl

from assets.eval import readers
from resources.llm import CallStats

CORPUS = pl.DataFrame({
    "passage_id": ["p1", "p2", "p3", "p4"],
    "question_id": ["q"] * 4,
    "num_hints": [1, 2, 3, 1],
    "text": ["It is tall.", "It is tall. It is in Nepal.", "It is tall. It is in Nepal. It was climbed in 1953.", "It is cold."],
})
RUNS = pl.DataFrame({
    "question_id": ["q"] * 4, "passage_id": ["p3", "p1", "p4", "p2"], "rank": [1, 2, 3, 4],
    "score": [4.0, 3, 2, 1], "system": ["bm25"] * 4,
})
QUESTIONS = pl.DataFrame({"question_id": ["q"], "question": ["Which mountain?"], "answers": [["Mount Everest", "Everest"]]})


def test_items_cover_every_k_and_strategy():
    items = readers.reader_items(RUNS, CORPUS)
    assert len(items) == 3 * 2
    by = {(i["k"], i["strategy"]): i["context"] for i in items}
    assert by[(1, "union_norm")] == CORPUS["text"][2]
    # top-3 = p3, p1, p4: the union keeps each sentence once
    assert by[(3, "union_norm")] == "It is tall. It is in Nepal. It was climbed in 1953. It is cold."


def test_read_grades_against_the_pool(scripted_llm):
    stats = CallStats()
    out = readers.read(readers.reader_items(RUNS, CORPUS), QUESTIONS, scripted_llm, "smollm2", "smollm2", stats)
    assert out.height == 6
    # the scripted reader answers "Mount Everest" from contexts with 3+ sentences
    got = {(r["k"], r["strategy"]): r["em"] for r in out.iter_rows(named=True)}
    assert got[(1, "union_norm")] and got[(3, "union_freq")]
    assert out["correct"].to_list() == out["em"].to_list()
    assert stats.calls == 6 and stats.errors == 0


def test_optimal_and_table_8_shape():
    per_passage = pl.DataFrame({"question_id": ["q", "q", "r"], "passage_id": ["p1", "p2", "p5"],
                                "em": [False, True, False], "correct": [False, True, False]})
    qrels = pl.DataFrame({"question_id": ["q", "q", "r"], "passage_id": ["p1", "p2", "p5"], "label": [1, 2, 1]})
    best = readers.optimal(per_passage, qrels, "smollm2")
    assert dict(zip(best["question_id"], best["em"])) == {"q": True, "r": False}
    answers = pl.DataFrame({"question_id": ["q", "r"], "reader": ["smollm2"] * 2, "system": ["bm25"] * 2,
                            "k": pl.Series([1, 1], dtype=pl.Int32), "strategy": ["union_norm"] * 2,
                            "em": [True, False], "correct": [True, True]})
    table = readers.em_table(answers, best)
    assert table["system"].to_list() == ["Optimal", "bm25"]
    assert table["em"].to_list() == [0.5, 0.5] and table["judge"].to_list() == [0.5, 1.0]
