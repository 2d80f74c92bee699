"""The deployment's instance (deploy/dagster.yaml) on real services: a RECOR domain built
against a Postgres instance with the Parquet root and the compute logs in an S3 bucket
(moto's server). The run must be recorded in Postgres, every table must land in the bucket
at its storage-contract path and be read back by the steps downstream, and the step logs
must be uploaded under the configured prefix. In-process execution captures compute logs
too, so the run stays in one process (a subprocess per step would add ~20 s of imports each)."""

import io

import dagster as dg
import polars as pl
import psycopg2
import pytest

DOMAIN = "law"


@pytest.mark.slow
def test_recor_domain_on_postgres_and_s3(deployment, postgres_server):
    from tests.services import scripted_defs

    with dg.DagsterInstance.get() as instance:
        result = scripted_defs.recor_build().execute_in_process(instance=instance, partition_key=DOMAIN)
    assert result.success
    materialized = {e.asset_key: e for e in result.get_asset_materialization_events()}
    assert len(materialized) >= 15

    with psycopg2.connect(postgres_server.url) as conn, conn.cursor() as cur:
        cur.execute("SELECT pipeline_name, status FROM runs WHERE run_id = %s", (result.run_id,))
        assert cur.fetchall() == [("recor_build", "SUCCESS")]
        cur.execute(
            "SELECT count(*) FROM event_logs WHERE run_id = %s AND dagster_event_type = 'ASSET_MATERIALIZATION'",
            (result.run_id,),
        )
        assert cur.fetchone()[0] == len(materialized)

    tables = deployment.keys(deployment.storage_prefix + "/")
    expected = {"/".join([deployment.storage_prefix, *key.path, f"{DOMAIN}.parquet"]) for key in materialized}
    assert expected <= tables

    # the benchmark is built from turns, conversations and the corpus, all read back from S3
    benchmark_key = dg.AssetKey(["recor", "benchmark"])
    body = deployment.s3.get_object(
        Bucket=deployment.bucket, Key=f"{deployment.storage_prefix}/recor/benchmark/{DOMAIN}.parquet"
    )["Body"].read()
    rows = pl.read_parquet(io.BytesIO(body)).height
    assert rows > 0
    assert materialized[benchmark_key].materialization.metadata["dagster/row_count"].value == rows

    logs = deployment.keys(f"{deployment.logs_prefix}/")
    run_logs = [k for k in logs if result.run_id in k]
    assert run_logs, f"no compute logs for run {result.run_id} under {deployment.logs_prefix}/: {sorted(logs)}"
    text = b"".join(deployment.s3.get_object(Bucket=deployment.bucket, Key=k)["Body"].read() for k in run_logs)
    assert b"recor_build" in text
