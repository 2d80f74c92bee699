"""Metadata helpers: previews, tables and plots shown on asset pages in the UI."""

from __future__ import annotations

import base64
import io
import math

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


def table_metadata(frame: pl.DataFrame, preview: int = 10) -> dict:
    """Row count and a preview: the minimum every table asset reports."""
    return {
        "dagster/row_count": frame.height,
        "preview": dg.MetadataValue.md(md_table(frame, preview)),
    }


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
