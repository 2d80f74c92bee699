"""Runs QUIT or RECOR stages against the scripted LLM in a fresh process (used by tests that
kill and restart a materialization, and by the RECOR pipeline test).
Usage: python -m tests.pipelines.stage_runner STAGE..."""

from __future__ import annotations

import os
import sys

import dagster as dg

from assets.quit.settings import QuitSettings
from pipelines.definitions import build_defs
from pipelines.jobs import QUIT_STAGES, RECOR_STAGES
from pipelines.run_default import run_stages
from resources.llm import LLMResource
from resources.storage import ParquetIOManager
from tests import scripted
from tests.conftest import SCRIPTED_REGISTRY


CONCURRENCY = 2


def main(stages: list[str]) -> int:
    scripted.install()
    defs = build_defs(
        io_manager=ParquetIOManager(root=os.environ["BENCHFOUNDRY_STORAGE"]),
        llm=LLMResource(registry_path=SCRIPTED_REGISTRY, cache_dir=os.environ["BENCHFOUNDRY_LLM_CACHE"],
                        max_concurrency=CONCURRENCY),
        quit_settings=QuitSettings(max_labeled_questions=int(os.environ.get("LABELED", "2")), distractors=2),
    )
    wanted = [s for s in QUIT_STAGES + RECOR_STAGES if s[0] in stages]
    ok = run_stages(defs, dg.DagsterInstance.ephemeral(), wanted)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
