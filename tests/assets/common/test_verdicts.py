"""Ratings are read from the whole number the judge writes, on tokenizers that write "10" as
one token and on those that write it digit by digit."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from assets.common.verdicts import RATING, VERDICT, first_token_only, mean, number_distribution, rating, verdict
from resources.llm import LLMRequest, LLMResource, LLMResult


def lp(**probabilities: float) -> dict[str, float]:
    return {token: math.log(p) for token, p in probabilities.items()}


def read(tokens, alternatives, low=0, high=10):
    return mean(number_distribution(tokens, alternatives, low, high))


def test_a_split_ten_is_read_from_both_digits():
    # "1" at 0.6 then "0" at 0.8 after it: 10 holds 0.6 * 0.8, 1 holds 0.6 * 0.2, 9 holds 0.3;
    # the word's 0.1 is left out
    tokens, alternatives = (
        ["1", "0"],
        [{**lp(**{"1": 0.6, "9": 0.3}), "The": math.log(0.1)}, lp(**{"0": 0.8, "<|im_end|>": 0.2})],
    )
    assert number_distribution(tokens, alternatives) == pytest.approx({10: 0.48, 1: 0.12, 9: 0.3})
    assert read(tokens, alternatives) == pytest.approx((4.8 + 0.12 + 2.7) / 0.9)


def test_a_one_not_taken_grows_into_the_number_nearest_the_written_one():
    # beside a written 9 the "1" is the start of 10; beside a written 2 it is 1
    assert number_distribution(["9"], [lp(**{"9": 0.6, "1": 0.3, "8": 0.1})]) == pytest.approx(
        {9: 0.6, 10: 0.3, 8: 0.1}
    )
    assert read(["2"], [lp(**{"2": 0.6, "1": 0.4})]) == pytest.approx(1.6)
    # a written "1" that ends there is 1, whatever its alternatives
    assert read(["1"], [lp(**{"1": 1.0})]) == 1.0


def test_whole_number_tokens_keep_the_first_token_mean():
    # "10" is one token, so the "1" beside it is the number 1
    assert number_distribution(["10"], [lp(**{"10": 0.5, "9": 0.3, "1": 0.2})]) == pytest.approx(
        {10: 0.5, 9: 0.3, 1: 0.2}
    )
    # G-Eval's first-token score when no number is written: (8 * 0.5 + 6 * 0.3) / 0.8
    assert read(["The"], [lp(**{"8": 0.5, " 6": 0.3, "The": 0.2})]) == pytest.approx(7.25)
    assert read(["The"], [{"The": -0.1, "42": -2.0}]) is None


def test_the_scale_bounds_what_counts():
    # on 1-5 a "1" can only be 1, and 0 is out of range
    assert read(["4"], [lp(**{"4": 0.5, "5": 0.3, "1": 0.1, "0": 0.1})], 1, 5) == pytest.approx((2 + 1.5 + 0.1) / 0.9)
    # 42 is no rating on 0-10
    assert read(["4", "2"], [lp(**{"4": 1.0}), lp(**{"2": 1.0})]) is None


def test_lead_in_punctuation_and_unreported_positions():
    # "Score: 8." -- the lead-in is not read; "80" is out of range, so 8 holds 0.7 * 0.9
    tokens = ["Score", ":", " ", "8", "."]
    alternatives = [None, None, None, lp(**{"8": 0.7, "7": 0.3}), lp(**{".": 0.9, "0": 0.1})]
    assert number_distribution(tokens, alternatives) == pytest.approx({8: 0.63, 7: 0.3})
    # a position reported without alternatives is taken as certain
    assert number_distribution(["1", "0"], [lp(**{"1": 0.5, "9": 0.5}), None]) == pytest.approx({10: 0.5, 9: 0.5})
    # the number may start inside a token, and a token with something after its digits ends it
    assert number_distribution(["(8", ")"], [lp(**{"(8": 0.6, "(7": 0.4}), None]) == pytest.approx({8: 0.6})
    assert number_distribution(["7", "."], [lp(**{"7": 0.5, "8.": 0.5}), None]) == pytest.approx({7: 0.5, 8: 0.5})
    assert number_distribution([], []) == {}


def test_first_token_only_splits_the_text_at_the_listed_first_token():
    top = lp(**{"1": 0.5, "9": 0.5})
    assert first_token_only("10", top) == (["1", "0"], [top, None])
    assert first_token_only("9", top) == (["9"], [top])
    assert first_token_only("8", None) == (["8"], [None])


def test_rating_reads_every_token_when_the_result_carries_them():
    ten = LLMResult("k", "10", top_logprobs=lp(**{"1": 0.6, "9": 0.4}))
    # first token only (today's results): the rest of the text is certain, so "1" is 10
    assert rating(ten) == pytest.approx(0.6 * 10 + 0.4 * 9)
    full = SimpleNamespace(
        text="10",
        top_logprobs=ten.top_logprobs,
        tokens=["1", "0"],
        token_logprobs=[ten.top_logprobs, lp(**{"0": 0.5, "<|im_end|>": 0.5})],
    )
    assert rating(full) == pytest.approx(0.3 * 10 + 0.3 * 1 + 0.4 * 9)
    assert rating(LLMResult("k", "7", top_logprobs=None)) == 7.0
    assert rating(LLMResult("k", "no idea", top_logprobs=None)) is None


def test_verdicts_stay_on_the_first_token():
    assert VERDICT["max_tokens"] == 1 and RATING["max_tokens"] >= 3 and RATING["logprobs"]
    assert verdict(LLMResult("k", "No, it does not", top_logprobs=lp(No=0.6, Yes=0.4))) is False


# The scripted stand-in judge: its prompt names a distribution over whole answers, and it
# answers greedily through litellm with each position's exact next-token alternatives.

CASES = [
    ({"10": 1.0}, 10.0),
    ({"1": 1.0}, 1.0),
    ({"9": 0.5, "10": 0.5}, 9.5),
    ({"9": 0.55, "10": 0.45}, 9.45),
    ({"9": 0.45, "10": 0.55}, 9.55),
    ({"8": 0.2, "9": 0.3, "10": 0.5}, 9.3),
]


def ask(answers: dict[str, float]) -> list[dict]:
    spread = " ".join(f"{a}={p}" for a, p in answers.items())
    return [{"role": "user", "content": f"Rate it from 0 to 10.\nScripted distribution: {spread}"}]


@pytest.fixture
def judges(tmp_path):
    from tests import scripted

    scripted.install()
    registry = tmp_path / "models.yaml"
    registry.write_text(
        "models:\n  split: {model: scripted/digits, backend: api}\n  whole: {model: scripted/rules, backend: api}\n"
    )
    llm = LLMResource(registry_path=str(registry), cache_dir=str(tmp_path / "cache"), backoff_seconds=0.01)
    scripted.install()
    return llm


@pytest.mark.parametrize("model", ["digits", "rules"])
@pytest.mark.parametrize("answers,expected", CASES)
def test_the_stand_in_judges_rating_is_read_from_every_token(model, answers, expected):
    import litellm

    from tests import scripted

    scripted.install()
    response = litellm.completion(model=f"scripted/{model}", messages=ask(answers), **RATING)
    content = response.choices[0].logprobs.content
    tokens = [c.token for c in content]
    if model == "digits" and "10" in answers and answers["10"] >= 0.5:
        assert tokens == ["1", "0"]
    assert "".join(tokens) == response.choices[0].message.content
    alternatives = [{t.token: t.logprob for t in c.top_logprobs} for c in content]
    assert read(tokens, alternatives) == pytest.approx(expected)


def test_a_split_mixture_of_one_and_ten_is_read_exactly():
    import litellm

    from tests import scripted

    scripted.install()
    # "1" is certain, then "0" at 0.7 and the end at 0.3: 0.3 * 1 + 0.7 * 10
    content = (
        litellm.completion(model="scripted/digits", messages=ask({"1": 0.3, "10": 0.7}), **RATING)
        .choices[0]
        .logprobs.content
    )
    assert read(
        [c.token for c in content], [{t.token: t.logprob for t in c.top_logprobs} for c in content]
    ) == pytest.approx(7.3)


@pytest.mark.parametrize("alias", ["split", "whole"])
@pytest.mark.parametrize("answers,expected", CASES)
def test_the_stand_in_judges_rating_through_the_resource(judges, alias, answers, expected):
    [result] = judges.run(alias, [LLMRequest("k", ask(answers), params=RATING)])
    assert rating(result) == pytest.approx(expected)
