"""A built benchmark as a Hugging Face dataset folder: one Parquet file per configuration and
split under ``data/``, and a ``README.md`` dataset card whose YAML header declares the
configurations (so ``datasets.load_dataset(folder, config)`` needs no loading script) and
whose text says what was built and how, from a :class:`Card`."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence

import polars as pl
import yaml

from assets.common.formats._files import Frames
from resources.storage import join, write_bytes, write_parquet_batches

# The Hub's size buckets (the ``size_categories`` tag), by upper bound on the row count.
SIZE_BUCKETS = (
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
    (1_000_000_000, "100M<n<1B"),
    (10_000_000_000, "1B<n<10B"),
    (100_000_000_000, "10B<n<100B"),
    (1_000_000_000_000, "100B<n<1T"),
)
# ``datasets`` refuses other split names (its ``Split`` pattern); a config name becomes a folder.
_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")
_CONFIG_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*$")


@dataclasses.dataclass(frozen=True)
class Card:
    """What the dataset card says beyond the data files: the Hub's header tags, what the
    dataset is, the paper to cite, and how this build was made (the build's own record)."""

    pretty_name: str
    summary: str  # markdown: what the dataset is and what it is for
    citation: str  # BibTeX of the paper that defines the method
    license: str  # a Hub license id, e.g. "cc-by-4.0"
    task_categories: Sequence[str]
    run_id: str  # the Dagster run that built the exported tables
    language: Sequence[str] = ("en",)
    tags: Sequence[str] = ()
    profile: str = ""  # the build profile (demo, paper, ...)
    sizes: Mapping[str, int | str] = dataclasses.field(default_factory=dict)  # setting -> value
    funnel: Sequence[tuple[str, int]] = ()  # (stage, items left after it), in build order
    models: Mapping[str, str] = dataclasses.field(default_factory=dict)  # role -> model
    code_versions: Mapping[str, str] = dataclasses.field(default_factory=dict)  # asset -> code_version


@dataclasses.dataclass(frozen=True)
class DataFile:
    """One written Parquet file: its configuration, split, path relative to the folder, rows
    and columns (name -> polars type)."""

    config: str
    split: str
    path: str
    rows: int
    schema: dict[str, pl.DataType]


@dataclasses.dataclass(frozen=True)
class HfExport:
    """What :func:`write_hf_dataset` wrote."""

    files: tuple[DataFile, ...]
    size_category: str

    @property
    def rows(self) -> dict[str, int]:
        """Rows per file, by path relative to the folder."""
        return {f.path: f.rows for f in self.files}


def size_category(rows: int) -> str:
    """The Hub's ``size_categories`` bucket of ``rows``."""
    return next((label for bound, label in SIZE_BUCKETS if rows < bound), "n>1T")


def data_path(config: str, split: str) -> str:
    """Where a configuration's split lives, relative to the folder (the Hub's own shard naming)."""
    return f"data/{config}/{split}-00000-of-00001.parquet"


def write_hf_dataset(folder: str, configs: Mapping[str, Mapping[str, Frames]], card: Card) -> HfExport:
    """Write ``configs`` (configuration -> split -> a frame, or frames streamed one row group
    at a time) as Parquet files under ``folder``, a local path or ``s3://`` URI, and the
    dataset card ``README.md``; the first configuration is the default. All splits of a
    configuration must have the same columns and types, as ``datasets`` builds one schema
    per configuration."""
    if not configs:
        raise ValueError(f"nothing to export to {folder}: no configurations")
    files = []
    for config, splits in configs.items():
        if not _CONFIG_NAME.match(config):
            raise ValueError(f"configuration name {config!r}: letters, digits, '_', '-' and '.' only")
        if not splits:
            raise ValueError(f"configuration {config!r} has no splits")
        for split, table in splits.items():
            if not _SPLIT_NAME.match(split):
                raise ValueError(f"split name {split!r} of {config!r}: word characters and dots only")
            files.append(_write_split(folder, config, split, table))
        _same_schema(config, [f for f in files if f.config == config])
    largest = max(sum(f.rows for f in files if f.config == c) for c in configs)
    export = HfExport(tuple(files), size_category(largest))
    write_bytes(join(folder, "README.md"), dataset_card(export, card).encode("utf-8"))
    return export


def _write_split(folder: str, config: str, split: str, table: Frames) -> DataFile:
    frames = [table] if isinstance(table, pl.DataFrame) else table
    seen: list[dict[str, pl.DataType]] = []

    def schema_of_first(frames: Iterable[pl.DataFrame]) -> Iterator[pl.DataFrame]:
        for frame in frames:
            if not seen:
                seen.append(dict(frame.schema))
            yield frame

    path = data_path(config, split)
    rows = write_parquet_batches(join(folder, *path.split("/")), schema_of_first(frames))
    return DataFile(config, split, path, rows, seen[0])


def _same_schema(config: str, files: list[DataFile]) -> None:
    first = files[0]
    for other in files[1:]:
        if other.schema != first.schema:
            raise ValueError(
                f"configuration {config!r}: split {other.split!r} has columns {_types(other.schema)}, "
                f"split {first.split!r} has {_types(first.schema)}; datasets needs one schema per configuration"
            )


def _types(schema: Mapping[str, pl.DataType]) -> str:
    return ", ".join(f"{name}: {dtype}" for name, dtype in schema.items())


def card_header(export: HfExport, card: Card) -> dict:
    """The card's YAML header: the Hub's tags and one ``configs`` entry per configuration."""
    configs: dict[str, list[DataFile]] = {}
    for f in export.files:
        configs.setdefault(f.config, []).append(f)
    return {
        "pretty_name": card.pretty_name,
        "license": card.license,
        "language": list(card.language),
        "task_categories": list(card.task_categories),
        "size_categories": [export.size_category],
        "tags": list(card.tags),
        "configs": [
            {
                "config_name": name,
                "data_files": [{"split": f.split, "path": f.path} for f in files],
                **({"default": True} if i == 0 else {}),
            }
            for i, (name, files) in enumerate(configs.items())
        ],
    }


def dataset_card(export: HfExport, card: Card) -> str:
    """The whole ``README.md``: the YAML header, then what the dataset is, how to cite it,
    how this build was made and what each configuration holds."""
    header = yaml.safe_dump(card_header(export, card), sort_keys=False, allow_unicode=True)
    first = export.files[0].config
    parts = [
        f"---\n{header}---",
        f"# {card.pretty_name}",
        card.summary.strip(),
        "```python\nfrom datasets import load_dataset\n\n"
        f'data = load_dataset("<this folder or repository>", "{first}")\n```',
        "## Citation",
        f"```bibtex\n{card.citation.strip()}\n```",
        "## How it was built",
        _md_table(("setting", "value"), [("build run id", card.run_id), ("profile", card.profile or "(not recorded)")]),
        "### Sizes",
        _md_table(("setting", "value"), card.sizes.items()),
        "### Funnel",
        "Items left after each stage of the build, in order.",
        _md_table(("stage", "items"), card.funnel),
        "### Models",
        _md_table(("role", "model"), card.models.items()),
        "### Code versions",
        _md_table(("asset", "code version"), card.code_versions.items()),
        "## Configurations",
        *_config_sections(export),
    ]
    return "\n\n".join(parts) + "\n"


def _config_sections(export: HfExport) -> list[str]:
    sections: list[str] = []
    for config in dict.fromkeys(f.config for f in export.files):
        files = [f for f in export.files if f.config == config]
        sections += [
            f"### `{config}`",
            _md_table(("split", "rows", "file"), [(f.split, f.rows, f"`{f.path}`") for f in files]),
            _md_table(("column", "type"), [(f"`{name}`", str(dtype)) for name, dtype in files[0].schema.items()]),
        ]
    return sections


def _md_table(head: Sequence[str], rows: Iterable[Sequence]) -> str:
    rows = list(rows)
    if not rows:
        # An empty table would look like a rendering fault; say plainly that nothing was recorded.
        return "(none recorded)"
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _md_cell(value) -> str:
    text = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
    return text.replace("|", "\\|").replace("\n", " ")
