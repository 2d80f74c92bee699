"""The registry of datasets in BEIR's layout that the registered retrievers and rerankers are
evaluated on, beside the three benchmarks (docs/evaluate/another-dataset.md).

A dataset is a folder or ``s3://`` prefix holding ``corpus.jsonl``, ``queries.jsonl`` and
``qrels/<split>.tsv`` (:mod:`assets.common.formats.beir`), named once in
``resources/datasets.yaml`` (``BENCHFOUNDRY_DATASETS`` points a deployment at another file).
Each name becomes a partition (the registry sensor adds it); a run picks datasets by those
names only. Where a dataset lives is the deployment's wiring, as the other registries are:
no run config reaches this file or the paths in it.
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
from pathlib import Path

from resources.names import check_name
from resources.storage import read_yaml

DATASETS_PATH = os.environ.get("BENCHFOUNDRY_DATASETS") or str(Path(__file__).with_name("datasets.yaml"))
FIELDS = ("path", "split")


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    """One registered dataset: its name (a partition key), where its files are (absolute or a
    URI) and the qrels split evaluated (``qrels/<split>.tsv``; BEIR's datasets judge ``test``)."""

    name: str
    path: str
    split: str = "test"


def located(path: str, registry: str) -> str:
    """``path`` as written in ``registry``: a URI or absolute path as it is, a relative path
    from the registry file's folder (so a registry and its datasets move together)."""
    if "://" in path or os.path.isabs(path):
        return path
    if "://" in registry:
        return posixpath.join(posixpath.dirname(registry), path)
    return str(Path(registry).resolve().parent / path)


def load_datasets(path: str | None = None) -> dict[str, DatasetSpec]:
    """The datasets of the registry file at ``path`` (the deployment's, ``DATASETS_PATH``, when
    None), by name; an empty registry is none. An entry that cannot be used is an error naming
    the file and the dataset."""
    path = path or DATASETS_PATH
    raw = read_yaml(path) or {}
    if not isinstance(raw, dict) or not isinstance(raw.get("datasets") or {}, dict):
        raise ValueError(f"{path}: expected a 'datasets' mapping of name -> {{path, split}}")
    specs = {}
    for name, entry in (raw.get("datasets") or {}).items():
        check_name(name, f"{path}: dataset name")
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: dataset {name!r} needs a mapping with a path (and optionally a split)")
        if unknown := sorted(set(entry) - set(FIELDS)):
            raise ValueError(f"{path}: dataset {name!r} has unknown keys {unknown} (known: {', '.join(FIELDS)})")
        where, split = entry.get("path"), entry.get("split", "test")
        if not isinstance(where, str) or not where.strip():
            raise ValueError(f"{path}: dataset {name!r} needs a path (a folder or s3:// prefix in BEIR's layout)")
        # a split names the file qrels/<split>.tsv: a name, never a path
        check_name(split, f"{path}: dataset {name!r} split")
        specs[name] = DatasetSpec(name, located(where.strip(), path), split)
    return specs


def dataset(name: str, path: str | None = None) -> DatasetSpec:
    """The registered dataset ``name``; an error naming the registry file when it is not there
    (a partition left from an earlier registry, or a key typed by hand)."""
    specs = load_datasets(path)
    if name not in specs:
        raise KeyError(
            f"dataset {name!r} is not in the dataset registry {path or DATASETS_PATH} "
            f"(registered: {', '.join(sorted(specs)) or 'none'})"
        )
    return specs[name]
