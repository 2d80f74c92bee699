import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg

ROOT = Path(__file__).resolve().parents[2]

SNAPSHOT = Path(__file__).with_name("graph.snapshot.json")


def partitions(pdef) -> object:
    if pdef is None:
        return None
    if isinstance(pdef, dg.DynamicPartitionsDefinition):
        return f"dynamic:{pdef.name}"
    if isinstance(pdef, dg.MultiPartitionsDefinition):
        return {d.name: partitions(d.partitions_def) for d in pdef.partitions_defs}
    return pdef.get_partition_keys()


def graph_snapshot(defs: dg.Definitions) -> dict:
    """What a user sees of the graph: assets with their dependencies, partitions, group, code
    version and checks; jobs with what they select; schedules; sensors."""
    graph = defs.resolve_asset_graph()
    checks: dict[str, list[str]] = {}
    for key in graph.asset_check_keys:
        spec = graph.get_check_spec(key)
        checks.setdefault(key.asset_key.to_user_string(), []).append(
            f"{key.name}{' (blocking)' if spec.blocking else ''}"
        )
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        assets[key.to_user_string()] = {
            "group": node.group_name,
            "code_version": node.code_version,
            "deps": sorted(p.to_user_string() for p in node.parent_keys),
            "partitions": partitions(node.partitions_def),
            "checks": sorted(checks.get(key.to_user_string(), [])),
        }
    jobs = {}
    for job in sorted(defs.resolve_all_job_defs(), key=lambda j: j.name):
        if job.name.startswith("__"):
            continue
        jobs[job.name] = sorted(k.to_user_string() for k in job.asset_layer.executable_asset_keys)
    schedules = {s.name: {"cron": s.cron_schedule, "job": s.job_name} for s in defs.schedules or []}
    sensors = sorted(s.name for s in defs.sensors or [])
    return {"assets": assets, "jobs": jobs, "schedules": schedules, "sensors": sensors}


def test_asset_graph_snapshot():
    """The graph as committed. A change to an asset's name, dependencies, partitions or checks,
    or to a job, schedule or sensor, shows here; after an intended change, rewrite the
    snapshot with ``UPDATE_SNAPSHOT=1 pytest tests/pipelines/test_definitions.py`` and
    review its diff."""
    from pipelines.definitions import defs

    current = graph_snapshot(defs)
    if os.environ.get("UPDATE_SNAPSHOT"):
        SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    for part in ("assets", "jobs", "schedules", "sensors"):
        assert current[part] == expected[part], f"the {part} differ from {SNAPSHOT.name}"


def test_every_asset_has_a_description_and_a_check():
    from pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    checked = {k.asset_key.to_user_string() for k in graph.asset_check_keys}
    assert not sorted(keys - checked), f"assets without a check: {sorted(keys - checked)}"
    assert all(graph.get(k).description for k in graph.get_all_asset_keys())
    llm_bound = {k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).pools == {"llm_embedded"}}
    assert {"quit/passage_answers", "quit/parametric_answers", "quit/hint_convergence"} <= llm_bound


def test_jobs_cover_the_graph_in_stages():
    from pipelines.definitions import defs
    from pipelines.stages import run_plan

    covered = set()
    # Wikimedia's data as WikiProfile's source (make run --wikipedia) and the registered
    # BEIR-layout datasets (make run --beir) among the stages
    for name, _ in run_plan(finetune=True, wikipedia=True, beir=True):
        job = defs.resolve_job_def(name)
        covered |= {k.to_user_string() for k in job.asset_layer.executable_asset_keys}
    # every asset, RECOR's observed source files included (recor_observe)
    assert covered == {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}


def test_a_stage_names_the_partitions_of_its_job_as_the_partitions_module_does():
    """One name per set of partitions: a stage's (``make run``), ``NAMED``'s key and the set
    ``make run`` reads the keys of."""
    from assets.partitions import NAMED
    from pipelines.definitions import defs
    from pipelines.stages import RETECO_STAGES, run_plan, stage_partitions

    assert set(stage_partitions()) == set(NAMED)
    partitioned = {
        name: named for name, named in {*run_plan(finetune=True, wikipedia=True, beir=True), *RETECO_STAGES} if named
    }
    assert {"retriever_rerankers", "domain_retrievers", "quit_models", "beir_dataset_retrievers"} <= set(
        partitioned.values()
    )
    for name, named in partitioned.items():
        assert defs.resolve_job_def(name).partitions_def is NAMED[named], name


def test_the_default_run_and_the_release_run_hold_every_check_between_them():
    """The end-to-end test sees every check of the default run's stages run, the release run's
    test every check of its own (QUIT's fine-tuning among them), and the Wikimedia sources'
    test (tests/assets/wikiprofile/test_wikipedia_sources.py) the checks of its assets:
    together, all."""
    from checks.wikiprofile.wikipedia import wikipedia_checks
    from pipelines.definitions import defs
    from pipelines.stages import run_plan
    from tests.pipelines.checks_ran import checks_of_stages
    from tests.pipelines.release_run import PLAN

    default, release = checks_of_stages(defs, run_plan()), checks_of_stages(defs, run_plan(**PLAN))
    wikipedia = {key for check in wikipedia_checks for key in check.check_keys}
    assert default | release | wikipedia == set(defs.resolve_asset_graph().asset_check_keys)
    assert any(k.asset_key.path[-1] == "quit_dense_model" for k in release - default)


def test_dagster_definitions_validate():
    out = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-w", "workspace.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_checks_only_job_rejudges_stored_tables_without_materializing(tmp_path):
    import polars as pl

    from checks.factories import CheckSettings, llm_accounting_check
    from pipelines.jobs import recheck_jobs
    from resources.storage import StorageResource, parquet_io_manager

    @dg.asset(key=["demo", "answers"])
    def answers() -> dg.Output:
        return dg.Output(
            pl.DataFrame({"item": ["a"]}), metadata={"llm/calls": 4, "llm/errors": 3, "llm/parse_failures": 0}
        )

    check = llm_accounting_check("demo/answers")
    (recheck,) = recheck_jobs([check], {})
    assert recheck.name == "demo_checks"
    defs = dg.Definitions(
        assets=[answers],
        asset_checks=[check],
        jobs=[recheck],
        resources={
            "storage": StorageResource(root=str(tmp_path)),
            "io_manager": parquet_io_manager,
            "check_settings": CheckSettings(),
        },
    )
    instance = dg.DagsterInstance.ephemeral()
    first = dg.materialize([answers, check], instance=instance, resources=defs.resources, raise_on_error=False)
    assert not first.get_asset_check_evaluations()[0].passed
    looser = {"resources": {"check_settings": {"config": {"max_llm_failure_rate": 0.8, "max_llm_error_rate": 0.8}}}}
    again = defs.resolve_job_def("demo_checks").execute_in_process(instance=instance, run_config=looser)
    assert again.get_asset_check_evaluations()[0].passed
    assert again.get_asset_materialization_events() == []
    assert len(instance.fetch_materializations(dg.AssetKey(["demo", "answers"]), limit=10).records) == 1
