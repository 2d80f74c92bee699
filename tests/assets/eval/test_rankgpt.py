from assets.common.parsing import parse_permutation
from assets.eval.rankgpt import rerank, windows
from resources.llm import CallStats


def test_clean_permutation():
    assert parse_permutation("[2] > [3] > [1]", 3) == ([1, 2, 0], False)


def test_malformed_permutations_are_repaired():
    # repeats, an invented id and a missing one
    order, repaired = parse_permutation("[3] > [3] > [9] > [1]", 4)
    assert order == [2, 0, 1, 3] and repaired
    assert parse_permutation("I cannot rank these.", 3) == ([0, 1, 2], True)
    assert parse_permutation("2, 1", 2) == ([1, 0], False)


def test_windows_slide_from_the_bottom():
    assert windows(5, 20, 10) == [(0, 5)]
    assert windows(100, 20, 10) == [
        (80, 100),
        (70, 90),
        (60, 80),
        (50, 70),
        (40, 60),
        (30, 50),
        (20, 40),
        (10, 30),
        (0, 20),
    ]
    assert windows(25, 20, 10) == [(5, 25), (0, 15)]


def test_rerank_applies_each_window_bottom_up(scripted_llm):
    # the scripted model reverses every window it is shown
    ids = [f"p{i}" for i in range(6)]
    texts = {p: f"text of {p}" for p in ids}
    stats = CallStats()
    out, repaired = rerank(
        scripted_llm.named("smollm2"),
        {"q": "Which?", "r": "What?"},
        {"q": ids, "r": ids[:3]},
        texts,
        window=4,
        step=2,
        stats=stats,
    )
    # q: window [2:6] reversed -> p0 p1 p5 p4 p3 p2, then [0:4] reversed -> p4 p5 p1 p0 p3 p2
    assert out["q"] == ["p4", "p5", "p1", "p0", "p3", "p2"]
    assert out["r"] == ["p2", "p1", "p0"]
    assert repaired == 0 and stats.calls == 3
