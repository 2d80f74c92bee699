"""Editing one RECOR domain's source file affects that domain only: its fingerprint alone
changes, and rerunning its partition rematerializes only that slice."""

import shutil

import dagster as dg
import pytest

from assets.recor.settings import ROOT, RecorSettings
from pipelines.definitions import build_defs
from resources.llm import LLMResource
from resources.search import DocumentSearchResource
from resources.storage import ParquetIOManager
from tests import scripted
from tests.conftest import SCRIPTED_REGISTRY


@pytest.mark.slow
def test_rerunning_one_domain_recomputes_only_its_slice(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHFOUNDRY_STORAGE", str(tmp_path / "storage"))
    shutil.copytree(ROOT / "data" / "recor", tmp_path / "recor")
    registry = tmp_path / "sources.yaml"
    registry.write_text((ROOT / "assets" / "recor" / "sources.yaml").read_text().replace("data/recor/", f"{tmp_path}/recor/"))
    scripted.install()
    defs = build_defs(
        io_manager=ParquetIOManager(root=str(tmp_path / "storage")),
        llm=LLMResource(registry_path=SCRIPTED_REGISTRY, cache_dir=str(tmp_path / "llm")),
        recor_settings=RecorSettings(sources_path=str(registry)),
        search=DocumentSearchResource(index_root=str(tmp_path / "search")),
    )
    scripted.install()
    instance = dg.DagsterInstance.ephemeral()
    job = defs.resolve_job_def("recor_build")
    built = {}
    run_ids = {}
    for domain in ("law", "biology"):
        result = job.execute_in_process(instance=instance, partition_key=domain)
        built[domain] = result.get_asset_materialization_events()
        run_ids[domain] = result.run_id
    per_run = len(built["law"])
    assert per_run == len(built["biology"]) >= 15
    settings = RecorSettings(sources_path=str(registry))
    before = {d: settings.fingerprint(d) for d in ("law", "biology")}

    pool = tmp_path / "recor" / "stackexchange" / "law_pool.jsonl"
    pool.write_text(pool.read_text() + '{"id": "law_pool_extra", "content": "Bailment is the transfer of possession of goods."}\n')
    assert settings.fingerprint("law") != before["law"] and settings.fingerprint("biology") == before["biology"]

    rerun = job.execute_in_process(instance=instance, partition_key="law")
    events = rerun.get_asset_materialization_events()
    assert len(events) == per_run and {e.partition for e in events} == {"law"}
    # every step ran once, in a run of law's partition alone
    ran = [e.step_key for e in rerun.all_events if e.is_step_success]
    assert len(ran) == len(set(ran)) == len(job.nodes_in_topological_order) and rerun.dagster_run.tags["dagster/partition"] == "law"
    latest_biology = instance.get_latest_materialization_event(dg.AssetKey(["recor", "turns"]))
    # the latest turns materialization is law's; biology's still comes from its first run
    assert latest_biology.asset_materialization.partition == "law"
    records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey(["recor", "turns"]),
                                                                    asset_partitions=["biology"]), limit=10).records
    assert len(records) == 1 and records[0].run_id == run_ids["biology"]
