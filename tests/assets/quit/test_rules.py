import math

import pytest

from assets.common import parsing
from assets.quit import rules
from resources.llm import ParseError


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Mount Everest", "Mount Everest"),
        ("Answer: Mount Everest.\nBecause it is tall", "Mount Everest"),
        ('"Paris"', "Paris"),
        ("NO ANSWER", None),
        ("No answer.", None),
    ],
)
def test_parse_short_answer(text, expected):
    assert rules.parse_short_answer(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Let me think.\nParis", "Paris"),  # the release keeps the last line; the first-line parse says "Let me think"
        ("Answer: Mount Everest.\nBecause it is tall", "Because it is tall"),
        ("(Paris", "Paris"),
        ('The hints point to a city.\n\nAnswer: "Paris".\n', "Paris"),
        ("I am not sure.\nNO ANSWER", None),
    ],
)
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
        "yes": "train",
        "no": "test",
        "open": rules.UNDETERMINED,
    }


def test_correctness_and_labels():
    assert rules.is_correct("mount everest", ["Mount Everest"], judged=None)
    assert not rules.is_correct("K2", ["Mount Everest"], judged=False)
    assert rules.is_correct("Chomolungma", ["Mount Everest"], judged=True)
    assert not rules.is_correct(None, ["x"], judged=True)
    assert rules.passage_label([False, True, False]) == 2
    assert rules.passage_label([False, False]) == 1
    assert rules.passage_label([True, None]) is None
    assert not math.isnan(rules.convergence(True, []))
