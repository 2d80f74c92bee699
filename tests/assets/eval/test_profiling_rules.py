import itertools
import math
from collections import Counter

import polars as pl
import pytest

from assets.eval.wikiprofile import rules as method
from assets.eval.wikiprofile.rules import CORRECT as C
from assets.eval.wikiprofile.rules import INCORRECT as I
from assets.eval.wikiprofile.rules import OTHER as O
from assets.eval.wikiprofile.rules import PARTIALLY as P


def test_the_papers_worked_grade_example():
    # 3 C, 1 I, 2 P, 2 O -> 3 / (3 + 1)
    assert method.grade([C, P, I, O, C, P, O, C]) == 0.75
    assert math.isnan(method.grade([P, O, O, P, O, P, P, O]))
    # S3 counts a partial answer as 0.51 of a correct one: (3 + 2 * 0.51) / 6
    assert method.grade([C, P, I, O, C, P, O, C], partial_weight=0.51) == pytest.approx(4.02 / 6)
    with pytest.raises(ValueError, match="CORECT"):
        method.grade([C, "CORECT"])


# (E, K0, KT) -> profile, written out from the paper's definitions.
RULES = {
    (False, False, False): "encoding_failure",
    (True, False, False): "recall_failure",
    (True, True, False): "direct_recall",
    (True, True, True): "direct_recall",
    (True, False, True): "recall_with_thinking",
    (False, False, True): "inference_without_encoding",
    (False, True, False): "direct_inference",
    (False, True, True): "direct_inference",
}


@pytest.mark.parametrize("e,k0,kt", list(itertools.product([False, True], repeat=3)))
def test_profile_rules_over_every_combination(e, k0, kt):
    assert method.profile(e, k0, kt) == RULES[(e, k0, kt)]


def test_encodes_is_existential_and_knows_universal_with_a_strict_threshold():
    assert method.encodes({"completion": 0.5, "contextual": 0.625})
    assert not method.encodes({"completion": 0.5, "contextual": math.nan})
    grades = {"direct": 1.0, "direct_natural": 0.75, "reverse": 0.625, "reverse_natural": 0.5}
    assert not method.knows(grades)
    assert method.knows({**grades, "reverse_natural": 0.51})
    assert method.knows({**grades, "reverse_natural": math.nan})  # S2 ignores a lone NaN
    assert not method.knows({t: math.nan for t in method.KNOWLEDGE_TASKS})


def test_ungradable_facts_by_strategy():
    nan = math.nan
    plain = {
        "completion": 1.0,
        "contextual": nan,
        "direct": 1.0,
        "direct_natural": 1.0,
        "reverse": 1.0,
        "reverse_natural": 1.0,
    }
    thinking = {"direct": 1.0, "direct_natural": 1.0, "reverse": 1.0, "reverse_natural": 1.0}
    # one NaN question: S1 drops the fact, S2 keeps it
    assert method.ungradable(plain, thinking, "S1") and not method.ungradable(plain, thinking, "S2")
    # a whole pair NaN in one run: every strategy drops it
    both = {**thinking, "reverse": nan, "reverse_natural": nan}
    assert all(method.ungradable(plain, both, s) for s in ("S1", "S2", "S3"))
    assert method.ungradable({**plain, "completion": nan}, thinking, "S2")
    with pytest.raises(ValueError, match="S4"):
        method.ungradable(plain, thinking, "S4")


def fact(enc, k0, kt):
    """Grades that give the stated E / K0 / KT: ``enc`` and ``k0`` are the plain run's
    completion and direct grades, ``kt`` the thinking run's direct grade; every other
    question passes."""
    plain = {
        "completion": enc,
        "contextual": 0.0,
        "direct": k0,
        "direct_natural": 1.0,
        "reverse": 1.0,
        "reverse_natural": 1.0,
    }
    thinking = {"direct": kt, "direct_natural": 1.0, "reverse": 1.0, "reverse_natural": 1.0}
    return plain, thinking


