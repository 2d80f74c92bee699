"""The project's definitions with the scripted LLM, at module level so that every process
that rebuilds a job from its code pointer (a multiprocess step, a Celery worker) registers
the scripted provider too. Paths come from the environment when a step runs, so the test
that sets them and the workers it starts agree."""

import dagster as dg

from assets.quit.settings import QuitSettings
from assets.recor.settings import RecorSettings
from pipelines.cluster import cluster_executor
from pipelines.definitions import build_defs
from resources.llm import LLMResource
from resources.storage import StorageResource
from tests import scripted
from tests.conftest import SCRIPTED_REGISTRY

scripted.install()

RESOURCES = {
    "storage": StorageResource(
        root=dg.EnvVar("BENCHFOUNDRY_STORAGE"), local_index_root=dg.EnvVar("BENCHFOUNDRY_CACHE")
    ),
    "llm": LLMResource(
        registry_path=SCRIPTED_REGISTRY, cache_dir=dg.EnvVar("BENCHFOUNDRY_CACHE"), backoff_seconds=0.01
    ),
    "quit_settings": QuitSettings(profile="demo"),
    "recor_settings": RecorSettings(profile="demo"),
}
defs = build_defs(**RESOURCES)
cluster_defs = build_defs(executor=cluster_executor(), **RESOURCES)


def recor_build() -> dg.JobDefinition:
    return defs.resolve_job_def("recor_build")


def recor_build_on_celery() -> dg.JobDefinition:
    return cluster_defs.resolve_job_def("recor_build")
