import math

import pytest
from scipy import stats

from assets.eval.recor import rules as conversational
from assets.recor import rules


def test_document_scores_of_the_papers_table_15():
    # Aging_theory_12, Evolution_38, Genetics_91 (support, completeness, clarity, misleading)
    scores = {
        "Aging_theory_12.txt": rules.document_score(8, 7, 7, 0),
        "Evolution_38.txt": rules.document_score(6, 5, 6, 0),
        "Genetics_91.txt": rules.document_score(4, 3, 5, 0),
    }
    assert scores == pytest.approx({"Aging_theory_12.txt": 7.15, "Evolution_38.txt": 5.40, "Genetics_91.txt": 3.65})
    assert rules.document_score(10, 10, 10, 10) == pytest.approx(9.0)
    assert rules.select_documents(scores, threshold=4.0, max_docs=5) == ["Aging_theory_12.txt", "Evolution_38.txt"]
    assert rules.select_documents(scores, threshold=4.0, max_docs=1) == ["Aging_theory_12.txt"]
    with pytest.raises(ValueError, match="misleading score 11"):
        rules.document_score(1, 1, 1, 11)


def test_normalized_entropy_of_the_papers_dependency_types():
    # Table 29: the paper reports a normalized dependency entropy of 0.77
    counts = {
        "continuation": 1028,
        "coreference": 859,
        "self_contained": 707,
        "topic_shift": 326,
        "substitution": 41,
        "ellipsis": 10,
    }
    assert round(rules.normalized_entropy(counts, len(rules.DEPENDENCY_TYPES)), 2) == 0.77
    assert rules.normalized_entropy({"why": 5}, 9) == 0.0
    assert math.copysign(1.0, rules.normalized_entropy({"why": 5}, 9)) == 1.0  # printed as 0, not -0
    assert rules.normalized_entropy({c: 3 for c in rules.QUESTION_PATTERNS}, 9) == pytest.approx(1.0)


def test_macro_average_weighs_domains_equally():
    # biology has 4 turns, law 1: the turn-level mean would be 0.68, the macro average 0.5
    turns = {"biology": [0.8, 0.8, 0.8, 0.8], "law": [0.2]}
    per_domain = {d: sum(v) / len(v) for d, v in turns.items()}
    assert conversational.macro_average(per_domain) == pytest.approx(0.5)
    assert conversational.macro_average({"a": 0.4, "b": float("nan")}) == pytest.approx(0.4)


def test_paired_t_matches_scipy_on_fixed_numbers():
    base = [0.10, 0.25, 0.00, 0.40, 0.33, 0.18, 0.05, 0.50]
    hist = [0.30, 0.35, 0.20, 0.38, 0.60, 0.41, 0.05, 0.72]
    out = conversational.paired_t(base, hist)
    diffs = [b - a for a, b in zip(base, hist)]
    mean = sum(diffs) / 8
    se = math.sqrt(sum((d - mean) ** 2 for d in diffs) / 7) / math.sqrt(8)
    assert out["mean_delta"] == pytest.approx(mean) and out["se"] == pytest.approx(se)
    ref = stats.ttest_rel(hist, base)
    assert out["t"] == pytest.approx(ref.statistic) and out["t"] == pytest.approx(mean / se)
    assert out["p"] == pytest.approx(ref.pvalue) and out["p"] < 0.05
    with pytest.raises(ValueError, match="differ in length"):
        conversational.paired_t([1.0], [1.0, 2.0])


def test_turn_and_conversation_rules():
    first = "Why does evolution not make our lives longer if selection favours survival?"
    assert rules.distinct_turn(first, []) == (True, "")
    ok, why = rules.distinct_turn(first, [first])
    assert not ok and "overlap 1.00" in why
    follow = "Which harmful genes stay in populations because they act only after people have children?"
    assert rules.distinct_turn(follow, [first], min_new_words=5)[0]
    assert not rules.distinct_turn(follow, [first], min_new_words=40)[0]
    assert rules.conversation_problems([["a"], ["b"], ["a", "b"]]) == []
    assert rules.conversation_problems([["a"], ["a"]]) == ["2 turns (needs 3-12)", "every turn uses the same documents"]
    assert "a turn has no selected document" in rules.conversation_problems([["a"], [], ["b"]])
    assert [conversational.turn_bucket(t) for t in (1, 4, 5, 9)] == ["T1", "T4", "T5+", "T5+"]
