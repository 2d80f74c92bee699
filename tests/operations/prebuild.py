"""The operations tests' instance, prebuilt in the background (``tests.background``): QUIT's
and WikiProfile's facts materialized with the scripted LLM before ``make ui`` serves them."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from tests.background import Build, environment, instance_home
from tests.conftest import SCRIPTED_REGISTRY

ROOT = Path(__file__).resolve().parents[2]


def operations_env(base: Path) -> dict[str, str]:
    """The environment of the prebuild and of ``make ui``: one instance, storage, cache and
    registries under ``base`` (a test adds a retriever to its copy of the registry)."""
    return environment(
        DAGSTER_HOME=str(base / "dagster_home"),
        BENCHFOUNDRY_STORAGE=str(base / "storage"),
        BENCHFOUNDRY_CACHE=str(base / "cache"),
        BENCHFOUNDRY_MODELS=str(base / "models.yaml"),
        BENCHFOUNDRY_RETRIEVERS=str(base / "retrievers.yaml"),
        # the evaluation backfill schedules tick every minute here
        BENCHFOUNDRY_EVAL_CRON="* * * * *",
        TOKENIZERS_PARALLELISM="false",
    )


def start_prebuild(base: Path) -> Build:
    home = instance_home(base / "dagster_home")
    # the project's instance settings (the llm pool limit) with absolute folders
    (home / "dagster.yaml").write_text("concurrency:\n  pools:\n    default_limit: 1\ntelemetry:\n  enabled: false\n")
    shutil.copy(SCRIPTED_REGISTRY, base / "models.yaml")
    shutil.copy(ROOT / "resources" / "retrievers.yaml", base / "retrievers.yaml")
    return Build(
        "operations_prebuild",
        [sys.executable, "-m", "tests.operations.location", "prebuild"],
        operations_env(base),
        ROOT,
        base / "prebuild.log",
        timeout=900,
    ).start()
