import math

import numpy as np
import polars as pl
import pytest

from assets.common import parsing
from assets.quit import rules
from resources.llm import ParseError
from resources.storage import StoredTable, write_parquet_batches


@pytest.mark.parametrize("text, expected", [
    ("Mount Everest", "Mount Everest"),
    ("Answer: Mount Everest.\nBecause it is tall", "Mount Everest"),
    ('"Paris"', "Paris"),
    ("NO ANSWER", None),
    ("No answer.", None),
])
def test_parse_short_answer(text, expected):
    assert rules.parse_short_answer(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("Let me think.\nParis", "Paris"),  # the release keeps the last line; the first-line parse says "Let me think"
    ("Answer: Mount Everest.\nBecause it is tall", "Because it is tall"),
    ("(Paris", "Paris"),
    ("The hints point to a city.\n\nAnswer: \"Paris\".\n", "Paris"),
    ("I am not sure.\nNO ANSWER", None),
])
def test_the_reader_parse_keeps_the_last_line_as_the_release_does(text, expected):
    assert rules.parse_last_line_answer(text) == expected
    assert rules.READER_PARSES["last_line"] is rules.parse_last_line_answer
    assert rules.READER_PARSES["first_line"]("Let me think.\nParis") == "Let me think"


@pytest.mark.parametrize("text", ["", "   \n ", "Answer:"])
@pytest.mark.parametrize("parse", [rules.parse_short_answer, rules.parse_last_line_answer])
def test_empty_answers_are_unparsable(text, parse):
    with pytest.raises(ParseError):
        parse(text)


def test_parse_yes_no():
    assert parsing.parse_yes_no("Yes.") is True
    assert parsing.parse_yes_no(" no, it is not") is False
    with pytest.raises(ParseError):
        parsing.parse_yes_no("Maybe")


def test_parse_type_label_only_accepts_the_taxonomy():
    assert rules.parse_type_label("Label: LOC:mount") == ("LOC", "mount")
    with pytest.raises(ParseError):
        rules.parse_type_label("LOC:planet")


def test_source_type_spellings():
    assert rules.coarse_type("HUM:HUMAN") == "HUM"
    assert rules.coarse_type("LOCATION") == "LOC"
    assert rules.fine_type("ind:Individual") == "ind"


def test_leaking_alias_matches_on_word_boundaries_after_normalization():
    assert rules.leaking_alias("The Everest's summit is cold", ["Mount Everest", "Everest"]) == "Everest"
    assert rules.leaking_alias("Everestville is a town", ["Everest"]) is None


def test_leakage_spans_find_near_misses_only():
    spans = rules.leakage_spans("Climbers call it Everst in jest", ["Everest"])
    assert spans == ["everst"]
    assert rules.leakage_spans("A tall peak in Asia", ["Everest"]) == []


def test_convergence_follows_hinteval():
    # 4 wrong candidates; the hint fits the gold and 1 of them: 1 - 1/5
    assert rules.convergence(True, [True, False, False, False]) == pytest.approx(0.8)
    assert rules.convergence(True, [False] * 4) == 1.0
    assert rules.convergence(False, [False] * 4) == 0.0


def test_top_hints_keeps_five_best_stably():
    hints = list("abcdefg")
    scores = [0.1, 0.9, 0.5, 0.9, None, 0.3, 0.7]
    top, s = rules.top_hints(hints, scores)
    assert top == ["b", "d", "g", "c", "f"]
    assert s == [0.9, 0.9, 0.7, 0.5, 0.3]


def test_reference_complexity():
    assert rules.reference_complexity([], []) == 1.0
    assert rules.reference_complexity([True, False], [0.8, 0.9]) == pytest.approx(0.6)
    assert rules.difficulty_bucket(0.2) == "easy" and rules.difficulty_bucket(0.9) == "hard"


def test_splits_follow_answerability_and_are_seeded():
    answerable = {f"q{i}": i % 3 == 0 for i in range(30)}
    a = rules.assign_splits(answerable, train_size=5, test_size=8, seed=1)
    assert a == rules.assign_splits(answerable, train_size=5, test_size=8, seed=1)
    assert sum(v == "train" for v in a.values()) == 5
    assert sum(v == "test" for v in a.values()) == 8
    assert sum(v == "dev" for v in a.values()) == 20 - 8
    assert all(answerable[q] for q, s in a.items() if s in {"train", "unused"})
    assert not any(answerable[q] for q, s in a.items() if s in {"dev", "test"})


def test_a_question_a_failed_call_left_open_is_in_no_split():
    assert rules.parametric_answerable([False, None, True]) is True  # a correct answer settles it
    assert rules.parametric_answerable([False, False]) is False
    assert rules.parametric_answerable([False, None]) is None
    answerable = {"yes": True, "no": False, "open": None}
    assert rules.assign_splits(answerable, train_size=5, test_size=5, seed=1) == {
        "yes": "train", "no": "test", "open": rules.UNDETERMINED}


def test_correctness_and_labels():
    assert rules.is_correct("mount everest", ["Mount Everest"], judged=None)
    assert not rules.is_correct("K2", ["Mount Everest"], judged=False)
    assert rules.is_correct("Chomolungma", ["Mount Everest"], judged=True)
    assert not rules.is_correct(None, ["x"], judged=True)
    assert rules.passage_label([False, True, False]) == 2
    assert rules.passage_label([False, False]) == 1
    assert rules.passage_label([True, None]) is None
    assert not math.isnan(rules.convergence(True, []))


