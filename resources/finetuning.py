"""The base models fine-tuning starts from, named once in ``resources/finetuning.yaml``."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import yaml

from resources.encoders import BUNDLED
from resources.names import check_name

BASES_PATH = str(Path(__file__).with_name("finetuning.yaml"))


def load_bases(path: str = BASES_PATH) -> dict[str, str]:
    """Base alias -> the local folder its weights are read from: a bundled encoder's folder
    inside its package, or the folder the entry names (checked when training starts, so a
    base on another host does not break the registry)."""
    with open(path, encoding="utf-8") as f:
        raw = (yaml.safe_load(f) or {}).get("bases")
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f"{path}: expected a non-empty 'bases' mapping")
    bases = {}
    for alias, entry in raw.items():
        # a base alias names a partition, a folder under the models root and a retriever alias
        check_name(alias, f"{path}: base")
        if not isinstance(entry, dict) or set(entry) != {"model"} or not entry["model"]:
            raise ValueError(f"{path}: base {alias!r} needs exactly one key, model (a bundled alias or a local folder)")
        bases[alias] = base_folder(entry["model"], f"{path}: base {alias!r}")
    return bases


def base_folder(model: str, owner: str) -> str:
    spec = BUNDLED.get(model)
    if spec is None:
        return model
    if spec["kind"] != "sentence-transformers":
        raise ValueError(
            f"{owner}: {model} cannot be fine-tuned: it ships 4-bit weights for its own engine, "
            "not a Hugging Face model folder"
        )
    return str(importlib.resources.files(spec["package"]) / spec["subdir"])
