"""The one Definitions object of benchfoundry."""

from __future__ import annotations

import dagster as dg

from assets.eval.beir import beir_eval_assets
from assets.eval.leaderboard import leaderboard_assets
from assets.eval.quit.assets import quit_eval_assets
from assets.eval.quit.finetune.assets import finetune_data_assets, finetune_model_assets
from assets.eval.quit.finetune.report import finetune_report_assets
from assets.eval.recor.assets import recor_eval_assets
from assets.eval.sources import benchmark_assets
from assets.eval.wikiprofile.assets import wikiprofile_analysis_assets, wikiprofile_profile_assets
from assets.partitions import NAMED
from assets.quit.assets import quit_assets
from assets.recor.assets import recor_assets
from assets.recor.export import recor_export_assets
from assets.wikiprofile.assets import wikiprofile_assets
from checks.eval import eval_checks
from checks.quit import quit_checks
from checks.recor import recor_checks
from checks.wikiprofile import wikiprofile_checks
from pipelines.jobs import jobs, recheck_jobs
from pipelines.resources import default_resources, deployment_resources
from pipelines.schedules import schedules
from pipelines.sensors import sensors

CHECKS = [*quit_checks, *recor_checks, *wikiprofile_checks, *eval_checks]


def build_defs(executor: dg.ExecutorDefinition = dg.in_process_executor, **resource_overrides) -> dg.Definitions:
    """All definitions, with any resource replaced (tests and ``run_default`` options) and
    the jobs' executor.

    A run from the web UI or the daemon is one process that executes its steps, the asset
    checks included, inside it (``in_process``), as ``make run`` does: Dagster's default
    executor starts a process per step, and each imports the project again (10-15 s on 2
    cores), which made a one-partition run of two assets and four checks cost minutes for
    seconds of work (``bench/ui_run_cost.py``). Parallelism comes from runs (partitions,
    backfills) and, on a cluster, from the step-per-worker executors (``pipelines.cluster``,
    ``pipelines.cluster_k8s``).

    What a run may configure is the allowlist of ``pipelines.resources``; the executor takes
    no run config at all (:func:`fixed`)."""
    return dg.Definitions(
        assets=[
            *quit_assets,
            *benchmark_assets,
            *quit_eval_assets,
            *finetune_data_assets,
            *finetune_model_assets,
            *finetune_report_assets,
            *recor_assets,
            *recor_export_assets,
            *recor_eval_assets,
            *wikiprofile_assets,
            *wikiprofile_profile_assets,
            *wikiprofile_analysis_assets,
            *beir_eval_assets,
            *leaderboard_assets,
        ],
        asset_checks=CHECKS,
        jobs=[*jobs, *recheck_jobs(CHECKS, NAMED)],
        sensors=sensors,
        schedules=schedules,
        resources=deployment_resources({**default_resources(), **resource_overrides}),
        executor=fixed(executor),
    )


def fixed(executor: dg.ExecutorDefinition) -> dg.ExecutorDefinition:
    """``executor`` as the definitions give it, taking no run config: an executor's config names
    where and how steps run (Celery's broker, a pod's image, env and volumes, the modules a
    process preloads), the deployment's to say. Its schema is empty, so a run that sets
    ``execution`` is refused rather than silently ignored."""
    return executor.configured(lambda _: {}, config_schema={}, name=executor.name)


defs = build_defs()