def test_profile_percentages_of_a_synthetic_grade_matrix_by_hand():
    nan = math.nan
    matrix = (
        [fact(0.875, 1.0, 1.0)] * 4  # direct recall
        + [fact(0.75, 0.25, 0.625)] * 2  # recall with thinking
        + [fact(1.0, 0.5, 0.5)] * 2  # recall failure: 0.5 is not above tau
        + [fact(0.0, 0.0, 0.0)]  # encoding failure
        + [fact(0.25, 0.0, 1.0)]  # inference without encoding
        + [fact(0.0, 1.0, 1.0)]  # excluded: direct inference
        + [fact(nan, 1.0, 1.0)]  # encoding pair: completion NaN, contextual 0.0 -> kept by S2 (not E)
    )
    rows = [method.classify(p, t) for p, t in matrix]
    assert Counter(r["profile"] for r in rows) == {
        "direct_recall": 4,
        "recall_with_thinking": 2,
        "recall_failure": 2,
        "encoding_failure": 1,
        "inference_without_encoding": 1,
        "direct_inference": 2,
    }
    summary = method.profile_summary(rows)
    # 12 facts; 10 profiled (two are direct inference, excluded)
    assert summary["facts"] == 12 and summary["profiled"] == 10
    assert summary["direct_recall"] == 0.4 and summary["recall_with_thinking"] == 0.2
    assert summary["recall_failure"] == 0.2 and summary["encoding_failure"] == 0.1
    assert summary["inference_without_encoding"] == 0.1
    assert summary["encodes"] == 0.8  # 4 + 2 + 2 of 10
    # Knows and Knows(+Think) include direct inference, over the 12 gradable facts (10 profiled
    # + 2 direct inference): (4 DR + 2 DI) / 12; (4 DR + 2 RwT + 1 IwE + 2 DI) / 12
    assert summary["knows"] == 0.5 and summary["knows_thinking"] == 0.75
    # Figure 4's bar leaves direct inference out: (4 + 2 + 1) / 10
    assert summary["knows_thinking_excl_direct"] == 0.7
    # the unions KT would split: E and not K0 = 2 RF + 2 RwT; not E and not K0 = 1 EF + 1 IwE
    assert summary["encoded_not_known"] == 0.4 and summary["not_encoded_not_known"] == 0.2
    assert summary["thinking_run"] == "present"
    assert summary["excluded_direct_inference"] == pytest.approx(2 / 12)
    assert summary["excluded_ungradable"] == 0.0
    # S1 drops the fact with a NaN completion; S2 profiled it
    assert method.classify(*matrix[-1], strategy="S1")["profile"] == "ungradable"


def test_knows_counts_direct_inference_over_the_gradable_facts_with_ungradable_ones_out():
    nan = math.nan
    matrix = (
        [fact(1.0, 1.0, 0.0)] * 3  # direct recall (KT not checked)
        + [fact(1.0, 0.0, 0.0)] * 3  # recall failure
        + [fact(0.0, 1.0, 1.0)]  # direct inference
        + [({"completion": nan, "contextual": nan}, {})]
    )  # ungradable: the encoding pair is NaN
    summary = method.profile_summary([method.classify(p, t) for p, t in matrix])
    # 8 facts: 6 profiled, 1 direct inference, 1 ungradable -> 7 gradable
    assert (summary["facts"], summary["profiled"]) == (8, 6)
    assert summary["knows"] == pytest.approx(4 / 7)  # (3 DR + 1 DI) / 7 = 0.5714
    assert summary["knows_thinking"] == pytest.approx(4 / 7)  # nothing recovered by thinking
    assert summary["knows_thinking_excl_direct"] == 0.5  # 3 / 6
    assert summary["direct_recall"] == 0.5 and summary["recall_failure"] == 0.5
    # the excluded kinds are shares of all 8 facts: 1/8 each
    assert summary["excluded_direct_inference"] == 0.125 and summary["excluded_ungradable"] == 0.125


def test_a_fact_without_a_thinking_run_is_profiled_from_its_plain_run():
    nan = math.nan
    known = {
        "completion": 1.0,
        "contextual": 0.0,
        "direct": 1.0,
        "direct_natural": 1.0,
        "reverse": 1.0,
        "reverse_natural": 0.75,
    }
    # E, K0: direct recall whatever KT would say; not E, K0: direct inference
    assert method.classify(known, None) == {
        "encodes": True,
        "knows": True,
        "knows_thinking": None,
        "profile": "direct_recall",
        "thinking_run": "missing",
    }
    assert method.classify({**known, "completion": 0.5}, None)["profile"] == "direct_inference"
    # not K0: KT would decide between two profiles; only their union is known
    assert method.classify({**known, "reverse": 0.25}, None)["profile"] == "encoded_not_known"
    assert method.classify({**known, "completion": 0.0, "reverse": 0.25}, None)["profile"] == "not_encoded_not_known"
    # the missing run does not make the fact ungradable; a NaN pair of the plain run still does
    assert not method.ungradable(known, None, "S1") and not method.ungradable(known, None, "S2")
    assert method.ungradable({**known, "reverse": nan, "reverse_natural": nan}, None, "S2")
    # with a thinking run, the same fact without its thinking grades is ungradable (S2: whole pair NaN)
    assert method.classify(known, {})["profile"] == "ungradable"


