"""Every headline number with its uncertainty and every comparison with its test (issue 48).

A report's metric is a mean over items (questions, turns, facts). For each system (a row of a
table) and metric, :func:`summarize` gives the mean, a confidence interval by the percentile
bootstrap over the items (``scipy.stats.bootstrap``), and the system's paired two-sided test
against the best system of its table on the items both have: the randomization test
(the paired permutation test of ``scipy.stats.permutation_test``, as sign flips of the
paired differences: the Fisher test ranx's ``compare`` runs) or Student's paired t (``scipy.stats.ttest_rel``), the p-values of a
table's comparisons corrected with Holm-Bonferroni. A system is marked ``tied_best`` when it is
the best or not significantly worse than it at the level. Every system's resamples and
permutations are drawn from the same seed, so the intervals of two systems of a table use the
same resampled items: they are paired.

A macro average (RECOR's turn -> domain -> macro) is bootstrapped per stratum: each domain's
turns are resampled on their own and the statistic is the mean of the domain means.

:class:`UncertaintySettings` is the resource a run configures (resamples, seed, level, test);
what each table's definitions say is :meth:`UncertaintySettings.describe`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Literal

import dagster as dg
import numpy as np
import polars as pl
from pydantic import Field

RANDOMIZATION, STUDENT = "randomization", "student"
# The columns :func:`summarize` adds to a table's keys, and their definitions.
LONG_COLUMNS = {
    "metric": pl.String,
    "value": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "items": pl.Int64,
    "p": pl.Float64,
    "tied_best": pl.Boolean,
}


class UncertaintySettings(dg.ConfigurableResource):
    """How the reports' intervals and tests are computed. A run may set every field: they
    change what is computed, not where anything is."""

    resamples: int = Field(default=1000, description="bootstrap resamples of each interval")
    permutations: int = Field(default=1000, description="random sign flips of each randomization test")
    seed: int = Field(default=0, description="the seed of every resample and permutation")
    level: float = Field(default=0.95, description="the confidence level of the intervals")
    test: Literal["randomization", "student"] = Field(
        default=RANDOMIZATION,
        description="the paired test of each system against its table's best: randomization (Fisher) or student (t)",
    )
    alpha: float = Field(default=0.05, description="the significance level of the Holm-corrected p-values")

    def describe(self, items: str) -> str:
        """The method, as a table's definitions state it; ``items`` names what is resampled."""
        test = (
            f"a paired two-sided randomization (Fisher) test with {self.permutations:,} sign flips"
            if self.test == RANDOMIZATION
            else "a paired two-sided Student's t test"
        )
        return (
            f"{self.level:.0%} interval: percentile bootstrap over {items} ({self.resamples:,} resamples, seed "
            f"{self.seed}); p: {test} of the system against the best of its table on the {items} both have, "
            f"Holm-Bonferroni-corrected over the table's comparisons; tied_best: the best, or not significantly "
            f"worse than it at {self.alpha}"
        )


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def interval(values: Sequence[float] | np.ndarray, settings: UncertaintySettings) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of ``values``; (nan, nan) over no item,
    the value itself where every item is equal (nothing varies to resample)."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return math.nan, math.nan
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    return interval_of_strata([x], settings)


def interval_of_strata(strata: Sequence[np.ndarray], settings: UncertaintySettings) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of the strata's means (a macro average),
    each stratum's items resampled on their own; one stratum is a plain mean. The resamples
    are scipy's (``scipy.stats.bootstrap``, ``method="percentile"``: per stratum in order, a
    draw of ``resamples`` x items indices from the seed) and so is the interval, to 1e-9
    (``test_the_interval_is_scipys_percentile_bootstrap``); each stratum's draw is kept as
    counts of every item, so the resampled means of every system and metric of a table are
    one matrix product each instead of scipy's gather of every resample."""
    strata = [np.asarray(s, dtype=float) for s in strata if len(s)]
    if not strata:
        return math.nan, math.nan
    flat = np.concatenate(strata)
    if np.all(flat == flat[0]):
        return float(flat[0]), float(flat[0])
    # a stratum of one item has nothing to resample (scipy needs two): its mean is fixed
    fixed = sum(float(s[0]) for s in strata if len(s) == 1)
    varying = [s for s in strata if len(s) > 1]
    if not varying:
        return fixed / len(strata), fixed / len(strata)
    counts = _resample_counts(tuple(len(s) for s in varying), settings.resamples, settings.seed)
    means = sum(c @ s / len(s) for c, s in zip(counts, varying))
    alpha = (1 - settings.level) / 2
    low, high = np.quantile((means + fixed) / len(strata), [alpha, 1 - alpha])
    return float(low), float(high)


