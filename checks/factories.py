"""Check building blocks: great-expectations suites on polars frames, plain row rules, problem
lists (what is wrong with a table's rows, in words), and the factories every benchmark's
checks use (a table's shape, a rejects table's vocabulary, an LLM step's accounting)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import dagster as dg
import polars as pl

from assets.common.sharing import MANIFEST_SCHEMA
from resources.storage import exists

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


def suite_check(
    frame: pl.DataFrame, expectations: list, name: str, severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR
) -> dg.AssetCheckResult:
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
        metadata={
            "expectations": len(expectations),
            "failed": len(failures),
            "failures": dg.MetadataValue.md("\n".join(f"- {f}" for f in failures) or "none"),
        },
    )


def rows_check(
    offending: pl.DataFrame,
    what: str,
    id_column: str | None = None,
    severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR,
) -> dg.AssetCheckResult:
    """A plain rule: passes when ``offending`` is empty; otherwise names the rows (by
    ``id_column``, else by the first column) and why."""
    from assets.common.metadata import md_table

    id_column = id_column or offending.columns[0]

    return dg.AssetCheckResult(
        passed=offending.height == 0,
        severity=severity,
        metadata={
            "rule": what,
            "offending_rows": offending.height,
            "offending_ids": dg.MetadataValue.text(
                ", ".join(map(str, offending[id_column].head(20).to_list())) if offending.height else ""
            ),
            "examples": dg.MetadataValue.md(md_table(offending, 10) if offending.height else "none"),
        },
    )


def broken(frame: pl.DataFrame, ids: Sequence[str], **rules: pl.Expr) -> pl.DataFrame:
    """The rows of ``frame`` that break each rule (an expression true on a broken row; a null
    is not a break), by their ``ids``, with the rule's name in ``rule``: one row per break."""
    return pl.concat(
        [frame.filter(expr.fill_null(False)).select(*ids, pl.lit(name).alias("rule")) for name, expr in rules.items()]
    )


def rules_text(rules: Mapping[str, str]) -> str:
    """A check's rules in one description, each as its name (``broken``'s ``rule``) and what it asks."""
    return "; ".join(f"{name}: {what}" for name, what in rules.items())


def unmet(frame: pl.DataFrame, conditions: Mapping[str, pl.Expr], ids: Sequence[str]) -> pl.DataFrame:
    """``broken`` for rules phrased as what a sound row satisfies, named in words: a row
    breaks a condition that is false or null on it (a missing value does not pass)."""
    return broken(frame, ids, **{name: ~ok.fill_null(False) for name, ok in conditions.items()})


def missing(expected: pl.DataFrame, found: pl.DataFrame, on: Sequence[str], rule: str) -> pl.DataFrame:
    """The ``on`` keys of ``expected`` that ``found`` lacks, once each, with ``rule``."""
    keys = expected.select(on).unique(maintain_order=True)
    return keys.join(found.select(on).unique(), on=list(on), how="anti").with_columns(pl.lit(rule).alias("rule"))


def flags(frame: pl.DataFrame, rule: Callable[..., bool], *columns: str) -> pl.Series:
    """A rule in Python over ``columns`` of each row (the method's own functions), as a column."""
    return pl.Series([rule(*row) for row in frame.select(columns).iter_rows()], dtype=pl.Boolean)


# --- problems: rules over a table's rows, each giving a list of what is wrong (empty: sound) -----

# Rows a problem names as examples.
EXAMPLES = 5
# Float slack for sums and differences recomputed from a table's own columns.
TOLERANCE = 1e-6
UNIT = (0.0, 1.0)


def typed(frame: pl.DataFrame, columns: dict) -> bool:
    """Every column is there with its type: the rules can read them."""
    return all(c in frame.columns and (t is None or frame.schema[c] == t) for c, t in columns.items())


def _examples(frame: pl.DataFrame, ids: Sequence[str]) -> str:
    rows = frame.select(list(ids)).unique(maintain_order=True).head(EXAMPLES).iter_rows()
    return ", ".join("/".join(str(v) for v in row) for row in rows)


def where(frame: pl.DataFrame, mask: pl.Expr, what: str, ids: Sequence[str]) -> list[str]:
    """One problem naming the rows ``mask`` selects (a null mask selects nothing), or none."""
    bad = frame.filter(mask.fill_null(False))
    return [f"{bad.height} rows {what} (e.g. {_examples(bad, ids)})"] if bad.height else []


