"""One storage root: set by the deployment (the ``storage`` resource of its definitions), it
moves every table, export, run file and index of a run; nothing lands under the default root,
and a run cannot set another root."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from assets.recor.settings import RecorSettings
from pipelines.definitions import build_defs
from resources.llm import LLMResource
from resources.storage import StorageResource
from tests import scripted
from tests.conftest import SCRIPTED_REGISTRY

pytestmark = pytest.mark.slow


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_the_deployments_root_moves_tables_exports_runs_and_indexes(tmp_path, instance, monkeypatch):
    default, chosen = tmp_path / "default", tmp_path / "chosen"
    monkeypatch.chdir(tmp_path)  # the class default root, ./storage, would be here
    scripted.install()
    defs = build_defs(
        storage=StorageResource(root=str(chosen), local_index_root=str(tmp_path / "local-indexes")),
        llm=LLMResource(registry_path=SCRIPTED_REGISTRY, cache_dir=str(tmp_path / "llm"), backoff_seconds=0.01),
        recor_settings=RecorSettings(profile="demo"),
    )
    with pytest.raises(dg.DagsterInvalidConfigError, match="root"):
        defs.resolve_job_def("recor_observe").execute_in_process(
            run_config={"resources": {"storage": {"config": {"root": str(default)}}}}, instance=instance
        )
    config = {"resources": {"llm": {"config": {"max_retries": 1}}}}  # an allowed field moves nothing
    # law: a StackExchange domain, so hard-negative mining builds a search index too
    for job, key in [
        ("recor_observe", None),
        ("recor_build", "law"),
        ("recor_eval_source", "law"),
        ("recor_queries", "law"),
        ("recor_retrieval", dg.MultiPartitionKey({"domain": "law", "retriever": "bm25"})),
        ("recor_retrieval", dg.MultiPartitionKey({"domain": "law", "retriever": "minilm"})),
    ]:
        result = defs.resolve_job_def(job).execute_in_process(run_config=config, instance=instance, partition_key=key)
        assert result.success, job
    made = files_under(chosen)
    assert "recor/benchmark/law.parquet" in made  # a table
    assert any(f.startswith("recor/release/") for f in made)  # the export
    assert any(f.startswith("eval/runs/recor/law/") and f.endswith(".trec") for f in made)  # TREC run files
    assert any(f.startswith("indexes/lucene/") for f in made)  # BM25 index
    assert any(f.startswith("indexes/faiss/") for f in made)  # dense index
    assert any(f.startswith("indexes/search/") for f in made)  # the mining pool's index
    assert files_under(default) == [] and files_under(tmp_path / "storage") == []
    assert files_under(tmp_path / "local-indexes") == []