def test_table_2_row_of_a_model_without_a_thinking_run():
    def plain(enc, k0):
        return {
            "completion": enc,
            "contextual": 0.0,
            "direct": k0,
            "direct_natural": 1.0,
            "reverse": 1.0,
            "reverse_natural": 1.0,
        }

    matrix = [plain(1.0, 1.0)] * 2 + [plain(1.0, 0.0)] * 3 + [plain(0.0, 0.0)] * 4 + [plain(0.0, 1.0)]
    summary = method.profile_summary([method.classify(p, None) for p in matrix])
    # 10 facts: 2 direct recall, 3 encoded not known, 4 neither, 1 direct inference -> 9 profiled, 10 gradable
    assert summary["thinking_run"] == "missing" and (summary["facts"], summary["profiled"]) == (10, 9)
    assert summary["encodes"] == pytest.approx(5 / 9)  # 2 + 3 of 9
    assert summary["knows"] == 0.3  # (2 DR + 1 DI) / 10
    assert summary["direct_recall"] == pytest.approx(2 / 9)
    assert summary["encoded_not_known"] == pytest.approx(3 / 9)
    assert summary["not_encoded_not_known"] == pytest.approx(4 / 9)
    assert summary["excluded_direct_inference"] == 0.1 and summary["excluded_ungradable"] == 0.0
    # what needs KT is unknown, not zero
    for column in ("knows_thinking", "knows_thinking_excl_direct", *method.THINKING_DEPENDENT):
        assert summary[column] is None, column
    # a model's facts either all have the thinking run or none do
    mixed = [method.classify(plain(1.0, 1.0), None), {**method.classify(plain(1.0, 1.0), {}), "fact_id": "f9"}]
    with pytest.raises(ValueError, match="without a thinking run among facts with one"):
        method.profile_summary(mixed)


def test_each_option_slot_holds_the_gold_twice_over_eight_samples():
    orders = method.mc_orders(8, 4, seed=3)
    assert all(sorted(o) == [0, 1, 2, 3] for o in orders)
    assert Counter(o.index(0) for o in orders) == {0: 2, 1: 2, 2: 2, 3: 2}
    assert orders == method.mc_orders(8, 4, seed=3) and orders != method.mc_orders(8, 4, seed=4)
    with pytest.raises(ValueError):
        method.mc_orders(6, 4)


def test_multiple_choice_and_free_text_responses_are_read():
    assert method.mc_letter("B") == "B" and method.mc_letter("(C) Paris") == "C"
    assert method.mc_letter("Think step by step... A seems wrong. Answer: D") == "D"
    assert method.mc_letter("I am not sure.") is None
    assert method.mc_grade("Answer: b", gold_slot=1) == C and method.mc_grade("A", gold_slot=1) == I
    assert method.mc_grade("none of them", gold_slot=1) == O
    assert method.final_answer("The band formed in 1985. Answer: Bobby Paterson") == "Bobby Paterson"
    assert method.final_answer("Bobby Paterson") == "Bobby Paterson"
    assert method.parse_grades("Answer 1: CORRECT\nAnswer 2: **OTHER**\n3. partially", 3) == [C, O, P]
    with pytest.raises(ValueError, match=r"\[2\]"):
        method.parse_grades("1: CORRECT\n3: INCORRECT", 3)


@pytest.mark.parametrize(
    "answer,label",
    [
        # the paper's numeric rule: correct to the gold's last significant figure (gold 120k)
        ("124k", "CORRECT"),
        ("115,000", "CORRECT"),
        ("100k", "INCORRECT"),
        ("113k", "INCORRECT"),
        ("around 100k", "OTHER"),
        ("more than 50k", "OTHER"),
        ("", "OTHER"),
        ("I don't know.", "OTHER"),
    ],
)
def test_rule_grade_follows_the_numeric_rule(answer, label):
    assert method.rule_grade(answer, "120k") == label


def test_rule_grade_on_names_dates_and_units():
    assert method.rule_grade("It was completed in 1420.", "1420") == "CORRECT"
    assert method.rule_grade("1425", "1420") == "INCORRECT"  # a year matches exactly
    assert method.rule_grade("He died in November 1991.", "November 1991") == "CORRECT"
    assert method.rule_grade("In 1991", "November 1991") == "PARTIALLY"  # coarser
    assert method.rule_grade("about 6,412 km", "6,400 kilometres") == "CORRECT"
    assert method.rule_grade("The Grytviken whaling station", "Grytviken") == "CORRECT"
    assert method.rule_grade("Hobart", "Grytviken") == "INCORRECT"
    assert method.rule_grade(None, "Grytviken") == "OTHER"


def test_rule_labels_grade_each_sample_against_its_task():
    from assets.eval.wikiprofile import steps as profiling

    bench = pl.DataFrame(
        {"fact_id": ["f", "f"], "task": ["direct", "reverse"], "answer": ["Grytviken", "Ernest Shackleton"]}
    )
    samples = pl.DataFrame(
        {
            "fact_id": ["f", "f", "f"],
            "task": ["direct", "reverse", "reverse"],
            "answer": ["At Grytviken.", "Shackleton", "Amundsen"],
        }
    )
    assert profiling.rule_labels(samples, bench) == ["CORRECT", "PARTIALLY", "INCORRECT"]
