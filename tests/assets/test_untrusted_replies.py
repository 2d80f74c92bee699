"""Model replies are untrusted text (issue 28): every parser of a reply returns a parsed value
or a reject reason (``ParseError``, which the LLM resource records as the call's error) on
any string, never another exception, and in time linear in the reply's length.

The named cases come first; then, for each parser, thousands of generated replies, made of
the pieces the parsers look for (brackets, labels, numbers, separators) and of any text."""

import contextlib
import math
import signal
from types import SimpleNamespace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from assets.common import parsing, verdicts
from assets.eval.quit import steps as readers
from assets.eval.wikiprofile import rules as profiling_rules
from assets.quit import rules as quit_rules
from assets.recor import rules as recor_rules
from assets.wikiprofile import rules as wp_rules
from resources.llm import ParseError

REPLIES = settings(max_examples=2000, deadline=None)

# What the parsers look for, so that generated replies reach past their first check.
PIECES = [
    "[",
    "]",
    "{",
    "}",
    "{{",
    "}}",
    "(",
    ")",
    ":",
    ";",
    ",",
    ".",
    "?",
    "!",
    "-",
    "*",
    "**",
    "•",
    "'",
    '"',
    "“",
    "”",
    "\n",
    "\r\n",
    " ",
    "  ",
    "\t",
    "\u2028",
    "1",
    "2",
    "3",
    "10",
    "0",
    "-1",
    "99999999999999999999",
    "1.5",
    "120k",
    "Yes",
    "no",
    "TRUE",
    "Question:",
    "question 2:",
    "Q:",
    "Subject:",
    "Answer:",
    "Final answer -",
    "answer is",
    "REJECT",
    "Target:",
    "Relevant signals:",
    "Irrelevant signals:",
    "CORRECT",
    "INCORRECT",
    "PARTIALLY",
    "OTHER",
    "PERSON",
    "LOCATION",
    "HUM:ind",
    "LOC:city",
    "NO ANSWER",
    "A",
    "B)",
    "(C)",
    "D.",
    "[1] > [2]",
    "Who wrote",
    "What is the capital of",
    "People",
    "Science",
    "Philosophy and Religion",
    "topic_shift",
    "what-if",
    "Paris",
    "the",
    "é",
    "\x00",
    "\ufeff",
    "🙂",
]
replies = st.one_of(
    st.text(), st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=4)), max_size=40).map("".join)
)

