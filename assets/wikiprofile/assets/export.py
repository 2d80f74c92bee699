"""The built WikiProfile benchmark in the formats the community loads (:mod:`assets.wikiprofile.export`)."""

import functools

import dagster as dg
import polars as pl

from assets.common.sharing import export_output
from assets.wikiprofile import export
from assets.wikiprofile.assets.common import GROUP, PREFIX, wiring
from assets.wikiprofile.settings import WikiProfileSettings
from resources.storage import StorageResource


@dg.asset(
    key=[PREFIX, "export"],
    group_name=GROUP,
    ins={"benchmark": wiring.input("benchmark"), "source_pages": wiring.input("source_pages")},
    kinds={"parquet", "json"},
    code_version="1",
)
def wikiprofile_export(
    context: dg.AssetExecutionContext,
    benchmark: pl.DataFrame,
    source_pages: pl.DataFrame,
    wikiprofile_settings: WikiProfileSettings,
    storage: StorageResource,
) -> dg.Output:
    """The benchmark for sharing, under ``<storage root>/wikiprofile/export``: ``hf/`` (a
    Hugging Face dataset folder: ``README.md`` card, ``data/`` Parquet, ``croissant.json``).
    The card names the build's run, profile, sizes, funnel, models and code versions as the
    instance recorded them. Returns the manifest of the files written."""
    make = functools.partial(export.share, benchmark, source_pages)
    return export_output(context, storage.path(PREFIX, "export"), export.BUILD, wikiprofile_settings, make)
