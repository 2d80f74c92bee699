"""A built benchmark written for sharing: one folder holding a Hugging Face dataset folder
(``hf/``: ``README.md`` card, ``data/`` Parquet files and ``croissant.json`` beside them, so
that its relative ``contentUrl``s resolve on the Hub as on disk) and, for a retrieval
benchmark, BEIR folders under ``beir/``. Each benchmark says what its tables become
(``assets/<benchmark>/export.py``); this module writes the folder, lists what it wrote in a
manifest, and gathers what the card tells of the build from the Dagster instance."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import dagster as dg
import polars as pl

from assets.common.formats import Card, TableFile, croissant_metadata, write_beir, write_hf_dataset
from assets.common.formats._files import Frames
from assets.common.metadata import PROFILE_TAG
from resources.llm.registry import REGISTRY_PATH, load_registry, load_roles
from resources.storage import join

HF, BEIR, CROISSANT = "hf", "beir", "croissant"
FORMATS = (HF, CROISSANT, BEIR)
MANIFEST_SCHEMA = {"format": pl.String, "file": pl.String, "rows": pl.Int64, "path": pl.String}
# The Hub's license ids and the SPDX URLs Croissant wants for the same license.
LICENSE_URLS = {
    "cc-by-4.0": "https://spdx.org/licenses/CC-BY-4.0",
    "cc-by-sa-4.0": "https://spdx.org/licenses/CC-BY-SA-4.0",
}
# The materialization tag holding the code version of the definition that ran.
CODE_VERSION_TAG = "dagster/code_version"
NOT_RECORDED = "(not recorded)"


@dataclasses.dataclass(frozen=True)
class BeirTables:
    """One BEIR folder's tables, as :func:`assets.common.formats.write_beir` takes them."""

    corpus: Frames
    queries: Frames
    qrels: Mapping[str, Frames]


@dataclasses.dataclass(frozen=True)
class Share:
    """What a benchmark's export writes: the Hugging Face configurations (configuration ->
    split -> table) with a description of each for Croissant, the card, the Croissant
    dataset's name, URL and version, and the BEIR folders (sub-folder of ``beir/`` -> tables;
    ``""`` for ``beir/`` itself)."""

    configs: Mapping[str, Mapping[str, Frames]]
    descriptions: Mapping[str, str]
    card: Card
    name: str
    url: str
    version: str
    beir: Mapping[str, BeirTables] = dataclasses.field(default_factory=dict)


def write_share(folder: str, share: Share, formats: Sequence[str] = FORMATS) -> pl.DataFrame:
    """Write ``share`` under ``folder`` (a local path or ``s3://`` URI) in ``formats``; returns
    the manifest: one row per file written (``format``, ``file`` relative to ``folder``,
    ``rows`` for a table, null for a card or metadata file, ``path``). Croissant describes the
    Hugging Face files, so asking for it writes them too."""
    unknown = set(formats) - set(FORMATS)
    if unknown:
        raise ValueError(f"unknown export formats {sorted(unknown)}; known: {list(FORMATS)}")
    rows: list[tuple[str, str, int | None]] = []
    hf = join(folder, HF)
    if HF in formats or CROISSANT in formats:
        export = write_hf_dataset(hf, share.configs, share.card)
        rows += [(HF, f"{HF}/README.md", None), *((HF, f"{HF}/{f.path}", f.rows) for f in export.files)]
        if CROISSANT in formats:
            tables = {
                f"{f.config}_{f.split}": TableFile(f.path, share.descriptions.get(f.config, "")) for f in export.files
            }
            croissant_metadata(
                hf,
                share.name,
                share.card.summary,
                LICENSE_URLS[share.card.license],
                share.card.citation,
                share.url,
                share.version,
                tables,
            )
            rows.append((CROISSANT, f"{HF}/croissant.json", None))
    if BEIR in formats:
        for sub, tables in share.beir.items():
            where = f"{BEIR}/{sub}".rstrip("/")
            written = write_beir(join(folder, *where.split("/")), tables.corpus, tables.queries, tables.qrels)
            rows += [(BEIR, f"{where}/{name}", n) for name, n in written.items()]
    return pl.DataFrame(
        [(f, name, n, join(folder, *name.split("/"))) for f, name, n in rows], schema=MANIFEST_SCHEMA, orient="row"
    )


@dataclasses.dataclass(frozen=True)
class BuildRecord:
    """What the instance records of a build: the run that made its main table, that run's
    profile, the code version each of its assets ran, and each one's row count."""

    run_id: str = NOT_RECORDED
    profile: str = ""
    code_versions: Mapping[str, str] = dataclasses.field(default_factory=dict)
    row_counts: Mapping[str, int] = dataclasses.field(default_factory=dict)