@functools.lru_cache(maxsize=4)
def _resample_counts(sizes: tuple[int, ...], resamples: int, seed: int) -> tuple[np.ndarray, ...]:
    """How often each item of each stratum (of ``sizes`` items) is drawn in each resample, as
    scipy draws them: ``rng.integers(0, n, (resamples, n))`` per stratum in order, from one
    generator of ``seed``. Kept for the next system of the same table."""
    rng = _rng(seed)
    out = []
    for n in sizes:
        drawn = rng.integers(0, n, (resamples, n))
        flat = (drawn + np.arange(resamples)[:, None] * n).ravel()
        out.append(np.bincount(flat, minlength=resamples * n).reshape(resamples, n).astype(float))
    return tuple(out)


def paired_p(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, settings: UncertaintySettings) -> float:
    """The two-sided p-value of the paired test of ``a`` against ``b`` (the same items, in
    the same order): 1.0 where the two never differ or on one item (no test can tell them
    apart: one pair's two sign flips are as extreme)."""
    from scipy.stats import ttest_rel

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired scores of {x.size} and {y.size} items: a paired test needs the same items")
    if x.size < 2 or np.all(x == y):
        return 1.0
    if settings.test == STUDENT:
        return float(ttest_rel(x, y).pvalue) if np.std(x - y) > 0 else 0.0
    null, exact = sign_flips(x - y, settings.permutations, settings.seed)
    return p_from_null(null, float(np.mean(x - y)), exact)


# The words of a sign-flip block: 4M, 16 MB of words and 32 MB of flipped signs.
SIGN_FLIP_BLOCK = 1 << 22
# The sign matrices kept for the next comparison of a table (its systems share the items and
# the seed, so the draws): up to 8M signs (64 MB) each.
KEPT_SIGNS = 1 << 23


def sign_flips(d: np.ndarray, permutations: int, seed: int) -> tuple[np.ndarray, bool]:
    """The randomization test's null distribution of the mean paired difference ``d``, and
    whether it is exact. With no more sign flips (2^items) than ``permutations``, every flip
    once, as scipy's ``permutation_test`` enumerates every pairing (an exact test). Else the
    flips scipy draws: it swaps a pair by shuffling its two scores with
    ``Generator.permuted``, which draws one 32-bit word per pair and swaps when its low bit
    is 0; the same words drawn here flip the same pairs, so the null distribution is scipy's
    (``test_the_p_value_is_scipys_paired_permutation_test``), without scipy's Python loop over
    the items (0.27 s a test at 2,000 items, 0.7 s at RECOR's 3,000 turns)."""
    n = d.size
    if n < 63 and 2**n <= permutations:
        flips = 1 - 2 * ((np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n)) & 1)
        return flips @ d / n, True
    if permutations * n <= KEPT_SIGNS:
        return _kept_signs(n, permutations, seed) @ d / n, False
    return np.concatenate([signs @ d / n for signs in _sign_blocks(n, permutations, seed)]), False


