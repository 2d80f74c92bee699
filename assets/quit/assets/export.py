"""The built QUIT benchmark in the formats the community loads (:mod:`assets.quit.export`)."""

import functools

import dagster as dg

from assets.common.sharing import export_output
from assets.quit import export
from assets.quit.assets.common import GROUP, PREFIX, streamed, wiring
from assets.quit.settings import QuitSettings
from resources.storage import StorageResource


@dg.asset(
    key=[PREFIX, "export"],
    group_name=GROUP,
    ins={
        "benchmark_questions": wiring.input("benchmark_questions"),
        "benchmark_corpus": streamed("benchmark_corpus"),
        "benchmark_qrels": wiring.input("benchmark_qrels"),
    },
    kinds={"parquet", "json"},
    code_version="1",
)
def quit_export(
    context: dg.AssetExecutionContext,
    benchmark_questions,
    benchmark_corpus,
    benchmark_qrels,
    quit_settings: QuitSettings,
    storage: StorageResource,
) -> dg.Output:
    """The benchmark for sharing, under ``<storage root>/quit/export``: ``hf/`` (a Hugging Face
    dataset folder: ``README.md`` card, ``data/`` Parquet, ``croissant.json``) and ``beir/``
    (BEIR's layout). The card names the build's run, profile, sizes, funnel, models and code
    versions as the instance recorded them. Returns the manifest of the files written."""
    make = functools.partial(export.share, benchmark_questions, benchmark_corpus, benchmark_qrels)
    return export_output(context, storage.path(PREFIX, "export"), export.BUILD, quit_settings, make)
