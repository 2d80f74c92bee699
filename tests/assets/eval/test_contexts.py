import polars as pl
import pytest

from assets.eval.quit import rules as contexts

# A question's five ranked hints: hint 2 holds an abbreviation, hint 3 has no final period.
HINTS = [
    "He was born in 1961.",
    "He served two terms.",
    "He lived in the U.S. Army base.",
    "He liked basketball",
    "He won the Nobel Peace Prize.",
]
QUESTIONS = pl.DataFrame({"question_id": ["q_7"], "hints": [HINTS]})


def test_a_passage_is_the_hints_its_id_names_in_order():
    # q_7 _ 10100 _ 20: hints 0 and 2 marked, hint 2 first (the id's question has an underscore)
    text = f"{HINTS[2]} {HINTS[0]}"
    assert contexts.hint_units("q_7_10100_20", text, {"q_7": HINTS}) == [HINTS[2], HINTS[0]]
    # "U.S. Army" does not end a unit and neither does a hint without a final period
    assert contexts.hint_units("q_7_00110_32", f"{HINTS[3]} {HINTS[2]}", {"q_7": HINTS}) == [HINTS[3], HINTS[2]]


@pytest.mark.parametrize(
    "pid, text",
    [
        ("q_7_10100_21", f"{HINTS[2]} {HINTS[1]}"),  # the mask does not mark hint 1
        ("q_7_10100_20", f"{HINTS[0]} {HINTS[2]}"),  # the text is not hint 2 then hint 0
        ("q_8_10000_0", HINTS[0]),  # no such question
        ("doc-17", HINTS[0]),  # an id without hints
    ],
)
def test_an_id_that_does_not_name_the_text_s_hints_gives_none(pid, text):
    assert contexts.hint_units(pid, text, {"q_7": HINTS}) is None


def test_passages_without_hint_ids_are_cut_into_sentences_and_named():
    corpus = pl.DataFrame(
        {
            "passage_id": ["q_7_00110_32", "doc-17"],
            "text": [f"{HINTS[3]} {HINTS[2]}", "Mount K2 is in the U.S. Army files. It is tall."],
        }
    )
    units, split = contexts.passage_units(corpus, QUESTIONS)
    assert units["q_7_00110_32"] == [HINTS[3], HINTS[2]]
    # the regex fallback does split after "U.S." before a capital: why hints are preferred
    assert units["doc-17"] == ["Mount K2 is in the U.S.", "Army files.", "It is tall."]
    assert split == ["doc-17"]
    assert contexts.passage_units(corpus, None)[1] == ["q_7_00110_32", "doc-17"]


A, B, C, D, E = "Alpha one.", "Bravo two", "Charlie in the U.S. Navy.", "Delta four.", "Echo five."


def test_union_norm_keeps_each_hint_once_in_first_appearance_order():
    assert contexts.union_norm([[A, B], [B, C], [C, A, D]]) == f"{A} {B} {C} {D}"


def test_union_freq_keeps_every_hint_by_exact_score():
    passages = [[A, B], [B, C], [C, A, D]]
    # score = 3/5 * sum 1/rank + 2/5 * sum 1/pos
    # A: (r1,p1) 3/5+2/5 = 1;  (r3,p2) 1/5+1/5 = 2/5        -> 7/5
    # B: (r1,p2) 3/5+1/5 = 4/5; (r2,p1) 3/10+2/5 = 7/10     -> 3/2
    # C: (r2,p2) 3/10+1/5 = 1/2; (r3,p1) 1/5+2/5 = 3/5      -> 11/10
    # D: (r3,p3) 1/5+2/15 = 1/3                              -> 1/3
    from fractions import Fraction as F

    assert dict(contexts.union_freq_scores(passages)) == {A: F(7, 5), B: F(3, 2), C: F(11, 10), D: F(1, 3)}
    assert contexts.union_freq(passages) == f"{B} {A} {C} {D}"
    assert contexts.union_freq(passages, top=2) == f"{B} {A}"


def test_union_freq_ties_are_exact_and_go_to_first_appearance():
    # hints as ranks 0..4 = A..E; passages (0,4,2), (1,3,4), (3,1,4):
    passages = [[A, E, C], [B, D, E], [D, B, E]]
    # B: (r2,p1) 3/10+2/5 = 7/10; (r3,p2) 1/5+1/5 = 2/5 -> 11/10
    # D: (r2,p2) 3/10+1/5 = 1/2;  (r3,p1) 1/5+2/5 = 3/5 -> 11/10   (tie; B appears first)
    # E: (r1,p2) 4/5; (r2,p3) 3/10+2/15 = 13/30; (r3,p3) 1/5+2/15 = 1/3 -> 47/30
    # A: (r1,p1) 1;  C: (r1,p3) 3/5+2/15 = 11/15
    scores = dict(contexts.union_freq_scores(passages))
    assert scores[B] == scores[D]
    floats = {B: 0.6 / 2 + 0.4 / 1 + 0.6 / 3 + 0.4 / 2, D: 0.6 / 2 + 0.4 / 2 + 0.6 / 3 + 0.4 / 1}
    assert floats[B] < floats[D]  # float sums in passage order would put D first
    assert contexts.union_freq(passages) == f"{E} {B} {D} {A} {C}"


def test_sentence_split_keeps_numbers_together():
    assert contexts.sentences("It was built in 1889. Its height is 330 m.") == [
        "It was built in 1889.",
        "Its height is 330 m.",
    ]
