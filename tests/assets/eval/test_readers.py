import polars as pl
import pytest

from assets.eval.quit import steps as readers
from resources.llm import CallStats

H = ["It is tall.", "It is in Nepal", "It was first climbed in 1953.", "It is cold.", "Its peak is on U.S. Army maps."]
CORPUS = pl.DataFrame(
    {
        "passage_id": ["q_11100_012", "q_10000_0", "q_00010_3", "q_00011_43", "doc9"],
        "question_id": ["q"] * 4 + ["r"],
        "num_hints": [3, 1, 1, 2, 2],
        "text": [f"{H[0]} {H[1]} {H[2]}", H[0], H[3], f"{H[4]} {H[3]}", "Mount K2 is tall. It is in Pakistan."],
    }
)
RUNS = pl.DataFrame(
    {
        "question_id": ["q"] * 6,
        "passage_id": ["q_11100_012", "q_10000_0", "q_00010_3", "missing", "q_00011_43", "doc9"],
        "rank": [1, 2, 3, 4, 5, 6],
        "score": [6.0, 5, 4, 3, 2, 1],
        "system": ["bm25"] * 6,
    }
)
QUESTIONS = pl.DataFrame(
    {"question_id": ["q"], "question": ["Which mountain?"], "answers": [["mount everest", "Everest"]], "hints": [H]}
)
S1, S2 = "Mount K2 is tall.", "It is in Pakistan."


def test_contexts_are_made_of_the_passages_hints():
    items, split = readers.reader_items(RUNS, CORPUS, QUESTIONS)
    assert len(items) == 3 * 2 and split == ["doc9"]
    by = {(i["k"], i["strategy"]): i["context"] for i in items}
    assert by[(1, "union_norm")] == by[(1, "union_freq")] == CORPUS["text"][0]
    # top-3 = H0 H1 H2 | H0 | H3: each hint once
    assert by[(3, "union_norm")] == " ".join([H[0], H[1], H[2], H[3]])
    # top-5 (the missing passage skipped) adds H4 H3 at rank 4 and doc9's two sentences at rank 5.
    # score = 3/5 * sum 1/rank + 2/5 * sum 1/pos:
    # H0 (1,1)+(2,1) = 1 + 7/10 = 17/10;  H1 (1,2) = 4/5;  H2 (1,3) = 3/5+2/15 = 11/15
    # H3 (3,1)+(4,2) = 3/5 + (3/20+1/5) = 19/20;  H4 (4,1) = 3/20+2/5 = 11/20
    # S1 (5,1) = 3/25+2/5 = 13/25;  S2 (5,2) = 3/25+1/5 = 8/25
    assert by[(5, "union_freq")] == " ".join([H[0], H[3], H[1], H[2], H[4], S1, S2])
    assert by[(5, "union_norm")] == " ".join([H[0], H[1], H[2], H[3], H[4], S1, S2])
    capped = {(i["k"], i["strategy"]): i["context"] for i in readers.reader_items(RUNS, CORPUS, QUESTIONS, top=2)[0]}
    assert capped[(5, "union_freq")] == f"{H[0]} {H[3]}" and capped[(5, "union_norm")] == by[(5, "union_norm")]


def test_without_hints_every_passage_is_cut_into_sentences():
    items, split = readers.reader_items(RUNS, CORPUS, None, cutoffs=(1,))
    assert split == ["q_11100_012"] and items[0]["context"] == CORPUS["text"][0]


@pytest.mark.parametrize(
    "raw, cleaned",
    [
        ("  Paris \n", "Paris"),
        ("Let me think.\n(Paris", "Paris"),  # the last line, one leading "(" dropped
        ("(Paris)", "Paris)"),  # the closing one stays
        ("", "NO ANSWER"),
        ("I have No answer for that", "NO ANSWER"),
    ],
)
def test_the_released_cleaning(raw, cleaned):
    assert readers.released_answer(raw) == cleaned


def test_raw_em_is_case_sensitive_and_literal():
    assert readers.raw_exact_match("Paris", ["Paris"]) and not readers.raw_exact_match("paris", ["Paris"])
    assert not readers.raw_exact_match("Paris.", ["Paris"]) and not readers.raw_exact_match(None, ["Paris"])
    frame = readers.with_raw_em(pl.DataFrame({"question_id": ["q", "q"], "raw": ["Everest", None]}), QUESTIONS)
    assert frame["em_raw"].to_list() == [True, False]


def test_read_grades_against_the_pool(scripted_llm):
    stats = CallStats()
    items, _ = readers.reader_items(RUNS, CORPUS, QUESTIONS)
    out = readers.read(items, QUESTIONS, scripted_llm.named("smollm2"), scripted_llm.named("smollm2"), stats)
    assert out.height == 6
    # the scripted reader answers "Mount Everest" from contexts with 3+ periods: k=3 and k=5
    # (k=1 has two: the second hint has no final period)
    got = {(r["k"], r["strategy"]): (r["em"], r["em_raw"]) for r in out.iter_rows(named=True)}
    # normalized EM matches the pool's "mount everest"; the raw, case-sensitive one does not
    assert got == {(1, s): (False, False) for s in ("union_norm", "union_freq")} | {
        (k, s): (True, False) for k in (3, 5) for s in ("union_norm", "union_freq")
    }
    assert out["correct"].to_list() == out["em"].to_list()
    assert stats.calls == 6 and stats.errors == 0


