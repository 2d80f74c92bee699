import json

import dagster as dg

from pipelines.sensors import quit_verification_sensor


def test_verification_sensor_fires_once_per_saved_decisions(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHFOUNDRY_STORAGE", str(tmp_path))
    ctx = dg.build_sensor_context()
    assert isinstance(quit_verification_sensor(ctx), dg.SkipReason)

    path = tmp_path / "quit" / "human_verification" / "decisions.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"q": {"accepted": ["x"], "rejected": []}}))
    first = quit_verification_sensor(ctx)
    assert isinstance(first, dg.RunRequest)
    cursor = ctx.cursor
    assert cursor

    again = quit_verification_sensor(dg.build_sensor_context(cursor=cursor))
    assert isinstance(again, dg.SkipReason)

    import os
    import time

    later = time.time() + 5
    path.write_text(json.dumps({"q": {"accepted": [], "rejected": ["x"]}}))
    os.utime(path, (later, later))
    fired = quit_verification_sensor(dg.build_sensor_context(cursor=cursor))
    assert isinstance(fired, dg.RunRequest) and fired.run_key != first.run_key
