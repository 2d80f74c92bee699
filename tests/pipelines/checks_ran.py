"""What the tests of a whole run ask of its checks: which checks a run's stages hold, and
which of them failed or never ran in the run's instance."""

from __future__ import annotations

import dagster as dg


def checks_of_stages(defs: dg.Definitions, stages) -> set[dg.AssetCheckKey]:
    """The checks of every asset the stage jobs materialize (a job runs its assets' checks)."""
    keys = set()
    for job_name, _ in stages:
        keys |= defs.resolve_job_def(job_name).asset_layer.executable_asset_keys
    return {k for k in defs.resolve_asset_graph().asset_check_keys if k.asset_key in keys}


def failed_and_missing_checks(
    instance: dg.DagsterInstance, checks: set[dg.AssetCheckKey]
) -> tuple[list[str], list[str]]:
    """The ERROR-severity failures among ``checks`` in ``instance`` (a non-blocking check's
    failure does not stop a run, so a test looks for it), and the checks that never ran."""
    failed, evaluated = [], set()
    for key in checks:
        for record in instance.event_log_storage.get_asset_check_execution_history(key, limit=50):
            evaluation = record.event.dagster_event.event_specific_data if record.event else None
            if not isinstance(evaluation, dg.AssetCheckEvaluation):
                continue  # planned, not run yet
            evaluated.add(key)
            if not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR:
                failed.append(f"{key.asset_key.to_user_string()}:{key.name} ({record.partition or 'unpartitioned'})")
    missing = sorted(f"{k.asset_key.to_user_string()}:{k.name}" for k in checks - evaluated)
    return failed, missing
