"""Write a stored build in the formats the community loads, outside Dagster.

    python -m pipelines.export --benchmark {quit,recor,wikiprofile} [--domain D]
        --format {hf,croissant,beir,all} [--out FOLDER]

Reads the built tables the IO manager stored under the deployment's storage root
(``BENCHFOUNDRY_STORAGE``) and writes what the export assets write (``assets.common.sharing``),
by default where they write it (``<root>/<benchmark>/export``; RECOR's per domain, or ``all``
without ``--domain``), else under ``--out``. The card names the build's run, profile, code
versions and funnel when ``DAGSTER_HOME`` holds the instance that built it; without it, it
says they were not recorded. A benchmark not built is an error (exit code 2) naming what to
materialize."""

from __future__ import annotations

import argparse
import functools
import os
import sys

import dagster as dg
import polars as pl

from assets.common.sharing import BEIR, FORMATS, Build, Share, build_record, role_models, write_share
from assets.partitions import DOMAINS
from assets.quit import export as quit_export
from assets.recor import export as recor_export
from assets.wikiprofile import export as wikiprofile_export
from resources.llm.registry import REGISTRY_PATH
from resources.storage import StoredTable, exists, join, read_parquet, storage_root, table_uri

ALL = "all"
BENCHMARKS = ("quit", "recor", "wikiprofile")
# What ``make run`` (or the web UI) materializes to build each benchmark's tables.
HOW_TO_BUILD = {
    "quit": "materialize quit/benchmark_questions, quit/benchmark_corpus, quit/benchmark_qrels (make run)",
    "recor": "materialize recor/benchmark and recor/corpus for the domain (make run, or recor_build)",
    "wikiprofile": "materialize wikiprofile/benchmark and wikiprofile/source_pages (make run)",
}


class NotBuilt(Exception):
    """The benchmark's built tables are not in the storage root."""


def stored(root: str, benchmark: str, *names: str, partition: str | None = None) -> list[str]:
    """The URIs of the built tables ``names``; :class:`NotBuilt` naming the first missing one."""
    uris = [table_uri(root, [benchmark, name], partition) for name in names]
    missing = [u for u in uris if not exists(u)]
    if missing:
        raise NotBuilt(f"{benchmark} is not built: no table at {missing[0]}; {HOW_TO_BUILD[benchmark]}")
    return uris


def recor_domains(root: str, domain: str | None) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
    """RECOR's built turns and documents of ``domain``, or of every domain built."""
    wanted = [domain] if domain else [d for d in DOMAINS if exists(table_uri(root, ["recor", "benchmark"], d))]
    if not wanted:
        raise NotBuilt(
            f"recor is not built: no domain under {join(root, 'recor', 'benchmark')}; {HOW_TO_BUILD['recor']}"
        )
    found = {}
    for d in wanted:
        turns, corpus = stored(root, "recor", "benchmark", "corpus", partition=d)
        found[d] = (read_parquet(turns), read_parquet(corpus))
    return found


def prepared(root: str, benchmark: str, domain: str | None) -> tuple[str, Build, functools.partial, str | None]:
    """Where the export assets write, the build to describe, ``share`` bound to the stored
    tables, and the partition whose record the card names."""
    if benchmark == "quit":
        q, c, r = stored(root, "quit", "benchmark_questions", "benchmark_corpus", "benchmark_qrels")
        # the corpus is read a batch at a time, as the asset reads it
        make = functools.partial(quit_export.share, read_parquet(q), StoredTable((c,)), read_parquet(r))
        return join(root, "quit", "export"), quit_export.BUILD, make, None
    if benchmark == "recor":
        domains = recor_domains(root, domain)
        folder = join(root, "recor", "export", domain or ALL)
        return folder, recor_export.BUILD, functools.partial(recor_export.share, domains), next(iter(domains))
    tables = stored(root, "wikiprofile", "benchmark", "source_pages")
    make = functools.partial(wikiprofile_export.share, *(read_parquet(u) for u in tables))
    return join(root, "wikiprofile", "export"), wikiprofile_export.BUILD, make, None


def instance() -> dg.DagsterInstance | None:
    """The instance that recorded the build (``DAGSTER_HOME``), or None."""
    return dg.DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else None


def export(benchmark: str, formats: tuple[str, ...], domain: str | None, out: str | None, root: str) -> pl.DataFrame:
    """Write the stored build of ``benchmark`` in ``formats``; returns the manifest."""
    folder, build, make, partition = prepared(root, benchmark, domain)
    record = build_record(instance(), [dg.AssetKey([build.prefix, k]) for k in build.keys], partition)
    # No settings here: the knobs a run set are the asset's to record; the card gives the tables' sizes.
    share: Share = make(record, role_models(REGISTRY_PATH, build.prefix, build.roles), {})
    return write_share(out or folder, share, formats)


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--benchmark", required=True, choices=BENCHMARKS)
    parser.add_argument("--domain", choices=DOMAINS, help="RECOR: one domain (default: every domain built)")
    parser.add_argument("--format", required=True, choices=[*FORMATS, "all"], help="croissant writes hf/ too")
    parser.add_argument("--out", help="the folder to write (default: <storage root>/<benchmark>/export[/<domain>])")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = arguments()
    args = parser.parse_args(argv)
    if args.domain and args.benchmark != "recor":
        parser.error("--domain is RECOR's")
    if args.format == BEIR and args.benchmark == "wikiprofile":
        parser.error("WikiProfile has no corpus to retrieve from: no BEIR layout (hf, croissant or all)")
    formats = FORMATS if args.format == "all" else (args.format,)
    if args.benchmark == "wikiprofile":
        formats = tuple(f for f in formats if f != BEIR)
    # A relative --out is the user's, from where the command runs.
    out = args.out if args.out is None or "://" in args.out else os.path.abspath(os.path.expanduser(args.out))
    try:
        manifest = export(args.benchmark, formats, args.domain, out, storage_root())
    except NotBuilt as e:
        print(f"export: error: {e}", file=sys.stderr)
        return 2
    for fmt, _, rows, path in manifest.iter_rows():
        print(f"{fmt:10} {path}" + (f"  ({rows:,} rows)" if rows is not None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