def outside(
    frame: pl.DataFrame,
    columns: Iterable[str],
    bounds: tuple[float, float],
    ids: Sequence[str],
    missing_ok: bool = True,
) -> list[str]:
    """Values outside ``bounds``; null and NaN count as in range only when ``missing_ok``."""
    lo, hi = bounds
    problems = []
    for c in columns:
        value = pl.col(c)
        absent = value.is_null() | value.is_nan() if frame.schema[c].is_float() else value.is_null()
        bad = (~absent & ~value.is_between(lo, hi)) | (pl.lit(not missing_ok) & absent)
        problems += where(frame, bad, f"with {c} outside [{lo:g}, {hi:g}]" + ("" if missing_ok else " or missing"), ids)
    return problems


def not_in(frame: pl.DataFrame, column: str, vocabulary: Iterable, ids: Sequence[str]) -> list[str]:
    known = sorted(vocabulary)
    return where(frame, ~pl.col(column).is_in(known).fill_null(False), f"with {column} not in {known}", ids)


def unmatched(
    frame: pl.DataFrame, columns: Sequence[str], reference: pl.DataFrame, reference_columns: Sequence[str], what: str
) -> list[str]:
    """Distinct ``columns`` of ``frame`` that ``reference`` lacks (read as ``reference_columns``)."""
    absent = [c for c in columns if c not in frame.columns] + [
        c for c in reference_columns if c not in reference.columns
    ]
    if absent:
        return [f"column {c!r} is missing" for c in absent]
    ref = reference.select([pl.col(r).alias(c) for c, r in zip(columns, reference_columns)]).unique()
    bad = frame.select(list(columns)).unique().join(ref, on=list(columns), how="anti", nulls_equal=True)
    return [f"{bad.height} {what} (e.g. {_examples(bad, columns)})"] if bad.height else []


def differs(frame: pl.DataFrame, column: str, expected: pl.Expr, what: str, ids: Sequence[str]) -> list[str]:
    """Rows where ``column`` is not ``expected`` (both NaN or null counts as equal)."""
    value = pl.col(column)
    both_missing = (value.is_null() | value.is_nan()) & (expected.is_null() | expected.is_nan())
    return where(frame, ~both_missing & ~((value - expected).abs() <= TOLERANCE).fill_null(False), what, ids)


# --- factories: one definition per kind of check, named for the asset it checks ------------

WARN = dg.AssetCheckSeverity.WARN


def _key(asset: str | Sequence[str] | dg.AssetKey) -> dg.AssetKey:
    if isinstance(asset, dg.AssetKey):
        return asset
    return dg.AssetKey(asset.split("/") if isinstance(asset, str) else list(asset))


def table_problems(
    frame: pl.DataFrame, columns: Mapping[str, Any], unique: Sequence[str] = (), not_null: Sequence[str] = ()
) -> list[str]:
    """What is wrong with a table's shape: missing columns or wrong types (a type of None
    accepts any), repeated ids over ``unique`` (one key, possibly of several columns), nulls
    in ``not_null`` columns. Empty when the table is sound."""
    problems = []
    for name, dtype in columns.items():
        if name not in frame.columns:
            problems.append(f"column {name!r} is missing")
        elif dtype is not None and frame.schema[name] != dtype:
            problems.append(f"column {name!r} is {frame.schema[name]}, expected {dtype}")
    present = [c for c in unique if c in frame.columns]
    if unique and len(present) == len(unique) and frame.height:
        repeated = frame.group_by(list(unique)).len().filter(pl.col("len") > 1)
        if repeated.height:
            examples = ", ".join(
                "/".join(str(v) for v in row) for row in repeated.select(list(unique)).head(5).iter_rows()
            )
            problems.append(f"{repeated.height} repeated {'+'.join(unique)} (e.g. {examples})")
    for name in not_null:
        if name in frame.columns and frame[name].null_count():
            problems.append(f"column {name!r} has {frame[name].null_count()} nulls")
    return problems


def problems_result(
    problems: list[str], rows: int, severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR, **metadata: Any
) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        passed=not problems,
        severity=severity,
        metadata={
            "rows": rows,
            "problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems) or "none"),
            **metadata,
        },
    )


