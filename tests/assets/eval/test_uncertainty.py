"""Issue 48's statistics on fixtures with known answers: the intervals are scipy's percentile
bootstrap, the p-values scipy's paired permutation test (and an exact enumeration by hand),
Holm's correction its textbook values; two identical systems are never marked different, two
clearly separated ones always are."""

import math

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from scipy import stats

from assets.eval import uncertainty as u

SETTINGS = u.UncertaintySettings(resamples=2000, permutations=2000, seed=7)


def scores(n: int = 60, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    return a, np.clip(a - 0.05 + rng.normal(0, 0.1, n), 0, 1)


def test_the_interval_is_scipys_percentile_bootstrap():
    a, _ = scores()
    expected = stats.bootstrap(
        (a,), np.mean, n_resamples=2000, method="percentile", rng=np.random.default_rng(7), confidence_level=0.95
    ).confidence_interval
    low, high = u.interval(a, SETTINGS)
    assert (low, high) == (pytest.approx(expected.low, abs=1e-9), pytest.approx(expected.high, abs=1e-9))
    assert low < a.mean() < high
    assert u.interval([0.5, 0.5, 0.5], SETTINGS) == (0.5, 0.5) and all(map(math.isnan, u.interval([], SETTINGS)))


def test_a_macro_interval_resamples_each_stratum_on_its_own():
    a, b = scores(40)[0], scores(25, seed=9)[0]
    expected = stats.bootstrap(
        (a, b),
        lambda x, y, axis=-1: (np.mean(x, axis=axis) + np.mean(y, axis=axis)) / 2,
        n_resamples=2000,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(7),
    ).confidence_interval
    low, high = u.interval_of_strata([a, b], SETTINGS)
    assert (low, high) == (pytest.approx(expected.low, abs=1e-9), pytest.approx(expected.high, abs=1e-9))


def test_a_stratum_of_one_item_is_a_constant_of_the_macro():
    a = scores(40)[0]
    expected = stats.bootstrap(
        (a,),
        lambda x, axis=-1: (np.mean(x, axis=axis) + 0.9) / 2,
        n_resamples=2000,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(7),
    ).confidence_interval
    low, high = u.interval_of_strata([a, np.array([0.9])], SETTINGS)
    assert (low, high) == (pytest.approx(expected.low, abs=1e-9), pytest.approx(expected.high, abs=1e-9))
    assert u.interval_of_strata([np.array([0.2]), np.array([0.6])], SETTINGS) == pytest.approx((0.4, 0.4))


def test_the_p_value_is_scipys_paired_permutation_test():
    """scipy's paired test draws a permutation of each pair; the project's draws the same
    sign flips faster: its p-value from scipy's null distribution is scipy's, and so is its
    own, on small samples (every flip enumerated) and on large ones (the same flips drawn)."""
    a, b = scores()

    def statistic(x, y, axis=-1):
        return np.mean(x, axis=axis) - np.mean(y, axis=axis)

    scipys = stats.permutation_test(
        (a, b), statistic, permutation_type="samples", n_resamples=2000, vectorized=True, rng=np.random.default_rng(7)
    )
    assert u.p_from_null(scipys.null_distribution, float(np.mean(a - b)), exact=False) == pytest.approx(
        scipys.pvalue, abs=1e-12
    )
    assert u.paired_p(a, b, SETTINGS) == pytest.approx(scipys.pvalue, abs=1e-12)
    for n in (3, 6, 9):
        x, y = a[:n], b[:n]
        exact = stats.permutation_test((x, y), statistic, permutation_type="samples", vectorized=True).pvalue
        assert u.paired_p(x, y, SETTINGS) == pytest.approx(exact, abs=1e-9), n
    student = u.UncertaintySettings(test="student")
    assert u.paired_p(a, b, student) == pytest.approx(stats.ttest_rel(a, b).pvalue, abs=1e-9)


def test_a_small_test_enumerates_every_sign_flip():
    # five items all one better: 2 of the 2^5 flips are as extreme (all +, all -)
    assert u.paired_p([1, 1, 1, 1, 1], [0, 0, 0, 0, 0], SETTINGS) == pytest.approx(2 / 32, abs=1e-12)
    assert u.paired_p([0.3, 0.2], [0.3, 0.2], SETTINGS) == 1.0
    assert u.paired_p([1.0], [0.0], SETTINGS) == 1.0  # one pair: +1 and -1 are as extreme


def test_holm_is_the_textbook_step_down():
    assert u.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    with_nan = u.holm([0.5, math.nan, 0.9])
    assert with_nan[0] == 1.0 and math.isnan(with_nan[1]) and with_nan[2] == 1.0


def table(systems: dict[str, np.ndarray], split: str = "test") -> pl.DataFrame:
    return pl.concat(
        pl.DataFrame({"system": s, "split": split, "question_id": [f"q{i}" for i in range(len(v))], "m": v})
        for s, v in systems.items()
    )


def test_identical_systems_are_never_marked_different_and_separated_ones_always_are():
    rng = np.random.default_rng(0)
    for seed in range(5):
        same = rng.random(30)
        long = u.summarize(table({"a": same, "b": same.copy()}), ["system"], "question_id", ["m"], SETTINGS)
        assert long["tied_best"].all() and long.filter(pl.col("system") == "b")["p"].to_list() in ([1.0], [None])
        better = rng.random(50) * 0.2 + 0.8
        apart = table({"good": better, "poor": better - 0.5, "close": better - 0.0})
        long = u.summarize(apart, ["system"], "question_id", ["m"], u.UncertaintySettings(seed=seed))
        marked = dict(zip(long["system"], long["tied_best"]))
        assert marked == {"good": True, "poor": False, "close": True}
        assert long.filter(pl.col("system") == "poor")["p"][0] < 0.01


def test_a_table_is_summarized_within_its_splits_and_attached():
    a, b = scores()
    frame = pl.concat([table({"x": a, "y": b}, "test"), table({"x": b, "y": a}, "dev")])
    long = u.summarize(frame, ["system", "split"], "question_id", ["m"], SETTINGS, within=["split"])
    best = {s: long.filter((pl.col("split") == s) & pl.col("p").is_null())["system"][0] for s in ("test", "dev")}
    assert best == {"test": "x", "dev": "y"}
    assert long["items"].to_list() == [60] * 4
    report = pl.DataFrame({"system": ["x", "y"], "split": ["test", "test"], "m": [a.mean(), b.mean()]})
    attached = u.attach(report, long, ["system", "split"])
    assert attached.columns == ["system", "split", "m", "m ci_low", "m ci_high", "m tied_best"]
    assert (attached["m ci_low"] < attached["m"]).all() and (attached["m"] < attached["m ci_high"]).all()
    # and read back as summarize gave it, less what is not stored (items, p)
    back = u.detached(attached, ["system", "split"], ["m", "not_stored"])
    kept = long.filter(pl.col("split") == "test").select(back.columns)
    assert_frame_equal(back, kept, check_row_order=False)
    assert u.detached(report, ["system", "split"], ["m"]).is_empty()
    printed = u.formatted(long.filter(pl.col("split") == "test"), ["system"])
    assert printed.filter(pl.col("system") == "x")["m"][0].endswith("]*")


def test_a_macro_summary_is_the_mean_of_its_strata():
    frame = pl.DataFrame(
        {
            "system": ["s"] * 5,
            "turn": ["a1", "a2", "a3", "b1", "b2"],
            "domain": ["a", "a", "a", "b", "b"],
            "m": [1.0, 0.0, 0.5, 1.0, 1.0],
        }
    )
    long = u.summarize(frame, ["system"], "turn", ["m"], SETTINGS, strata="domain")
    assert long["value"][0] == pytest.approx((0.5 + 1.0) / 2)


def test_the_sign_flips_drawn_a_block_at_a_time_are_scipys(monkeypatch):
    # an odd number of items split over blocks of permutations: the 32-bit words run on across them
    rng = np.random.default_rng(5)
    a = rng.random(301)
    b = np.clip(a + rng.normal(0.01, 0.1, 301), 0, 1)
    expected = stats.permutation_test(
        (a, b),
        lambda x, y, axis=-1: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=2000,
        vectorized=True,
        rng=np.random.default_rng(7),
    )
    monkeypatch.setattr(u, "SIGN_FLIP_BLOCK", 301 * 7)
    u._kept_signs.cache_clear()
    assert u.paired_p(a, b, SETTINGS) == pytest.approx(expected.pvalue, abs=1e-12)
    # and without keeping the signs for the next comparison (a table of many items)
    monkeypatch.setattr(u, "KEPT_SIGNS", 0)
    assert u.paired_p(a, b, SETTINGS) == pytest.approx(expected.pvalue, abs=1e-12)
    u._kept_signs.cache_clear()
    assert 0.001 < expected.pvalue < 1
