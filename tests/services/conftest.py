import dataclasses
import shutil
import uuid
from pathlib import Path

import boto3
import pytest

DEPLOY_INSTANCE = Path(__file__).parents[2] / "deploy" / "dagster.yaml"


@dataclasses.dataclass(frozen=True)
class Deployment:
    """A DAGSTER_HOME with the deployment's instance config, over the session's servers."""

    home: Path
    bucket: str
    storage_prefix: str
    logs_prefix: str
    s3: object

    def keys(self, prefix: str) -> set[str]:
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return {item["Key"] for page in pages for item in page.get("Contents", [])}


@pytest.fixture
def deployment(tmp_path, monkeypatch, postgres_server, s3_server) -> Deployment:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(DEPLOY_INSTANCE, home / "dagster.yaml")
    bucket = f"benchfoundry-{uuid.uuid4().hex[:12]}"
    env = {
        "DAGSTER_HOME": str(home),
        "DAGSTER_PG_HOST": postgres_server.host,
        "DAGSTER_PG_PORT": str(postgres_server.port),
        "DAGSTER_PG_USER": postgres_server.user,
        "DAGSTER_PG_PASSWORD": postgres_server.password,
        "DAGSTER_PG_DB": postgres_server.database,
        "BENCHFOUNDRY_LOGS_BUCKET": bucket,
        "BENCHFOUNDRY_LOGS_PREFIX": "compute-logs",
        "BENCHFOUNDRY_STORAGE": f"s3://{bucket}/storage",
        "BENCHFOUNDRY_CACHE": str(tmp_path / "cache"),
        "AWS_ENDPOINT_URL": s3_server.endpoint_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": s3_server.region,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    s3 = boto3.client("s3", endpoint_url=s3_server.endpoint_url, region_name=s3_server.region)
    s3.create_bucket(Bucket=bucket)
    return Deployment(home=home, bucket=bucket, storage_prefix="storage", logs_prefix="compute-logs", s3=s3)