def table_check(
    asset,
    columns: Mapping[str, Any],
    unique: Sequence[str] = (),
    not_null: Sequence[str] = (),
    *,
    name: str = "schema",
    blocking: bool = True,
    partitions_def: dg.PartitionsDefinition | None = None,
    description: str | None = None,
) -> dg.AssetChecksDefinition:
    """Schema, unique key and required values of one asset's table."""
    key = _key(asset)
    text = description or (
        f"Columns {', '.join(columns)}"
        + (f"; {'+'.join(unique)} unique" if unique else "")
        + (f"; {', '.join(not_null)} never null" if not_null else "")
        + "."
    )

    @dg.asset_check(asset=key, name=name, blocking=blocking, partitions_def=partitions_def, description=text)
    def _check(frame: pl.DataFrame) -> dg.AssetCheckResult:
        return problems_result(table_problems(frame, columns, unique, not_null), frame.height)

    return _check


def unknown_reasons(frame: pl.DataFrame, reasons: Iterable[str]) -> pl.DataFrame:
    """Rejects whose reason is not in the step's vocabulary, or without a step or a reason."""
    known = sorted(reasons)
    return frame.filter(~pl.col("reason").is_in(known) | pl.col("reason").is_null() | pl.col("step").is_null())


def rejects_check(
    asset,
    reasons: Iterable[str],
    keys: Sequence[str],
    *,
    partitions_def: dg.PartitionsDefinition | None = None,
    name: str = "reasons",
) -> dg.AssetChecksDefinition:
    """A rejects table has the common shape (``assets.common.rejects``) and every reason is
    one its step gives: an unknown one means a step changed without its vocabulary, or a
    table written by something else."""
    key, vocabulary = _key(asset), frozenset(reasons)
    columns = {**{k: pl.String for k in keys}, **{f: pl.String for f in ("step", "reason", "detail", "record")}}

    @dg.asset_check(
        asset=key,
        name=name,
        partitions_def=partitions_def,
        description=f"The rejects shape; reasons from {', '.join(sorted(vocabulary))}.",
    )
    def _check(frame: pl.DataFrame) -> dg.AssetCheckResult:
        problems = table_problems(frame, columns, not_null=("step", "reason"))
        if problems:
            return problems_result(problems, frame.height)
        bad = unknown_reasons(frame, vocabulary)
        return rows_check(bad.select(*keys, "step", "reason", "detail"), f"reasons in {sorted(vocabulary)}", keys[-1])

    return _check


LLM_COUNTS = ("llm/calls", "llm/errors", "llm/parse_failures")


def llm_failure_rate(metadata: Mapping[str, Any]) -> tuple[int, int, float]:
    """``(calls, failed, rate)`` from a materialization's LLM accounting (``CallStats``):
    errors and unparsable replies over calls."""
    calls, failed = (
        _count(metadata, "llm/calls"),
        _count(metadata, "llm/errors") + _count(metadata, "llm/parse_failures"),
    )
    return calls, failed, failed / calls if calls else 0.0


def _count(metadata: Mapping[str, Any], key: str) -> int:
    v = metadata.get(key)
    return int(getattr(v, "value", v) or 0)


def errored(frame: pl.DataFrame, *columns: str) -> pl.DataFrame:
    """The rows where an LLM call's error was kept (``failed_items`` of the steps that keep
    it), in any of ``columns`` (default ``error``; QUIT's answers also keep ``judge_error``)."""
    return frame.filter(pl.any_horizontal([pl.col(c).is_not_null() for c in columns or ("error",)]))


class CheckSettings(dg.ConfigurableResource):
    """Thresholds of the checks that are rates rather than rules. Changing one and running the
    checks-only job re-judges the stored tables without asking any model again."""

    # Errors plus unparsable replies over calls above which an LLM step's check warns. The
    # embedded 135M model fails to follow some formats often; a served model rarely does.
    max_llm_failure_rate: float = 0.5
    # Calls that got no answer at all (a server fault, a refused request) over calls above
    # which an LLM step's check fails and blocks what is built from the step.
    max_llm_error_rate: float = 0.1


