"""What the checks of QUIT's construction share: the assets' keys and the inferential
invariant's test (no text names an answer)."""

import polars as pl

from assets.common.text import contains_phrase
from assets.quit.assets import wiring

key = wiring.key


def leaks(frame: pl.DataFrame, text_col: str, answers_col: str) -> pl.DataFrame:
    """Rows whose text (a string or a list of strings) names any of the answers."""

    def leaking(row) -> bool:
        texts = row[text_col] if isinstance(row[text_col], list) else [row[text_col]]
        return any(contains_phrase(t, a) for t in texts for a in (row[answers_col] or []))

    mask = [leaking(r) for r in frame.select(text_col, answers_col).iter_rows(named=True)]
    return frame.filter(pl.Series(mask, dtype=pl.Boolean))
