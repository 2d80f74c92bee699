"""A one-step job on the Celery executor whose first attempt asks a model, then fails, as a
step does whose pod is evicted after its calls: Dagster retries it, and the retry must be
answered by the shared answer cache, whichever worker runs it.

Everything comes from the environment the workers inherit from the test: the registry
(``BENCHFOUNDRY_TEST_REGISTRY``, one stand-in server; the project's own registry stays
the definitions' roles), the cache (``BENCHFOUNDRY_CACHE_TYPE``,
``BENCHFOUNDRY_CACHE_URL``, ``BENCHFOUNDRY_CACHE`` — each worker its own folder), and the
folder where each attempt writes what it saw (``BENCHFOUNDRY_TEST_ATTEMPTS``)."""

import json
import os
import time
from pathlib import Path

import dagster as dg

from pipelines.cluster import cluster_executor
from resources.llm import CallStats, LLMRequest, LLMResource

CALLS = 40
# How long the first attempt waits for the test to take its worker off the queue.
HANDOVER_SECONDS = 120


def questions() -> list[LLMRequest]:
    return [
        LLMRequest(
            f"q{i}", [{"role": "user", "content": f"question {i} of the shared cache run"}], params={"max_tokens": 16}
        )
        for i in range(CALLS)
    ]


@dg.asset(retry_policy=dg.RetryPolicy(max_retries=1))
def shared_cache_answers(context: dg.AssetExecutionContext, llm: LLMResource) -> dg.MaterializeResult:
    stats = CallStats()
    results = llm.run("m", questions(), stats=stats)
    folder = Path(os.environ["BENCHFOUNDRY_TEST_ATTEMPTS"])
    attempt = context.retry_number
    (folder / f"attempt-{attempt}.json").write_text(
        json.dumps(
            {
                "process_group": os.getpgid(os.getpid()),
                "answered": sum(r.ok for r in results),
                "from_cache": stats.cached,
                "sent": stats.calls - stats.cached,
            }
        )
    )
    if attempt == 0:
        # The test stops this worker taking steps before the retry is queued, so the retry
        # runs on the other worker, whose own cache folder is empty.
        deadline = time.monotonic() + HANDOVER_SECONDS
        while not (folder / "handed-over").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        raise RuntimeError("the first attempt fails after its calls, as an evicted pod does")
    return dg.MaterializeResult(metadata=stats.as_metadata())


defs = dg.Definitions(
    assets=[shared_cache_answers],
    jobs=[dg.define_asset_job("shared_cache_retry", selection=[shared_cache_answers], executor_def=cluster_executor())],
    resources={
        "llm": LLMResource(
            registry_path=dg.EnvVar("BENCHFOUNDRY_TEST_REGISTRY"),
            cache_dir=dg.EnvVar("BENCHFOUNDRY_CACHE"),
            cache_type=dg.EnvVar("BENCHFOUNDRY_CACHE_TYPE"),
            backoff_seconds=0.01,
        )
    },
)


def shared_cache_retry() -> dg.JobDefinition:
    return defs.resolve_job_def("shared_cache_retry")
