"""The definitions for Kubernetes: the same assets and jobs, each step a Kubernetes Job.

The Helm values' code location serves this module (``deploy/helm/values.yaml``). dagster-k8s's
``k8s_job_executor`` starts one pod per step from the code location's image, with the run
launcher's settings (env, secrets, resources, the CPU node pool); a GPU-bound step's op tag
(``assets.common.placement.GPU_STEP_TAGS``) asks for a GPU and the GPU pool on top of them.
A module of its own because Dagster loads one Definitions object per module
(``pipelines.cluster`` holds the Celery one).
"""

from __future__ import annotations

from dagster_k8s import k8s_job_executor

from pipelines.definitions import build_defs

defs = build_defs(executor=k8s_job_executor)
