"""Metadata helpers: previews, tables and plots shown on asset pages in the UI."""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping

import dagster as dg
import polars as pl


def _cell(v) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        v = "; ".join(str(x) for x in v)
    text = "" if v is None else str(v)
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= 120 else text[:117] + "..."


def md_table(frame: pl.DataFrame, limit: int = 10) -> str:
    """A markdown table of the first ``limit`` rows."""
    head = frame.head(limit)
    cols = head.columns
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in head.iter_rows():
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(lines)


# Dagster's column types for the polars dtypes a report holds; the rest are shown as text.
_COLUMN_TYPES = {
    pl.Boolean: "bool",
    pl.String: "string",
    pl.Float32: "float",
    pl.Float64: "float",
    **{t: "int" for t in (pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64)},
}


def _record_value(v) -> str | int | float | bool | None:
    """A cell as a table record holds it: a missing, NaN or infinite score (a ratio over
    nothing) is None, which the UI leaves blank; a list is joined; a float keeps four
    decimals (a share to 0.01 percentage point, the papers' precision); anything else not a
    scalar is shown as text."""
    if v is None or isinstance(v, bool | int | str):
        return v
    if isinstance(v, float):
        return round(v, 4) if math.isfinite(v) else None
    if isinstance(v, list | tuple | pl.Series):
        return "; ".join(str(x) for x in v)
    return str(v)


def report_table(frame: pl.DataFrame, definitions: Mapping[str, str] | None = None) -> dg.TableMetadataValue:
    """A report table as Dagster table metadata, which the UI renders inline on the asset
    page (markdown sits behind a link and is cut off when wide); each column's description
    is its entry in ``definitions``, shown when hovering its header."""
    definitions = definitions or {}
    columns = [
        dg.TableColumn(name, _COLUMN_TYPES.get(dtype.base_type(), "string"), description=definitions.get(name))
        for name, dtype in frame.schema.items()
    ]
    records = [dg.TableRecord({k: _record_value(v) for k, v in row.items()}) for row in frame.iter_rows(named=True)]
    return dg.MetadataValue.table(records, dg.TableSchema(columns))


def table_metadata(frame: pl.DataFrame, preview: int = 10) -> dict:
    """Row count and a preview: the minimum every table asset reports."""
    return {"dagster/row_count": frame.height, "preview": dg.MetadataValue.md(md_table(frame, preview))}


def png_markdown(fig) -> dg.MetadataValue:
    """A matplotlib figure embedded as a PNG in markdown metadata."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode()
    return dg.MetadataValue.md(f"![plot](data:image/png;base64,{data})")


def counts_md(counts: dict[str, int], key: str = "value", value: str = "count") -> dg.MetadataValue:
    frame = pl.DataFrame({key: list(counts), value: list(counts.values())})
    return dg.MetadataValue.md(md_table(frame, len(counts) or 1))


# The run tag naming a run's profile (demo or paper): the ``_demo``/``_paper`` jobs, the
# schedules and ``make run`` set it, so a report can say which profile its run was.
PROFILE_TAG = "benchfoundry/profile"


def run_profile(context) -> str | None:
    """The profile in the run's ``PROFILE_TAG``; None for a run without one (Materialize on an
    asset's page) and for an asset invoked directly (a test, a notebook: there is no run)."""
    try:
        return context.run.tags.get(PROFILE_TAG)
    except dg.DagsterError:  # Dagster's "dagster_run is not set on a directly invoked context"
        return None


def report_slice(covers: str, profile: str | None) -> str:
    """The ``slice`` entry of a report: what it counts (questions, domains, pages, facts) and
    the profile (demo or paper) of the run that wrote it (``run_profile``), so a demo slice's
    numbers are never read as the paper's. The covered counts are the inputs' own; the
    profile is the run's tag, and a run launched without one says so."""
    if profile is None:
        return f"{covers}; profile not stated: the run has no {PROFILE_TAG} tag (launched outside the profile jobs and make run)"
    return f"{covers}; profile {profile} (the run's {PROFILE_TAG} tag)"


def why_empty(tables: Mapping[str, tuple[pl.DataFrame, str]]) -> dict[str, str]:
    """A ``why_empty`` entry naming each empty table with the reason it is empty (an empty
    inline table says nothing on its own); none when every table has a row."""
    reasons = [f"{name}: {reason}" for name, (frame, reason) in tables.items() if frame.is_empty()]
    return {"why_empty": "; ".join(reasons)} if reasons else {}
