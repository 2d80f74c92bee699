"""The definitions for a cluster: the same assets and jobs, each step a Celery task.

Workers started with ``dagster-celery worker start -A dagster_celery.app -y <config>``
(the config holds the same broker and backend) pick the steps up, so a run spreads over
as many hosts as there are workers. Every process must share one instance
(``deploy/dagster.yaml``: Postgres for runs and events, S3 for compute logs) and one
Parquet root (``BENCHFOUNDRY_STORAGE=s3://...``), because no step sees another's disk.
``dagster dev -m pipelines.cluster`` (or a workspace entry) serves them. On Kubernetes,
``pipelines.cluster_k8s`` runs each step as a pod instead, GPU-bound steps on GPU nodes.
"""

from __future__ import annotations

import dagster as dg
from dagster_celery import celery_executor

from pipelines.definitions import build_defs


def cluster_executor() -> dg.ExecutorDefinition:
    """Celery with the broker ``BENCHFOUNDRY_CELERY_BROKER`` and the result backend
    ``BENCHFOUNDRY_CELERY_BACKEND`` (one Redis serves both). Both are read when a run starts,
    not at import, and a run fails at once when either is unset rather than falling back to
    a broker that the workers do not listen on."""
    return celery_executor.configured(
        {"broker": {"env": "BENCHFOUNDRY_CELERY_BROKER"}, "backend": {"env": "BENCHFOUNDRY_CELERY_BACKEND"}},
        name="celery",
    )


defs = build_defs(executor=cluster_executor())