# --- Table 1 (the release's results/statistics/dataset_statistics.py definitions) ----------------

T1_QUESTIONS = pl.DataFrame({
    "question_id": ["q1", "q2", "q3", "q4"],
    "question": ["What is the capital of France?", "Who wrote Hamlet?", "Who wrote Hamlet?", "A question without passages"],
    "answers": [["Paris", "City of Light"], ["Shakespeare"], ["William Shakespeare"], ["x"]],
})
T1_CORPUS = pl.DataFrame({
    "passage_id": ["c1", "c2", "c3", "c4"],
    "question_id": ["q1", "q1", "q2", "q3"],
    "text": ["It is a Parisian city.", "The capital  of France lies on the Seine.", "He was an English playwright.",
             "He wrote Hamlet in Stratford."],
})
T1_QRELS = pl.DataFrame({"question_id": ["q1", "q1", "q2", "q3"], "passage_id": ["c1", "c2", "c3", "c4"], "label": [2, 1, 1, 1]})


def cosine_six_tenths(texts):
    # unit vectors by text, however the calls are batched: a question [1, 0], a passage [0.6, 0.8]
    asked = set(T1_QUESTIONS["question"])
    return np.array([[1.0, 0.0] if t in asked else [0.6, 0.8] for t in texts])


def test_table_1_follows_the_released_definitions():
    table = rules.table1(T1_QUESTIONS, T1_CORPUS, T1_QRELS, cosine_six_tenths)
    got = dict(table.select("metric", "value").iter_rows())
    # q2 and q3 share their wording, q4 has no passage: 2 distinct question texts
    assert got["Total Questions"] == 2 and got["Total Passages"] == 4
    # split(" "): 6 and 3 words
    assert got["Avg. Question Length (words)"] == 4.5
    # 5, 9 (the double space makes an empty word), 5, 5
    assert got["Avg. Passage Length (words)"] == 6
    # q1's pool (1 + 3 words) once per passage (2), q2's 1, q3's 2: 11 words / 6 answers
    assert got["Avg. Answer Length (words)"] == pytest.approx(11 / 6)
    # c1: {What, capital, France?} vs {It, Parisian, city.} -> 0
    # c2: {The, capital, "", France, lies, Seine.} ("of", "on", "the" dropped, "The" kept): 1 / 8
    # c3: {Who, wrote, Hamlet?} vs {He, English, playwright.} -> 0
    # c4: vs {He, wrote, Hamlet, Stratford.}: "wrote" of 6 -> 1 / 6;  mean (1/8 + 1/6) / 4 = 7/96
    assert got["Query-Passage Lexical Overlap"] == pytest.approx(7 / 96)
    # "paris" is a substring of "parisian" (c1) but not a whole word
    assert got["Answer Containment"] == 0.25 and got["Answer Containment (whole words)"] == 0
    assert got["Query-Passage Semantic Overlap"] == pytest.approx(0.6)
    assert got["Label-2 Passages"] == 1 and got["Label-1 Passages"] == 3
    assert table["definition"].null_count() == 0


def test_table_1_from_a_stored_table_read_in_small_batches_is_the_same(tmp_path):
    uri = str(tmp_path / "corpus.parquet")
    write_parquet_batches(uri, T1_CORPUS.iter_slices(3))
    calls = []

    def encode(texts):
        calls.append(len(texts))
        return cosine_six_tenths(texts)

    stored = rules.table1(T1_QUESTIONS, StoredTable((uri,)), T1_QRELS, encode, block_size=1)
    assert stored.equals(rules.table1(T1_QUESTIONS, T1_CORPUS, T1_QRELS, cosine_six_tenths))
    # the questions once, then the four passages a block of one at a time
    assert calls == [2, 1, 1, 1, 1]


def test_table_1_counts_an_answer_on_word_boundaries_after_normalize():
    questions = pl.DataFrame({"question_id": ["q1"], "question": ["Which tower?"], "answers": [["Eiffel Tower", " "]]})
    corpus = pl.DataFrame({"passage_id": ["a", "b", "c"], "question_id": ["q1"] * 3,
                           "text": ["The eiffel-tower stands.", "Eiffel Towers stand.", "Gustave Eiffel's tower."]})
    table = rules.table1(questions, corpus, pl.DataFrame({"label": [1]}), lambda texts: np.ones((len(texts), 2)) / np.sqrt(2))
    got = dict(table.select("metric", "value").iter_rows())
    # "eiffel tower stands" holds it; "eiffel towers", "gustave eiffel tower" (possessive dropped) do not / do
    assert got["Answer Containment (whole words)"] == pytest.approx(2 / 3)
    assert got["Answer Containment"] == pytest.approx(1 / 3)  # lower-cased substring: only "Eiffel Towers"


def test_table_1_rules_on_their_own():
    assert rules.lexical_overlap("the of", "is a") == 0.0  # only stop words: nothing to compare
    assert rules.lexical_overlap("Paris France", "paris France") == pytest.approx(1 / 3)  # case kept
    assert rules.contains_answer("Born in the U.S.A.", ["u.s."]) and not rules.contains_answer("Anything", [" ", ""])


def test_table_1_names_passages_of_unknown_questions():
    with pytest.raises(ValueError, match="q9"):
        rules.table1(T1_QUESTIONS, T1_CORPUS.with_columns(pl.lit("q9").alias("question_id")), T1_QRELS, cosine_six_tenths)
