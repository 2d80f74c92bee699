import json

import dagster as dg

from assets.quit.settings import QuitSettings
from pipelines.sensors import quit_verification_sensor
from resources.storage import StorageResource


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


def test_registry_subjects_become_partitions_once(scripted_llm):
    from pipelines.sensors import new_subjects, wikiprofile_subjects_sensor

    assert new_subjects(["a", "b", "a", "c"], ["b"]) == ["a", "c"]
    instance = dg.DagsterInstance.ephemeral()
    with dg.build_sensor_context(instance=instance, resources={"llm": scripted_llm}) as ctx:
        result = wikiprofile_subjects_sensor(ctx)
    [request] = result.dynamic_partitions_requests
    assert request.partitions_def_name == "wikiprofile_subjects" and list(request.partition_keys) == ["smollm2", "smollm2-native"]
    assert not result.run_requests
    # once the daemon has applied the request, the sensor has nothing to add
    instance.add_dynamic_partitions("wikiprofile_subjects", list(request.partition_keys))
    with dg.build_sensor_context(instance=instance, resources={"llm": scripted_llm}) as ctx:
        assert isinstance(wikiprofile_subjects_sensor(ctx), dg.SkipReason)
