"""Runs QUIT or RECOR stages against the scripted LLM in a fresh process (used by tests that
kill and restart a materialization, and by the shared scripted RECOR build).
Usage: python -m tests.pipelines.stage_runner STAGE...

Paths come from the environment: BENCHFOUNDRY_STORAGE, BENCHFOUNDRY_CACHE (the LLM cache),
BENCHFOUNDRY_RECOR_SOURCES (the RECOR source registry, the project's by default) and
BENCHFOUNDRY_STAGE_HOME (an instance folder that keeps the runs; an ephemeral instance when
unset). ``location`` is the same definitions as a code location, for tests that query them
as the web UI does. BENCHFOUNDRY_CACHE_TYPE=postgres keeps the LLM answers in the Postgres
cache at BENCHFOUNDRY_CACHE_URL instead of under BENCHFOUNDRY_CACHE."""

from __future__ import annotations

import os
import sys

import dagster as dg

from assets.partitions import sync_partitions
from assets.quit.settings import QuitSettings
from assets.recor.settings import SOURCES_PATH, RecorSettings
from pipelines.definitions import build_defs
from pipelines.jobs import QUIT_STAGES, RECOR_STAGES
from pipelines.run_default import run_stages
from resources.llm import LLMResource
from resources.storage import StorageResource
from tests import scripted
from tests.conftest import SCRIPTED_REGISTRY

CONCURRENCY = 2


def location() -> dg.Definitions:
    scripted.install()
    return build_defs(
        storage=StorageResource(root=os.environ["BENCHFOUNDRY_STORAGE"]),
        llm=LLMResource(
            registry_path=SCRIPTED_REGISTRY,
            cache_dir=os.path.join(os.environ["BENCHFOUNDRY_CACHE"], "llm"),
            cache_type=os.environ.get("BENCHFOUNDRY_CACHE_TYPE", "disk"),
            max_concurrency=CONCURRENCY,
        ),
        quit_settings=QuitSettings(
            profile="demo", max_labeled_questions=int(os.environ.get("LABELED", "2")), distractors=2
        ),
        recor_settings=RecorSettings(
            profile="demo", sources_path=os.environ.get("BENCHFOUNDRY_RECOR_SOURCES", SOURCES_PATH)
        ),
    )


def main(stages: list[str]) -> int:
    home = os.environ.get("BENCHFOUNDRY_STAGE_HOME")
    instance = dg.DagsterInstance.from_config(home) if home else dg.DagsterInstance.ephemeral()
    wanted = [s for s in QUIT_STAGES + RECOR_STAGES if s[0] in stages]
    sync_partitions(instance, models=SCRIPTED_REGISTRY)
    ok = run_stages(location(), instance, wanted)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