# Long replies that defeat a backtracking regex or a recursive reader. A linear parser reads
# each in milliseconds; a quadratic one needs minutes.
N = 50_000
PATHOLOGICAL = {
    "minus signs": "[" + "-" * 100_000 + "1]",
    "open brackets": "[" * N,
    "open braces": "{{" * N,
    "digits": "1" * N + "a",
    "digits and commas": "1," * N + "1a",
    "digit colons": "1:" + " " * N + "x",
    "capitals": "A" * N,
    "spaces after a label": "question" + " " * N + "x",
    "labels without a question": "Subject: x\n" + "question: " * (N // 2),
    "answer is": "answer " + " " * N + "is" + " " * N + "-" + " " * N,
    "tag spaces": "{{" + " " * N + ";",
    "tag type spaces": "{{a;" + " " * N,
    "long number": "Score: " + "9" * N,
    "nested literal": "[" + "[" * 300 + "]" * 300 + "]",
    "unhashable": "[{{}: 1}]",
}


@contextlib.contextmanager
def within(seconds: float):
    """Fails the block if it runs longer than ``seconds`` (a parser that backtracks)."""

    def stop(*_):
        raise TimeoutError(f"took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def parsed_or_rejected(parse, text):
    """The parser's value, or None when it rejected the reply with its reason."""
    try:
        return parse(text)
    except ParseError as e:
        assert str(e)
        return None


def result(text, top=None, tokens=None, alternatives=None):
    return SimpleNamespace(text=text, top_logprobs=top, tokens=tokens, token_logprobs=alternatives)


# Every parser of model text, as one call on a reply.
PARSERS = {
    "parse_yes_no": parsing.parse_yes_no,
    "parse_list": lambda t: parsing.parse_list(t, 5),
    "parse_permutation": lambda t: parsing.parse_permutation(t, 20),
    "is_question": parsing.is_question,
    "verdict": lambda t: verdicts.verdict(result(t)),
    "rating": lambda t: verdicts.rating(result(t)),
    "wikiprofile.parse_category": wp_rules.parse_category,
    "wikiprofile.parse_names": wp_rules.parse_names,
    "wikiprofile.parse_question": wp_rules.parse_question,
    "wikiprofile.parse_reverse": wp_rules.parse_reverse,
    "wikiprofile.parse_entity_type": wp_rules.parse_entity_type,
    "wikiprofile.parse_options": lambda t: wp_rules.parse_options(t, "Paris"),
    "wikiprofile.parse_markup": lambda t: wp_rules.parse_markup(t, "Paris is the capital of France since 508."),
    "recor.parse_aspects": lambda t: recor_rules.parse_aspects(t, 5),
    "recor.parse_reasoning": recor_rules.parse_reasoning,
    "recor.parse_question": recor_rules.parse_question,
    "recor.parse_answer": recor_rules.parse_answer,
    "recor.parse_label": lambda t: recor_rules.parse_label(t, ["topic_shift", "what_if", "why"]),
    "quit.parse_short_answer": quit_rules.parse_short_answer,
    "quit.parse_last_line_answer": quit_rules.parse_last_line_answer,
    "quit.parse_type_label": quit_rules.parse_type_label,
    "eval.parse_grades": lambda t: profiling_rules.parse_grades(t, 4),
    "eval.mc_letter": profiling_rules.mc_letter,
    "eval.mc_grade": lambda t: profiling_rules.mc_grade(t, 1),
    "eval.final_answer": profiling_rules.final_answer,
    "eval.rule_grade": lambda t: profiling_rules.rule_grade(t, "120k"),
    "eval.rule_grade_gold": lambda t: profiling_rules.rule_grade("about 120,000", t),
    "eval.released_answer": readers.released_answer,
}


# --- named cases -----------------------------------------------------------------------------------


def test_parse_names_on_an_unhashable_literal_and_a_run_of_minus_signs():
    assert wp_rules.parse_names("[{{}: 1}]") == ["[{{}: 1}]"]
    assert wp_rules.parse_names("[" + "-" * 100_000 + "1]") == ["[" + "-" * 100_000 + "1]"]
    assert wp_rules.parse_names("['Mount Kenya', 'Nile']") == ["Mount Kenya", "Nile"]


def test_numbers_too_long_to_convert_are_no_numbers():
    assert parsing.parse_permutation("[" + "1" * 5000 + "] > [2] > [1]", 3) == ([1, 0, 2], True)
    assert verdicts.rating(result("9" * 5000)) is None
    assert verdicts.number_distribution(["8", "9" * 5000], [{"8": 0.0}, None]) == {}
    with pytest.raises(ParseError):
        profiling_rules.parse_grades("1" * 5000 + ": CORRECT", 1)


def test_log_probabilities_out_of_range_are_probabilities_still():
    # a server's bug or a hostile cache entry: above 0, infinite or not a number
    assert verdicts.yes_probability({"Yes": 800.0, "No": 0.0}) == pytest.approx(0.5)
    assert verdicts.yes_probability({"Yes": math.nan, "No": -1.0}) == 0.0
    assert verdicts.rating(result("8", top={"8": math.inf, "7": -1.0})) == pytest.approx(
        (8 + 7 * math.exp(-1)) / (1 + math.exp(-1))
    )


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_every_parser_reads_a_pathological_reply_in_linear_time(name):
    failed = []
    for parser, parse in PARSERS.items():
        try:
            with within(1.0):
                parsed_or_rejected(parse, PATHOLOGICAL[name])
        except Exception as e:  # every parser's failure is listed, not the first only
            failed.append(f"{parser}: {type(e).__name__} {e}"[:200])
    assert not failed, failed


# --- properties ---------------------------------------------------------------------------------------

# What a parsed value must be, where there is more to say than "no exception".
LABELS = {"CORRECT", "INCORRECT", "PARTIALLY", "OTHER"}
INVARIANTS = {
    "parse_yes_no": lambda v: isinstance(v, bool),
    "parse_list": lambda v: 0 < len(v) <= 5 and all(isinstance(i, str) and i for i in v),
    "parse_permutation": lambda v: sorted(v[0]) == list(range(20)),
    "rating": lambda v: v is None or 0 <= v <= 10,
    "verdict": lambda v: v in (True, False, None),
    "wikiprofile.parse_names": lambda v: all(isinstance(n, str) and n for n in v),
    "wikiprofile.parse_options": lambda v: len(v) == 3,
    "recor.parse_aspects": lambda v: 0 < len(v) <= 5,
    "eval.parse_grades": lambda v: len(v) == 4 and set(v) <= LABELS,
    "eval.mc_grade": lambda v: v in LABELS,
    "eval.rule_grade": lambda v: v in LABELS,
    "eval.rule_grade_gold": lambda v: v in LABELS,
}


@REPLIES
@given(text=replies)
@example(text="[{{}: 1}]")
@example(text="-" * 10_000)
@example(text="[" + "1" * 5000 + "]")
@example(text="[0x" + "f" * 5000 + "]")
def test_every_parser_returns_a_value_or_a_reason_on_any_reply(text):
    # Every parser reads each generated reply: thousands of replies for each, for the cost
    # of generating them once.
    for name, parse in PARSERS.items():
        try:
            value = parse(text)
        except ParseError as e:
            assert str(e), name
            continue
        except Exception as e:
            raise AssertionError(f"{name} raised {type(e).__name__}: {e}") from e
        assert INVARIANTS.get(name, lambda v: True)(value), f"{name} returned {value!r}"


@settings(max_examples=1000, deadline=None)  # the sizes vary here; the parsers met 2000 replies above
@given(text=replies, n=st.integers(0, 30), limit=st.integers(1, 8))
def test_permutations_and_lists_keep_their_sizes(text, n, limit):
    order, repaired = parsing.parse_permutation(text, n)
    assert sorted(order) == list(range(n)) and isinstance(repaired, bool)
    items = parsed_or_rejected(lambda t: parsing.parse_list(t, limit), text)
    assert items is None or 0 < len(items) <= limit
    aspects = parsed_or_rejected(lambda t: recor_rules.parse_aspects(t, limit), text)
    assert aspects is None or 0 < len(aspects) <= limit
    grades = parsed_or_rejected(lambda t: profiling_rules.parse_grades(t, limit), text)
    assert grades is None or len(grades) == limit


log_probabilities = st.floats(allow_nan=True, allow_infinity=True)
tokens = st.lists(
    st.one_of(
        st.sampled_from(["1", "0", "10", " 8", "9", "(7", "8.", "x", "Score", ":", " ", "\n", "99999"]),
        st.text(max_size=3),
    ),
    max_size=6,
)
alternatives = st.dictionaries(
    st.one_of(st.sampled_from(["1", "0", "10", " 8", "Yes", "no", " TRUE"]), st.text(max_size=3)),
    log_probabilities,
    max_size=5,
)


@REPLIES
@given(
    tokens=tokens,
    top=st.lists(st.one_of(st.none(), alternatives), max_size=6),
    low=st.integers(0, 3),
    high=st.integers(3, 12),
)
def test_ratings_and_verdicts_from_any_log_probabilities(tokens, top, low, high):
    # the served model's tokens and their alternatives, as cached: any text, any number
    scored = verdicts.rating(
        result("".join(tokens), tokens=tokens or None, alternatives=top if tokens else None), low, high
    )
    assert scored is None or low <= scored <= high
    first = top[0] if top else None
    scored = verdicts.rating(result("".join(tokens), top=first), low, high)
    assert scored is None or low <= scored <= high
    p = verdicts.yes_probability(first)
    assert p is None or 0.0 <= p <= 1.0
    assert verdicts.verdict(result("".join(tokens), top=first)) in (True, False, None)
