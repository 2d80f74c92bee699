import pytest

from assets.eval import contexts

P1 = "It is red. It orbits the Sun. It has two moons."
P2 = "It orbits the Sun. It has a huge volcano."
P3 = "It has two moons. It is red."


def test_union_norm_keeps_first_appearance_order():
    assert contexts.union_norm([P1, P2, P3]) == "It is red. It orbits the Sun. It has two moons. It has a huge volcano."


def test_union_freq_recomputed_by_hand():
    # score(s) = 0.6 * sum 1/rank + 0.4 * sum 1/pos
    expected = {
        "It is red.": 0.6 * (1 / 1 + 1 / 3) + 0.4 * (1 / 1 + 1 / 2),          # P1 pos 1, P3 pos 2
        "It orbits the Sun.": 0.6 * (1 / 1 + 1 / 2) + 0.4 * (1 / 2 + 1 / 1),  # P1 pos 2, P2 pos 1
        "It has two moons.": 0.6 * (1 / 1 + 1 / 3) + 0.4 * (1 / 3 + 1 / 1),   # P1 pos 3, P3 pos 1
        "It has a huge volcano.": 0.6 * (1 / 2) + 0.4 * (1 / 2),              # P2 pos 2
    }
    got = dict(contexts.union_freq_scores([P1, P2, P3]))
    assert got == pytest.approx(expected)
    # 1.4, 1.5, 1.2 (+0.8), 0.5 -> orbits (1.5), red (1.4), moons (1.3333), volcano (0.5)
    assert contexts.union_freq([P1, P2, P3], top_sentences=3) == "It orbits the Sun. It is red. It has two moons."


def test_sentence_split_keeps_numbers_and_abbreviations_together():
    assert contexts.sentences("It was built in 1889. Its height is 330 m.") == ["It was built in 1889.", "Its height is 330 m."]