RELEVANT = pl.DataFrame(
    {
        "passage_id": ["q_10000_0", "q_01100_12", "q_11010_013", "r_10000_0", "r_01000_1"],
        "question_id": ["q", "q", "q", "r", "r"],
        "label": [1, 2, 2, 1, 2],
        "num_hints": [1, 2, 3, 1, 1],
        # the scripted reader answers from three sentences or more: only q's three-hint passage
        "text": [H[0], "It is cold. It is far", "It is tall. It is cold. It was first climbed in 1953.", "Far", "Cold"],
    }
)
TWO = pl.DataFrame(
    {
        "question_id": ["q", "r"],
        "question": ["Which mountain?", "Which river?"],
        "answers": [["Mount Everest"], ["Nile"]],
        "hints": [H, H],
    }
)


def test_the_optimal_bound_stops_reading_a_question_its_first_passage_answers(scripted_llm):
    reader = scripted_llm.named("smollm2")
    one, every = CallStats(), CallStats()
    by_round = readers.read_relevant(RELEVANT, TWO, reader, reader, one, per_round=1)
    at_once = readers.read_relevant(RELEVANT, TWO, reader, reader, every, per_round=10)
    # label 2 with the most hints first: q's answering passage is its first and q stops
    # there; r, never answered, is read whole
    assert sorted(by_round["passage_id"]) == ["q_11010_013", "r_01000_1", "r_10000_0"]
    assert sorted(at_once["passage_id"]) == sorted(RELEVANT["passage_id"])
    assert one.calls == 3 and every.calls == 5
    qrels = RELEVANT.select("question_id", "passage_id", "label")
    assert (
        readers.optimal(by_round, qrels, "smollm2", TWO)
        .sort("question_id")
        .equals(readers.optimal(at_once, qrels, "smollm2", TWO).sort("question_id"))
    )
    best = readers.optimal(by_round, qrels, "smollm2", TWO).sort("question_id")
    assert best["em"].to_list() == best["em_raw"].to_list() == best["correct"].to_list() == [True, False]


def test_a_question_answered_by_one_measure_only_is_read_on(scripted_llm):
    """The pool spells the answer in lower case: normalized EM holds from the first passage,
    the release's raw EM never, so the question is read whole."""
    stats = CallStats()
    lower = TWO.with_columns(pl.Series("answers", [["mount everest"], ["nile"]]))
    out = readers.read_relevant(
        RELEVANT, lower, scripted_llm.named("smollm2"), scripted_llm.named("smollm2"), stats, per_round=1
    )
    assert out.height == RELEVANT.height and stats.calls == RELEVANT.height
    assert out.filter(pl.col("em"))["passage_id"].to_list() == ["q_11010_013"] and not out["em_raw"].any()


def test_optimal_and_table_8_shape():
    per_passage = pl.DataFrame(
        {
            "question_id": ["q", "q", "r"],
            "passage_id": ["p1", "p2", "p5"],
            "em": [False, True, False],
            "em_raw": [True, False, False],
            "correct": [False, True, False],
        }
    )
    qrels = pl.DataFrame({"question_id": ["q", "q", "r"], "passage_id": ["p1", "p2", "p5"], "label": [1, 2, 1]})
    best = readers.optimal(per_passage, qrels, "smollm2", TWO)
    assert dict(zip(best["question_id"], best["em"])) == {"q": True, "r": False}
    assert dict(zip(best["question_id"], best["em_raw"])) == {"q": True, "r": False}
    answers = pl.DataFrame(
        {
            "question_id": ["q", "r"],
            "reader": ["smollm2"] * 2,
            "system": ["bm25"] * 2,
            "k": pl.Series([1, 1], dtype=pl.Int32),
            "strategy": ["union_norm"] * 2,
            "em": [True, False],
            "em_raw": [False, False],
            "correct": [True, True],
        }
    )
    table = readers.em_table(answers, best)
    assert table["system"].to_list() == ["Optimal", "bm25"]
    # Optimal: q matched (1 of 2) both ways; bm25: em 1 of 2, em_raw 0 of 2, judge 2 of 2
    assert table["em"].to_list() == [0.5, 0.5] and table["em_raw"].to_list() == [0.5, 0.0]
    assert table["judge"].to_list() == [0.5, 1.0]


