"""Editing one RECOR domain's source file affects that domain only, as the web UI shows it:
once the files are observed again, that domain's source tables alone are stale (Dagster
marks the direct children of a changed input; the rest follow as each is rebuilt), and
rerunning the domain leaves every other domain's materializations as they were. Staleness
is asked of the GraphQL API the UI uses, over the package's shared scripted build (a copy
of it)."""

import dagster as dg
import pytest
from dagster_graphql.test.utils import define_out_of_process_workspace, execute_dagster_graphql

from assets.partitions import DOMAINS
from pipelines.jobs import recor_build_job
from tests.pipelines import stage_runner

DOMAIN = "law"
STALE = """query($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) { ... on AssetNode { staleStatusByPartition(partitions: %s) } }
}"""
# the domain-partitioned assets downstream of the source files: the build and the evaluation
EVAL = [["eval", "recor_queries"], ["eval", "recor_generation"]]
# the children of the observed source files
SOURCES = {f"recor/{name}" for name in ("source_questions", "source_documents", "source_rejects")}


def stale_domains(workspace, keys: list[dg.AssetKey]) -> dict[str, set[str]]:
    """Each asset's stale partitions, as the UI's GraphQL reports them to a new request (the
    webserver makes one per request; a request caches what it has read)."""
    query = STALE % str(list(DOMAINS)).replace("'", '"')
    context = workspace.create_request_context()
    out = {}
    for key in keys:
        statuses = execute_dagster_graphql(context, query, {"key": {"path": key.path}}).data
        statuses = statuses["assetNodeOrError"]["staleStatusByPartition"]
        out[key.to_user_string()] = {d for d, s in zip(DOMAINS, statuses) if s == "STALE"}
    return out


def latest_runs(instance: dg.DagsterInstance, key: dg.AssetKey) -> dict[str, str]:
    records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), limit=1000).records
    runs = {}
    for record in sorted(records, key=lambda r: r.storage_id):
        runs[record.partition_key] = record.run_id
    return runs


@pytest.mark.slow
def test_an_edited_domain_alone_is_stale_and_its_rerun_touches_no_other_domain(scripted_recor, tmp_path, monkeypatch):
    build = scripted_recor.copy(tmp_path / "build")
    for name, value in build.env.items():
        monkeypatch.setenv(name, value)
    defs = stage_runner.location()
    instance = build.instance()
    built = [k for k in defs.resolve_job_def(recor_build_job.name).asset_layer.executable_asset_keys]
    keys = built + [dg.AssetKey(k) for k in EVAL]
    assert len(built) >= 15
    # one code location of the same definitions for every question asked of the UI's API
    with define_out_of_process_workspace(stage_runner.__file__, "location", instance) as ui:
        assert stale_domains(ui, keys) == {k.to_user_string(): set() for k in keys}

        pool = build.data / "stackexchange" / "law_pool.jsonl"
        pool.write_text(
            pool.read_text()
            + '{"id": "law_pool_extra", "content": "Bailment is the transfer of possession of goods."}\n'
        )
        assert defs.resolve_job_def("recor_observe").execute_in_process(instance=instance).success
        assert stale_domains(ui, keys) == {
            k.to_user_string(): {DOMAIN} if k.to_user_string() in SOURCES else set() for k in keys
        }

        before = {k: latest_runs(instance, k) for k in keys}
        rerun = defs.resolve_job_def(recor_build_job.name).execute_in_process(instance=instance, partition_key=DOMAIN)
        assert rerun.success
        for key in keys:
            after = latest_runs(instance, key)
            # every other domain's latest materialization is the shared build's, untouched
            assert {d: r for d, r in after.items() if d != DOMAIN} == {
                d: r for d, r in before[key].items() if d != DOMAIN
            }
            assert after[DOMAIN] == (rerun.run_id if key in built else before[key][DOMAIN]), key
        # the rebuilt domain is fresh again, and no other domain became stale on the way
        stale = stale_domains(ui, keys)
    assert {k.to_user_string(): stale[k.to_user_string()] for k in built} == {k.to_user_string(): set() for k in built}
    assert all(domains <= {DOMAIN} for domains in stale.values()), stale
