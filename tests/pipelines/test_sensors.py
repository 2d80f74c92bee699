import json
from pathlib import Path

import dagster as dg

from assets.quit.settings import QuitSettings
from pipelines.sensors import quit_verification_sensor
from resources.storage import StorageResource
from tests.conftest import SCRIPTED_REGISTRY


def test_verification_sensor_fires_once_per_saved_decisions(tmp_path):
    resources = {"storage": StorageResource(root=str(tmp_path)), "quit_settings": QuitSettings()}
    ctx = dg.build_sensor_context(resources=resources)
    assert isinstance(quit_verification_sensor(ctx), dg.SkipReason)

    path = tmp_path / "quit" / "human_verification" / "decisions.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"q": {"accepted": ["x"], "rejected": []}}))
    first = quit_verification_sensor(ctx)
    assert isinstance(first, dg.RunRequest)
    cursor = ctx.cursor
    assert cursor

    again = quit_verification_sensor(dg.build_sensor_context(cursor=cursor, resources=resources))
    assert isinstance(again, dg.SkipReason)

    import os
    import time

    later = time.time() + 5
    path.write_text(json.dumps({"q": {"accepted": [], "rejected": ["x"]}}))
    os.utime(path, (later, later))
    fired = quit_verification_sensor(dg.build_sensor_context(cursor=cursor, resources=resources))
    assert isinstance(fired, dg.RunRequest) and fired.run_key != first.run_key


def test_partition_changes_add_registry_keys_and_report_removed_ones():
    from assets.partitions import partition_changes

    changes = partition_changes(
        {"retrievers": ["bm25", "tfidf", "bm25"], "rerankers": ["upr"], "quit_readers": ["a"]},
        {"retrievers": ["minilm", "bm25"], "rerankers": ["upr"]},
    )
    assert changes.new == {"retrievers": ["tfidf"], "quit_readers": ["a"]}
    assert changes.gone == {"retrievers": ["minilm"]}
    assert changes.describe("new") == "retrievers: tfidf; quit_readers: a"
    assert partition_changes({"rerankers": ["upr"]}, {"rerankers": ["upr"]}) == type(changes)({}, {})


def test_registered_keys_follow_every_registry(tmp_path):
    from assets.partitions import registered_keys
    from resources.retrieval import RERANKERS_PATH

    retrievers = tmp_path / "retrievers.yaml"
    retrievers.write_text(
        "retrievers:\n  oracle: {kind: oracle}\n  tfidf: {kind: entrypoint, function: 'examples.retrievers:tfidf'}\n"
        "  bm25: {kind: bm25}\n"
    )
    keys = registered_keys(models=SCRIPTED_REGISTRY, retrievers=str(retrievers), rerankers=RERANKERS_PATH)
    assert keys == {
        "quit_labelers": ["smollm2"],
        "quit_readers": ["smollm2"],
        "quit_models": ["smollm2"],
        "retrievers": ["bm25", "oracle", "tfidf"],
        "recor_retrievers": ["bm25", "tfidf"],
        "rerankers": ["pointwise", "rankgpt", "upr"],
        "wikiprofile_subjects": ["smollm2", "smollm2-native"],
        "finetune_bases": ["minilm"],
        "beir_datasets": [],
    }
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "beir" / "datasets.yaml"
    with_datasets = registered_keys(
        models=SCRIPTED_REGISTRY, retrievers=str(retrievers), rerankers=RERANKERS_PATH, datasets=str(fixture)
    )
    assert with_datasets["beir_datasets"] == ["tiny"]


def test_sync_partitions_adds_and_never_removes(tmp_path):
    from assets.partitions import sync_partitions

    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("retrievers", ["retired"])
    first = sync_partitions(instance, models=SCRIPTED_REGISTRY)
    assert first.new["retrievers"] == ["bm25", "e5-small", "minilm", "oracle"] and first.gone == {
        "retrievers": ["retired"]
    }
    assert instance.get_dynamic_partitions("retrievers") == ["retired", "bm25", "e5-small", "minilm", "oracle"]
    assert instance.get_dynamic_partitions("recor_retrievers") == ["bm25", "e5-small", "minilm"]
    assert instance.get_dynamic_partitions("wikiprofile_subjects") == ["smollm2", "smollm2-native"]
    again = sync_partitions(instance, models=SCRIPTED_REGISTRY)
    assert again.new == {} and again.gone == {"retrievers": ["retired"]}


