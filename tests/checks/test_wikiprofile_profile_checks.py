"""The checks of WikiProfile's profiles and Table 2 when a subject has no thinking run: they
pass the legitimate outcome (KT null, the thinking shares null, named) and fail broken
tables, saying why."""

import polars as pl
import pytest

from assets.eval.wikiprofile import analysis
from assets.eval.wikiprofile import rules as method
from checks.eval import wikiprofile as ew


def fails(result, words: str) -> bool:
    return not result.passed and words in result.metadata["problems"].value


def swap(frame: pl.DataFrame, column: str, row: int, value) -> pl.DataFrame:
    values = frame[column].to_list()
    values[row] = value
    return frame.with_columns(pl.Series(column, values, dtype=frame.schema[column]))


def profiles(rows: list[tuple], run: str) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "model": "smollm2",
                "fact_id": f,
                "encodes": e,
                "knows": k0,
                "knows_thinking": kt,
                "profile": p,
                "thinking_run": run,
            }
            for f, e, k0, kt, p in rows
        ],
        schema=analysis.PROFILE_SCHEMA,
    )


# f1 direct recall, f2 encoded not known, f3 neither, f4 direct inference, f5 ungradable
MISSING = profiles(
    [
        ("f1", True, True, None, "direct_recall"),
        ("f2", True, False, None, "encoded_not_known"),
        ("f3", False, False, None, "not_encoded_not_known"),
        ("f4", False, True, None, "direct_inference"),
        ("f5", None, None, None, "ungradable"),
    ],
    "missing",
)
PRESENT = profiles(
    [
        ("f1", True, True, False, "direct_recall"),
        ("f2", True, False, True, "recall_with_thinking"),
        ("f3", False, False, False, "encoding_failure"),
        ("f4", False, True, True, "direct_inference"),
        ("f5", None, None, None, "ungradable"),
    ],
    "present",
)


def test_a_missing_thinking_run_passes_the_profile_checks():
    for frame in (MISSING, PRESENT):
        assert ew.profiles_schema(frame).passed and ew.profiles_follow_the_rule(frame).passed


@pytest.mark.parametrize(
    "broken, words",
    [
        (swap(MISSING, "knows_thinking", 1, True), "with knows_thinking though the thinking run is missing"),
        (swap(PRESENT, "knows_thinking", 1, None), "profiled with a thinking run but without knows_thinking"),
        # an undecided profile beside a known KT (f2: E, not K0, KT -> recall with thinking)
        (
            swap(PRESENT, "profile", 1, "encoded_not_known"),
            "whose profile is not the one its flags give (e.g. smollm2/f2)",
        ),
        # a decided profile without KT: the run cannot tell recall failure from recall with thinking
        (
            swap(MISSING, "profile", 1, "recall_failure"),
            "whose profile is not the one its flags give (e.g. smollm2/f2)",
        ),
    ],
)
def test_broken_profiles_around_the_thinking_run_fail_the_rule(broken, words):
    assert fails(ew.profiles_follow_the_rule(broken), words)


def test_a_model_half_with_a_thinking_run_or_an_unknown_run_fails_the_schema():
    mixed = swap(MISSING, "thinking_run", 0, "present")
    assert fails(ew.profiles_schema(mixed), "models with facts both with and without a thinking run: smollm2")
    assert fails(ew.profiles_schema(swap(MISSING, "thinking_run", 0, "maybe")), "thinking_run not in")
    assert fails(ew.profiles_schema(swap(MISSING, "thinking_run", 0, None)), "'thinking_run' has 1 nulls")


def table(frame: pl.DataFrame) -> pl.DataFrame:
    from assets.eval.wikiprofile import steps as profiling

    return profiling.summary_table([{"model": "smollm2", **method.profile_summary(frame.to_dicts())}])


def test_table_2_of_a_model_without_a_thinking_run_passes_with_its_thinking_shares_null():
    report = table(MISSING)
    row = report.row(0, named=True)
    # 5 facts: 3 profiled (f1-f3), f4 direct inference, f5 ungradable; 4 gradable
    assert (row["facts"], row["profiled"], row["thinking_run"]) == (5, 3, "missing")
    assert row["knows"] == 0.5  # (1 DR + 1 DI) / 4
    assert row["knows_thinking"] is None and row["knows_thinking_excl_direct"] is None
    assert ew.profile_report_shares(report).passed
    both = pl.concat([report, table(PRESENT).with_columns(pl.lit("qwen").alias("model"))])
    assert ew.profile_report_shares(both).passed


@pytest.mark.parametrize(
    "column, value, words",
    [
        # Knows without direct inference (the old Table 2): 1/3 of profiled instead of (1 + 1) / 4
        ("knows", 1 / 3, "whose knows is not direct recall + direct inference over the gradable facts"),
        ("knows_thinking", 0.0, "without a thinking run but with a share among knows_thinking"),
        ("recall_failure", 0.0, "without a thinking run but with a share among"),
        ("direct_recall", 0.5, "whose direct recall and undecided shares do not add up to 1"),
        # Knows in percent, as Table 2 held it before shares
        ("knows", 50.0, "knows outside [0, 1]"),
    ],
)
def test_a_broken_table_2_row_without_a_thinking_run_fails(column, value, words):
    assert fails(ew.profile_report_shares(swap(table(MISSING), column, 0, value)), words)


@pytest.mark.parametrize(
    "column, value, words",
    [
        # PRESENT: 3 profiled, 4 gradable; Knows = (1 DR + 1 DI) / 4 = 0.5, Knows(+Think) = (1 + 1 RwT + 1 DI) / 4 = 0.75
        ("knows", 1 / 3, "whose knows is not direct recall + direct inference over the gradable facts"),
        ("knows_thinking", 2 / 3, "whose knows_thinking is not the known-with-thinking profiles + direct inference"),
        ("knows_thinking_excl_direct", 0.75, "whose knows_thinking_excl_direct (Figure 4) is not"),
        ("knows_thinking", None, "with a thinking run but a null share among knows_thinking"),
        ("encoded_not_known", 0.0, "whose encoded_not_known is not recall failure + recall with thinking"),
        ("thinking_run", "maybe", "thinking_run not in"),
    ],
)
def test_a_broken_table_2_row_with_a_thinking_run_fails(column, value, words):
    report = table(PRESENT)
    row = report.row(0, named=True)
    assert (row["knows"], row["knows_thinking"], row["knows_thinking_excl_direct"]) == (0.5, 0.75, pytest.approx(2 / 3))
    assert ew.profile_report_shares(report).passed
    assert fails(ew.profile_report_shares(swap(report, column, 0, value)), words)


def test_the_threshold_sweep_of_a_model_without_a_thinking_run_passes():
    sweep = pl.concat(
        [
            table(MISSING)
            .drop("model")
            .with_columns(pl.lit("smollm2").alias("model"), pl.lit(e).alias("tau_enc"), pl.lit(k).alias("tau_know"))
            for e, k in analysis.TAU_GRID
        ]
    )
    assert ew.robustness_report_shares(sweep).passed
    assert fails(
        ew.robustness_report_shares(swap(sweep, "knows_thinking", 0, 0.1)), "without a thinking run but with a share"
    )
