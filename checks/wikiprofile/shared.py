"""What the checks of WikiProfile's construction share: the assets' keys and inputs, and the
steps' rule that a question does not name its answer."""

from __future__ import annotations

import dagster as dg
import polars as pl

from assets.wikiprofile import rules
from assets.wikiprofile.assets import wiring

key = wiring.key


def ins(*names: str) -> dict[str, dg.AssetIn]:
    return {name: dg.AssetIn(key=key(name)) for name in names}


def named(text: str, answer: str) -> pl.Expr:
    """Whether a question column names an answer column, by the steps' own rule (``answer_leaks``)."""
    return pl.struct(text, answer).map_elements(
        lambda r: None if r[text] is None or r[answer] is None else rules.answer_leaks(r[text], r[answer]),
        return_dtype=pl.Boolean,
    )
