"""Running great-expectations suites on polars frames as Dagster asset check results."""

from __future__ import annotations

import itertools
import threading

import dagster as dg
import polars as pl

_LOCK = threading.Lock()
_COUNTER = itertools.count()
_CONTEXT = None


def _context():
    global _CONTEXT
    if _CONTEXT is None:
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        _CONTEXT = gx.get_context(mode="ephemeral")
        # Checks run inside materializations; per-metric progress bars only clutter the logs.
        _CONTEXT.variables.progress_bars = ProgressBarsConfig(globally=False)
    return _CONTEXT


def validate(frame: pl.DataFrame, expectations: list, name: str):
    """Validate ``frame`` against expectation objects; returns GE's validation result."""
    import great_expectations as gx

    with _LOCK:
        ctx = _context()
        n = next(_COUNTER)
        source = ctx.data_sources.add_pandas(f"{name}_{n}")
        asset = source.add_dataframe_asset(name=f"{name}_{n}")
        batch = asset.add_batch_definition_whole_dataframe(f"{name}_{n}").get_batch(
            batch_parameters={"dataframe": frame.to_pandas()}
        )
        suite = gx.ExpectationSuite(name=f"{name}_{n}")
        for e in expectations:
            suite.add_expectation(e)
        return batch.validate(suite, result_format="SUMMARY")


def suite_check(frame: pl.DataFrame, expectations: list, name: str,
                severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR) -> dg.AssetCheckResult:
    """One check result for a whole suite; a failure lists each failed expectation with
    its column and example offending values."""
    result = validate(frame, expectations, name)
    failures = []
    for r in result.results:
        if r.success:
            continue
        cfg = r.expectation_config
        col = cfg.kwargs.get("column", "")
        examples = (r.result or {}).get("partial_unexpected_list") or (r.result or {}).get("observed_value")
        failures.append(f"{cfg.type}({col}): unexpected {examples!r}"[:400])
    return dg.AssetCheckResult(
        passed=bool(result.success),
        severity=severity,
        metadata={"expectations": len(expectations), "failed": len(failures),
                  "failures": dg.MetadataValue.md("\n".join(f"- {f}" for f in failures) or "none")},
    )


def rows_check(offending: pl.DataFrame, what: str, id_column: str,
               severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR) -> dg.AssetCheckResult:
    """A plain rule: passes when ``offending`` is empty; otherwise names the rows and why."""
    from assets.common.metadata import md_table

    return dg.AssetCheckResult(
        passed=offending.height == 0,
        severity=severity,
        metadata={"rule": what, "offending_rows": offending.height,
                  "offending_ids": dg.MetadataValue.text(", ".join(map(str, offending[id_column].head(20).to_list())) if offending.height else ""),
                  "examples": dg.MetadataValue.md(md_table(offending, 10) if offending.height else "none")},
    )