def test_the_optimal_bound_counts_every_evaluated_question():
    """As the release's results/rag/rag.py divides by every test question: a question with
    no relevant passage is in the bound's denominator and never answered (1 of 2, not 1 of 1)."""
    per_passage = pl.DataFrame(
        {"question_id": ["q"], "passage_id": ["p1"], "em": [True], "em_raw": [True], "correct": [True]}
    )
    qrels = pl.DataFrame({"question_id": ["q"], "passage_id": ["p1"], "label": [2]})
    best = readers.optimal(per_passage, qrels, "smollm2", TWO).sort("question_id")
    assert best["question_id"].to_list() == ["q", "r"]
    assert best["em"].to_list() == best["em_raw"].to_list() == best["correct"].to_list() == [True, False]
    answers = best.with_columns(
        pl.lit("bm25").alias("system"), pl.lit(1, pl.Int32).alias("k"), pl.lit("union_norm").alias("strategy")
    )
    table = readers.em_table(answers, best)
    assert table["system"].to_list() == ["Optimal", "bm25"] and table["em"].to_list() == [0.5, 0.5]


def test_table_8_shares_per_split_count_each_splits_questions():
    questions = pl.DataFrame({"question_id": ["a", "b", "c"], "split": ["test", "test", "train"]})
    setting = {"reader": "smollm2", "system": "bm25", "k": 1, "strategy": "union_norm"}
    bound = {"reader": "smollm2", "system": readers.OPTIMAL_SYSTEM, "k": None, "strategy": None}
    answers = pl.DataFrame(
        [
            # bm25 answers a only, by every measure; the bound answers a and b by EM, c by the judge alone
            {**setting, "question_id": "a", "em": True, "em_raw": True, "correct": True},
            {**setting, "question_id": "b", "em": False, "em_raw": False, "correct": False},
            {**setting, "question_id": "c", "em": False, "em_raw": False, "correct": False},
            {**bound, "question_id": "a", "em": True, "em_raw": False, "correct": True},
            {**bound, "question_id": "b", "em": True, "em_raw": False, "correct": True},
            {**bound, "question_id": "c", "em": False, "em_raw": False, "correct": True},
        ],
        schema_overrides={"k": pl.Int32},
    )
    table = readers.em_by_split(answers, questions)
    rows = {(r["split"], r["system"]): r for r in table.iter_rows(named=True)}
    assert set(rows) == {(s, n) for s in ("all", "test", "train") for n in ("Optimal", "bm25")}
    assert {s: rows[s, "bm25"]["questions"] for s in ("all", "test", "train")} == {"all": 3, "test": 2, "train": 1}
    assert [rows[s, "bm25"]["em"] for s in ("all", "test", "train")] == [pytest.approx(1 / 3), 0.5, 0.0]
    assert [rows[s, "Optimal"]["em"] for s in ("all", "test", "train")] == [pytest.approx(2 / 3), 1.0, 0.0]
    assert [rows[s, "Optimal"]["judge"] for s in ("all", "test", "train")] == [1.0, 1.0, 1.0]
    # each split's rows as em_table gives them: Optimal first
    assert table.filter(pl.col("split") == "test")["system"].to_list() == ["Optimal", "bm25"]


def test_the_oracle_retrievers_rows_are_told_apart_by_their_retriever():
    scores = pl.DataFrame({"system": ["bm25", "bm25+upr", "oracle", "oracle+upr", "oracle2+rankgpt"], "x": range(5)})
    retrieved, oracle = readers.by_oracle(scores, ["oracle", "oracle2"])
    assert retrieved["system"].to_list() == ["bm25", "bm25+upr"]
    assert oracle["system"].to_list() == ["oracle", "oracle+upr", "oracle2+rankgpt"]
    # a reranker alias may hold a "+": the retriever is what precedes the first
    assert readers.reranked_labels("oracle+a+b", ["oracle"]) == {
        "system": "oracle+a+b",
        "retriever": "oracle",
        "reranker": "a+b",
        "oracle": True,
    }
    assert not readers.reranked_labels("bm25+upr", ["oracle"])["oracle"]


def test_figure_6_draws_the_retrievers_alone_and_the_oracle_with_each_reranker():
    runs = pl.DataFrame({"system": ["bm25", "oracle"], "passage_id": ["p", "q"]})
    reranked = pl.DataFrame({"system": ["bm25+upr", "oracle+upr", "oracle+rankgpt"], "passage_id": ["p", "q", "q"]})
    series = readers.figure_6_runs(runs, reranked, ["oracle"])
    assert series["system"].to_list() == ["bm25", "oracle+upr", "oracle+rankgpt"]


def test_a_metrics_table_without_rows_keeps_its_columns():
    empty = readers.metrics_table([], readers.RERANKED_KEYS, ["mrr"])
    assert empty.schema == pl.Schema(
        {**readers.RERANKED_KEYS, "split": pl.String, "questions": pl.Int64, "mrr": pl.Float64}
    )
    row = {"retriever": "bm25", "split": "test", "questions": 2, "mrr": 0.5}
    assert readers.metrics_table([row], {"retriever": pl.String}, ["mrr"]).row(0, named=True) == row