def build_record(
    instance: dg.DagsterInstance | None, keys: Sequence[dg.AssetKey], partition: str | None = None
) -> BuildRecord:
    """The latest materializations of ``keys`` (of ``partition`` where given); the first key
    is the built table whose run and profile the card names. Without an instance (a command
    run with no ``DAGSTER_HOME``) nothing is recorded, and the card says so."""
    if instance is None:
        return BuildRecord()
    run_id, profile, versions, counts = NOT_RECORDED, "", {}, {}
    for i, key in enumerate(keys):
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=None if partition is None else [partition]), limit=1
        ).records
        if not records or records[0].asset_materialization is None:
            continue
        materialization = records[0].asset_materialization
        name = key.to_user_string()
        if CODE_VERSION_TAG in (materialization.tags or {}):
            versions[name] = materialization.tags[CODE_VERSION_TAG]
        row_count = materialization.metadata.get("dagster/row_count")
        if row_count is not None:
            counts[name] = int(row_count.value)
        if i == 0:
            run_id = records[0].run_id
            run = instance.get_run_by_id(run_id)
            profile = (run.tags.get(PROFILE_TAG) if run is not None else None) or ""
    return BuildRecord(run_id, profile, versions, counts)


def role_models(registry_path: str, benchmark: str, roles: Sequence[str]) -> dict[str, str]:
    """The build's ``roles`` of ``benchmark`` in the model registry, each as
    ``alias (model)`` (``recor.builder`` -> ``smollm2 (local/...)``): the evaluation's roles
    (readers, subjects) are not part of what was built."""
    specs = load_registry(registry_path)
    section = load_roles(registry_path).get(benchmark, {})
    found = {}
    for role in roles:
        if role in section:
            aliases = section[role] if isinstance(section[role], list) else [section[role]]
            found[f"{benchmark}.{role}"] = ", ".join(f"{a} ({specs[a].model})" if a in specs else a for a in aliases)
    return found


def settings_sizes(settings: Any) -> dict[str, int | str]:
    """The knobs that size a build (those its demo profile changes), with their values."""
    return {name: str(getattr(settings, name)) for name in getattr(settings, "DEMO_SLICE", {})}


def funnel(record: BuildRecord, stages: Sequence[tuple[str, str]]) -> list[tuple[str, int]]:
    """``(stage, rows)`` for each ``(stage, asset key)`` whose row count the build recorded."""
    return [(stage, record.row_counts[key]) for stage, key in stages if key in record.row_counts]


@dataclasses.dataclass(frozen=True)
class About:
    """What a benchmark's card says of it, whatever the build: the Hub's name, license and
    tags, what the dataset is (markdown) and the BibTeX of its paper."""

    pretty_name: str
    summary: str
    citation: str
    license: str
    task_categories: tuple[str, ...]
    tags: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Build:
    """What an export reads of the build in the instance: the benchmark's key prefix, the
    names of its tables (the first is the built table whose run the card names; the others
    give their code versions and row counts) and the registry roles that built it (the
    evaluation's roles, readers or subjects, are not part of it)."""

    prefix: str
    keys: tuple[str, ...]
    roles: tuple[str, ...]


def build_card(
    about: About,
    record: BuildRecord,
    models: Mapping[str, str],
    sizes: Mapping[str, int | str],
    stages: Sequence[tuple[str, str]],
) -> Card:
    """The card of a build: ``about`` the benchmark, then the build's run, profile, funnel over
    ``stages`` and code versions as ``record`` holds them, its ``models`` and ``sizes``."""
    return Card(
        **dataclasses.asdict(about),
        run_id=record.run_id,
        profile=record.profile,
        sizes=sizes,
        funnel=funnel(record, stages),
        models=models,
        code_versions=record.code_versions,
    )


def export_output(
    context: dg.AssetExecutionContext,
    folder: str,
    build: Build,
    settings: Any,
    make: Callable[[BuildRecord, dict[str, str], dict[str, int | str]], Share],
    partition: str | None = None,
) -> dg.Output:
    """What an export asset does: the instance's record of ``build`` (of ``partition``), its
    models and the sizes of ``settings`` made into a :class:`Share` by ``make``, written
    under ``folder``; the manifest as the output."""
    record = build_record(context.instance, [dg.AssetKey([build.prefix, k]) for k in build.keys], partition)
    models = role_models(REGISTRY_PATH, build.prefix, build.roles)
    manifest = write_share(folder, make(record, models, settings_sizes(settings)))
    context.log.info(f"{build.prefix} exported to {folder}")
    return dg.Output(manifest, metadata=manifest_metadata(manifest, folder))


def manifest_metadata(manifest: pl.DataFrame, folder: str) -> dict[str, Any]:
    """The export asset's metadata: where it is, the rows of each table file, a preview."""
    tables = manifest.filter(pl.col("rows").is_not_null())
    return {
        "dagster/row_count": manifest.height,
        "export_folder": dg.MetadataValue.path(folder),
        **{f"rows/{f}": int(n) for f, n in tables.select("file", "rows").iter_rows()},
    }
