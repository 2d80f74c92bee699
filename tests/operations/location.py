"""The project's definitions answered by the scripted LLM: the code location that the
operations tests serve with ``make ui``, so the web UI, the daemon's sensors, schedules and
backfills run for real while every model call is instant. The instance, storage root and
model registry come from the environment (DAGSTER_HOME, BENCHFOUNDRY_STORAGE,
BENCHFOUNDRY_MODELS), as in a deployment.

``python -m tests.operations.location prebuild`` builds QUIT and WikiProfile's facts into
that instance first, so report pages and the daemon's runs have their inputs."""

import sys

import dagster as dg

from assets.partitions import sync_partitions
from assets.quit.settings import QuitSettings
from assets.wikiprofile.settings import WikiProfileSettings
from pipelines.definitions import build_defs
from pipelines.jobs import QUIT_STAGES, WIKIPROFILE_STAGES
from resources.llm import REGISTRY_PATH
from tests import scripted

scripted.install()
# Runs launched by the UI and the daemon are real run processes, with the project's executor:
# their steps run inside them, as in a deployment (pipelines.definitions.build_defs). The
# step-per-process executors are exercised by the Celery test.
defs = build_defs(
    quit_settings=QuitSettings(profile="demo", max_labeled_questions=2, distractors=2),
    wikiprofile_settings=WikiProfileSettings(downsample_to=6, n_samples=4),
)

# QUIT up to its release files and statistics and the benchmark its evaluation reads (a
# retriever's partitions are a backfill away); WikiProfile's facts and tasks.
PREBUILD = [
    s
    for s in QUIT_STAGES
    if s[0]
    in {"quit_prepare", "quit_parametric", "quit_passages", "quit_labeling", "quit_finalize", "quit_eval_source"}
] + WIKIPROFILE_STAGES[:2]


def prebuild() -> bool:
    from pipelines.run_default import run_stages

    instance = dg.DagsterInstance.get()
    # the partitions the registry sensor would add, for the runs before the daemon starts
    sync_partitions(instance, models=REGISTRY_PATH)
    return run_stages(defs, instance, PREBUILD)


if __name__ == "__main__" and sys.argv[1:] == ["prebuild"]:
    sys.exit(0 if prebuild() else 1)
