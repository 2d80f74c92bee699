"""Report tables as Dagster table metadata, the form the UI renders inline."""

import math

import dagster as dg
import polars as pl

from assets.common.metadata import report_table


def test_a_report_table_holds_only_scalars_with_blanks_for_missing_scores():
    frame = pl.DataFrame({"system": ["bm25", "e5"], "hit_rate@1": [1 / 3, math.nan], "ratio": [math.inf, 0.5],
                          "k": [5, None], "oracle": [False, True], "gold": [["d1", "d2"], None]})
    table = report_table(frame, {"hit_rate@1": "share of questions with a relevant passage first"})
    assert isinstance(table, dg.TableMetadataValue)
    assert [r.data for r in table.records] == [
        {"system": "bm25", "hit_rate@1": 0.3333, "ratio": None, "k": 5, "oracle": False, "gold": "d1; d2"},
        {"system": "e5", "hit_rate@1": None, "ratio": 0.5, "k": None, "oracle": True, "gold": None}]
    columns = {c.name: (c.type, c.description) for c in table.schema.columns}
    assert columns == {"system": ("string", None), "hit_rate@1": ("float", "share of questions with a relevant passage first"),
                       "ratio": ("float", None), "k": ("int", None), "oracle": ("bool", None), "gold": ("string", None)}


def test_an_empty_report_keeps_its_columns():
    table = report_table(pl.DataFrame(schema={"model": pl.String, "encodes": pl.Float64}), {"encodes": "E"})
    assert table.records == [] and [c.name for c in table.schema.columns] == ["model", "encodes"]


def test_a_report_table_survives_the_event_log():
    """What the UI reads back from the instance: the serialized entry, None cells included."""
    table = report_table(pl.DataFrame({"system": ["bm25"], "mrr": [math.nan]}), {"mrr": "MRR"})
    back = dg.deserialize_value(dg.serialize_value(table), dg.TableMetadataValue)
    assert back == table and back.records[0].data == {"system": "bm25", "mrr": None}