def _sign_blocks(n: int, permutations: int, seed: int):
    """scipy's sign flips of ``n`` pairs, a block of permutations at a time: every
    permutation's words at once would be permutations x items (8 GB at a million items);
    drawn in order, the blocks are the same words."""
    rng = _rng(seed)
    block = max(1, SIGN_FLIP_BLOCK // n)
    for start in range(0, permutations, block):
        words = rng.integers(0, 2**32, size=(min(block, permutations - start), n), dtype=np.uint32)
        yield np.where((words & 1) == 0, -1.0, 1.0)


@functools.lru_cache(maxsize=2)
def _kept_signs(n: int, permutations: int, seed: int) -> np.ndarray:
    return np.concatenate(list(_sign_blocks(n, permutations, seed)))


def p_from_null(null: np.ndarray, observed: float, exact: bool) -> float:
    """The two-sided p-value of ``observed`` against its null distribution, as scipy's
    ``permutation_test`` computes it: twice the smaller tail, each tail counting the null
    values at least as extreme within a relative 100 machine epsilons, plus the observed
    itself for a random (not exact) test, at most 1."""
    adjustment = 0 if exact else 1
    gamma = abs(np.finfo(float).eps * 100 * observed)
    less = (np.count_nonzero(null <= observed + gamma) + adjustment) / (null.size + adjustment)
    greater = (np.count_nonzero(null >= observed - gamma) + adjustment) / (null.size + adjustment)
    return float(min(1.0, 2 * min(less, greater)))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the order given: the i-th smallest of m times
    (m - i), made non-decreasing in that order, at most 1; a nan stays nan."""
    indexed = sorted((p, i) for i, p in enumerate(pvalues) if not math.isnan(p))
    m, running, adjusted = len(indexed), 0.0, [math.nan] * len(pvalues)
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def summarize(
    scores: pl.DataFrame,
    keys: Sequence[str],
    item: str,
    metrics: Sequence[str],
    settings: UncertaintySettings,
    within: Sequence[str] = (),
    strata: str | None = None,
    lower_is_better: Sequence[str] = (),
    compare: bool = True,
) -> pl.DataFrame:
    """One row per system (its ``keys``) and metric of ``scores`` (one row per system and
    ``item``, a column per metric): the mean (the macro mean over ``strata`` where given),
    its interval, the items, and the Holm-corrected p of the paired test against the best
    system of its table (the systems sharing the ``within`` columns' values, such as a split)
    with ``tied_best``. The best has p null. A metric in ``lower_is_better`` is best lowest.
    A null score is no item of that system. Without ``compare``, intervals alone (p and
    ``tied_best`` null): what a table of systems from different tables (the leaderboard) shows."""
    keys, within = list(keys), list(within)
    systems = [k for k in keys if k not in within]
    rows: list[dict] = []
    for metric in metrics:
        present = scores.filter(pl.col(metric).is_not_null()) if metric in scores.columns else scores.clear()
        tables = present.group_by(within, maintain_order=True) if within else [((), present)]
        for _, table in tables:
            rows += _compare(table, keys, systems, item, metric, settings, strata, metric in lower_is_better, compare)
    schema = {**{k: scores.schema[k] for k in keys}, **LONG_COLUMNS}
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def _compare(
    table: pl.DataFrame,
    keys: list[str],
    systems: list[str],
    item: str,
    metric: str,
    settings: UncertaintySettings,
    strata: str | None,
    lower: bool,
    compare: bool = True,
) -> list[dict]:
    """The rows of one table's systems for one metric."""
    found = []
    for key, group in table.sort(item).group_by(keys, maintain_order=True):
        values = group[metric].to_numpy().astype(float)
        if strata:
            parts = [g[metric].to_numpy().astype(float) for _, g in group.group_by(strata, maintain_order=True)]
            mean = float(np.mean([p.mean() for p in parts]))
            low, high = interval_of_strata(parts, settings)
        else:
            mean = float(values.mean())
            low, high = interval(values, settings)
        found.append((dict(zip(keys, key)), mean, low, high, group.select(item, metric)))
    if not found:
        return []
    if not compare:
        return [
            [*labels.values(), metric, mean, low, high, own.height, None, None]
            for labels, mean, low, high, own in found
        ]
    best = (min if lower else max)(range(len(found)), key=lambda i: (found[i][1], -i))
    raw = []
    for i, (_, _, _, _, own) in enumerate(found):
        if i == best:
            raw.append(math.nan)
            continue
        paired = own.join(found[best][4], on=item, how="inner", suffix="_best")
        raw.append(paired_p(paired[metric].to_numpy(), paired[f"{metric}_best"].to_numpy(), settings))
    adjusted = holm(raw)
    rows = []
    for i, (labels, mean, low, high, own) in enumerate(found):
        p = None if i == best else adjusted[i]
        tied = i == best or (p is not None and p >= settings.alpha)
        rows.append([*labels.values(), metric, mean, low, high, own.height, p, tied])
    return rows


def attach(table: pl.DataFrame, long: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
    """``table``, its rows in their order, with for each metric of ``long`` its ``<metric>
    ci_low``, ``<metric> ci_high`` and ``<metric> tied_best`` columns beside it (null where a
    row has none)."""
    keys = list(keys)
    if long.is_empty():
        return table
    wide = long.pivot(on="metric", index=keys, values=["ci_low", "ci_high", "tied_best"])
    renamed = {}
    for metric in long["metric"].unique(maintain_order=True):
        for column in ("ci_low", "ci_high", "tied_best"):
            renamed[f"{column}_{metric}"] = f"{metric} {column}"
    wide = wide.rename({k: v for k, v in renamed.items() if k in wide.columns})
    return table.join(wide, on=keys, how="left", nulls_equal=True, maintain_order="left")


def detached(table: pl.DataFrame, keys: Sequence[str], metrics: Sequence[str]) -> pl.DataFrame:
    """What :func:`attach` put into a stored ``table``, back in :func:`summarize`'s shape
    (value, ci_low, ci_high, tied_best; the items and p are not stored) for those of
    ``metrics`` whose intervals the table holds: what a printed table reads. Empty where the
    table was stored without intervals."""
    ends = ("ci_low", "ci_high", "tied_best")
    parts = [
        table.select(
            *keys, pl.lit(m).alias("metric"), pl.col(m).alias("value"), *(pl.col(f"{m} {e}").alias(e) for e in ends)
        )
        for m in metrics
        if f"{m} ci_low" in table.columns
    ]
    schema = {**{k: table.schema[k] for k in keys}, **{c: LONG_COLUMNS[c] for c in ("metric", "value", *ends)}}
    return pl.concat(parts, how="vertical_relaxed") if parts else pl.DataFrame(schema=schema)


def definitions(keys: dict[str, str], settings: UncertaintySettings, items: str) -> dict[str, str]:
    """The definitions of a :func:`summarize` table's columns."""
    return {
        **keys,
        "metric": "the table's metric",
        "value": "its value, as the table reports it",
        "ci_low": f"the lower end of its {settings.level:.0%} interval; {settings.describe(items)}",
        "ci_high": f"the upper end of its {settings.level:.0%} interval",
        "items": f"the {items} averaged over",
        "p": "the Holm-corrected p of the paired test against the table's best system (blank: the best)",
        "tied_best": f"the best, or not significantly worse than it at {settings.alpha}",
    }


def formatted(long: pl.DataFrame, keys: Sequence[str], digits: int = 3) -> pl.DataFrame:
    """A summary as printed tables show it: a row per system, a column per metric, each cell
    ``value [low, high]``, with ``*`` on the best and the systems not significantly worse."""
    keys = list(keys)
    if long.is_empty():
        return pl.DataFrame(schema={k: long.schema[k] for k in keys})
    cell = pl.format(
        "{} [{}, {}]{}",
        pl.col("value").round(digits),
        pl.col("ci_low").round(digits),
        pl.col("ci_high").round(digits),
        pl.when(pl.col("tied_best")).then(pl.lit("*")).otherwise(pl.lit("")),
    )
    return long.with_columns(cell.alias("cell")).pivot(on="metric", index=keys, values="cell")


PRINTED_NOTE = "value [95% interval]; * the best of its table or not significantly worse (docs/evaluate/uncertainty.md)"