def test_registry_aliases_become_partitions_once(scripted_llm):
    from pipelines.sensors import registry_partitions_sensor

    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("retrievers", ["retired"])
    assets = _evaluations()
    assert dg.materialize_to_memory([assets[0]], instance=instance, partition_key="retired").success
    defs = dg.Definitions(assets=assets)
    with dg.build_sensor_context(instance=instance, resources={"llm": scripted_llm}, definitions=defs) as ctx:
        result = registry_partitions_sensor(ctx)
        cursor = ctx.cursor
    added = {r.partitions_def_name: list(r.partition_keys) for r in result.dynamic_partitions_requests}
    assert added["wikiprofile_subjects"] == ["smollm2", "smollm2-native"] and added["quit_labelers"] == ["smollm2"]
    assert added["retrievers"] == ["bm25", "e5-small", "minilm", "oracle"] and "oracle" not in added["recor_retrievers"]
    assert added["rerankers"] == ["pointwise", "rankgpt", "upr"]
    assert not result.run_requests
    # once the daemon has applied the requests, the sensor has nothing to add, and says which
    # partition no registry lists any more (kept, with its materializations)
    for name, keys in added.items():
        instance.add_dynamic_partitions(name, keys)
    with dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"llm": scripted_llm}, definitions=defs
    ) as ctx:
        skipped = registry_partitions_sensor(ctx)
    assert isinstance(skipped, dg.SkipReason) and "retrievers: retired" in skipped.skip_message
    assert instance.get_dynamic_partitions("retrievers")[0] == "retired"


def _evaluations():
    """An asset per retriever and one per retriever x reranker, as the evaluation's are."""
    from assets.partitions import retriever_partitions, retriever_reranker_partitions

    @dg.asset(partitions_def=retriever_partitions)
    def retrieval_scores() -> None:
        return None

    @dg.asset(partitions_def=retriever_reranker_partitions)
    def rerank_scores() -> None:
        return None

    return [retrieval_scores, rerank_scores]


def test_registry_sensor_removes_hand_added_partitions_nothing_materialized(scripted_llm):
    """A partition added by hand in the UI's partition picker (in no registry) goes at the next
    tick, with the reason in the log; one that something materialized stays, also when it
    is one dimension of a multi-partition key."""
    from assets.partitions import sync_partitions
    from pipelines.sensors import registry_partitions_sensor

    assets = _evaluations()
    instance = dg.DagsterInstance.ephemeral()
    sync_partitions(instance, models=SCRIPTED_REGISTRY)
    instance.add_dynamic_partitions("retrievers", ["typo", "evaluated"])
    instance.add_dynamic_partitions("rerankers", ["tried", "unused"])
    assert dg.materialize_to_memory([assets[0]], instance=instance, partition_key="evaluated").success
    assert dg.materialize_to_memory(
        [assets[1]], instance=instance, partition_key=dg.MultiPartitionKey({"retriever": "bm25", "reranker": "tried"})
    ).success

    defs = dg.Definitions(assets=assets)
    with dg.build_sensor_context(instance=instance, resources={"llm": scripted_llm}, definitions=defs) as ctx:
        result = registry_partitions_sensor(ctx)
        cursor = ctx.cursor
    assert isinstance(result, dg.SensorResult)
    removed = {
        r.partitions_def_name: list(r.partition_keys)
        for r in result.dynamic_partitions_requests
        if isinstance(r, dg.DeleteDynamicPartitionsRequest)
    }
    assert removed == {"retrievers": ["typo"], "rerankers": ["unused"]}
    for name, keys in removed.items():
        for key in keys:
            instance.delete_dynamic_partition(name, key)

    with dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"llm": scripted_llm}, definitions=defs
    ) as ctx:
        skipped = registry_partitions_sensor(ctx)
    assert isinstance(skipped, dg.SkipReason)
    assert "retrievers: evaluated" in skipped.skip_message and "rerankers: tried" in skipped.skip_message
    assert "evaluated" in instance.get_dynamic_partitions("retrievers")
    assert "typo" not in instance.get_dynamic_partitions("retrievers")


def test_registry_sensor_names_the_files_it_reads(scripted_llm):
    from pipelines.sensors import registry_partitions_sensor
    from resources.datasets import DATASETS_PATH
    from resources.retrieval import RERANKERS_PATH, RETRIEVERS_PATH

    assert RETRIEVERS_PATH in registry_partitions_sensor.description
    assert RERANKERS_PATH in registry_partitions_sensor.description
    assert DATASETS_PATH in registry_partitions_sensor.description and "BENCHFOUNDRY_DATASETS" in (
        registry_partitions_sensor.description
    )
    instance = dg.DagsterInstance.ephemeral()
    with dg.build_sensor_context(
        instance=instance, resources={"llm": scripted_llm}, definitions=dg.Definitions(assets=_evaluations())
    ) as ctx:
        first = registry_partitions_sensor(ctx)
    for request in first.dynamic_partitions_requests:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    with dg.build_sensor_context(
        instance=instance, resources={"llm": scripted_llm}, definitions=dg.Definitions(assets=_evaluations())
    ) as ctx:
        skipped = registry_partitions_sensor(ctx)
    assert SCRIPTED_REGISTRY in skipped.skip_message and RETRIEVERS_PATH in skipped.skip_message