def llm_accounting_check(
    asset,
    *,
    partitions_def: dg.PartitionsDefinition | None = None,
    failed_items: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
    item_column: str | None = None,
) -> dg.AssetChecksDefinition:
    """The step's LLM accounting (from its materialization's metadata), two rates:

    - calls that got no answer (``llm/errors``) over calls above
      ``CheckSettings.max_llm_error_rate``: an ERROR, and the check blocks, so nothing is
      built on a step whose server failed (the step itself materialized what it had);
    - errors plus unparsable replies above ``max_llm_failure_rate``: a warning, since the
      step kept what failed with its reason.

    ``failed_items`` names the items from the table where it keeps them; otherwise the
    step's own list of failed calls (``llm/failed_items``) names them."""
    key = _key(asset)

    @dg.asset_check(
        asset=key,
        name="llm_accounting",
        partitions_def=partitions_def,
        blocking=True,
        description="Calls without an answer under the error rate (blocking); errors and unparsable "
        "replies under the failure rate (a warning); naming the failed items.",
    )
    def _check(context, frame: pl.DataFrame, check_settings: CheckSettings) -> dg.AssetCheckResult:
        partition = context.partition_key if context.has_partition_key else None
        event = (
            context.instance.get_latest_materialization_event(key)
            if partition is None
            else next(
                iter(
                    context.instance.fetch_materializations(
                        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=1
                    ).records
                ),
                None,
            )
        )
        meta = event.asset_materialization.metadata if event is not None and event.asset_materialization else {}
        calls, failed, rate = llm_failure_rate(meta)
        errors = _count(meta, "llm/errors")
        error_rate = errors / calls if calls else 0.0
        items = failed_items(frame) if failed_items is not None else pl.DataFrame()
        names = ", ".join(map(str, items[item_column].head(20).to_list())) if item_column and items.height else ""
        names = names or str(getattr(meta.get("llm/failed_items"), "value", meta.get("llm/failed_items")) or "")
        broken = error_rate > check_settings.max_llm_error_rate
        return dg.AssetCheckResult(
            passed=not broken and rate <= check_settings.max_llm_failure_rate,
            severity=dg.AssetCheckSeverity.ERROR if broken else WARN,
            metadata={
                "calls": calls,
                "errors": errors,
                "error_rate": round(error_rate, 4),
                "max_error_rate": check_settings.max_llm_error_rate,
                "failed": failed,
                "failure_rate": round(rate, 4),
                "max_failure_rate": check_settings.max_llm_failure_rate,
                "failed_items": dg.MetadataValue.text(names),
            },
        )

    return _check


def export_problems(manifest: pl.DataFrame, beir: bool) -> list[str]:
    """What is wrong with an export's manifest (:mod:`assets.common.sharing`): its shape, a
    file it names that is not there, a format missing (the card, Croissant, a data file,
    BEIR's three files for a retrieval benchmark) or a data file without rows."""
    problems = table_problems(manifest, MANIFEST_SCHEMA, unique=("file",), not_null=("format", "file", "path"))
    if problems or manifest.is_empty():
        # an empty manifest is an export that wrote nothing: a RECOR domain that kept no turn
        # (its metadata names it); an export that wrote anything must have written it all
        return problems
    files = manifest["file"].to_list()
    required = {
        "the dataset card hf/README.md": any(f == "hf/README.md" for f in files),
        "hf/croissant.json": any(f == "hf/croissant.json" for f in files),
        "a Parquet data file under hf/data/": any(f.startswith("hf/data/") for f in files),
    }
    if beir:
        required |= {
            f"BEIR's {name}": any(f.startswith("beir/") and f.endswith(name) for f in files)
            for name in ("corpus.jsonl", "queries.jsonl", ".tsv")
        }
    problems += [f"{what} is not in the manifest" for what, found in required.items() if not found]
    problems += [f"{f}: nothing at {p}" for f, p in manifest.select("file", "path").iter_rows() if not exists(p)]
    empty = manifest.filter(
        (pl.col("rows") == 0) & (pl.col("file").str.starts_with("hf/data/") | pl.col("file").str.ends_with(".jsonl"))
    )
    problems += [f"{f}: no rows" for f in empty["file"]]
    return problems


def export_check(asset, beir: bool, partitions_def: dg.PartitionsDefinition | None = None) -> dg.AssetChecksDefinition:
    """The export's manifest names every format's files, each written, none empty."""
    what = "the card, Croissant, the Parquet data" + (" and BEIR's corpus, queries and qrels" if beir else "")

    @dg.asset_check(
        asset=_key(asset),
        name="export_written",
        partitions_def=partitions_def,
        description=f"The export's manifest names {what}; every file is where it says, no data file empty.",
    )
    def _check(frame: pl.DataFrame) -> dg.AssetCheckResult:
        return problems_result(export_problems(frame, beir), frame.height)

    return _check
