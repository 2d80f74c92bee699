"""The answer cache keeps every answer: no eviction, a loud stop on a full disk, its size in
the step's metadata, and answers committed in groups without losing finished ones."""

import os
import time

import diskcache
import pytest

from resources.llm import CallStats, LLMRequest
from resources.llm.cache import AnswerWriter, CacheFullError, ResponseCache


def test_a_cache_made_with_the_old_limit_stops_evicting_when_reopened(tmp_path):
    # diskcache's default evicts least recently stored entries past its size limit; a cache
    # made before this change carries that limit in its own settings table.
    old = diskcache.Cache(str(tmp_path), size_limit=2**20)
    old.set("before", {"text": "kept"})
    old.close()

    cache = ResponseCache(str(tmp_path))
    answer = {"text": "x" * 4000}  # 4 MB in all, four times the old limit
    cache.put_many([(f"k{i}", answer) for i in range(1000)])
    found = cache.get_many([f"k{i}" for i in range(1000)] + ["before"])
    assert len(found) == 1001 and found["before"] == {"text": "kept"}
    assert cache.stats()["entries"] == 1001 and cache.stats()["bytes"] > 4_000_000


@pytest.mark.slow
def test_more_than_the_old_default_limit_is_written_and_every_key_read_back(tmp_path):
    cache = ResponseCache(str(tmp_path))
    block = os.urandom(2**20)  # 1 MiB a value: 1,100 of them pass diskcache's 1 GiB default
    keys = [f"chat:{i}" for i in range(1100)]
    for start in range(0, len(keys), 100):
        cache.put_many([(k, {"text": k, "blob": block}) for k in keys[start : start + 100]])
    found = cache.get_many(keys)
    assert len(found) == 1100 and all(found[k]["text"] == k for k in keys)
    assert cache.stats()["bytes"] > 2**30


def test_a_nearly_full_disk_stops_the_write_with_a_clear_error_and_evicts_nothing(tmp_path):
    cache = ResponseCache(str(tmp_path))
    cache.put("first", {"text": "a"})
    full = ResponseCache(str(tmp_path), min_free_bytes=2**62)  # more than any disk has free
    with pytest.raises(CacheFullError, match=r"MiB free .* holds 1 answers .* evicts none"):
        full.put("second", {"text": "b"})
    assert cache.get_many(["first", "second"]) == {"first": {"text": "a"}}


def test_answers_are_committed_in_groups_and_none_is_lost_at_the_end(tmp_path):
    cache = ResponseCache(str(tmp_path))
    writer = AnswerWriter(cache, size=3, delay=60.0)
    assert writer.add("a", 1) is False  # the first answer after a quiet spell: committed at once
    assert writer.add("b", 2) is True and writer.add("c", 3) is True  # waiting for a group
    assert cache.get_many(["b", "c"]) == {}
    assert writer.add("d", 4) is False  # the group is full: committed
    assert cache.get_many(["b", "c", "d"]) == {"b": 2, "c": 3, "d": 4}
    writer.add("e", 5)
    writer.flush()
    assert cache.get("e") == 5


def test_a_group_waits_at_most_its_delay(tmp_path):
    cache = ResponseCache(str(tmp_path))
    writer = AnswerWriter(cache, size=1000, delay=0.05)
    writer.add("a", 1)
    assert writer.add("b", 2) is True
    writer.flush_if_due()
    assert cache.get("b") is None
    time.sleep(0.06)
    writer.flush_if_due()
    assert cache.get("b") == 2


def test_a_failed_commit_keeps_its_answers_for_the_next(tmp_path):
    cache = ResponseCache(str(tmp_path), min_free_bytes=2**62)
    writer = AnswerWriter(cache, size=1000, delay=60.0)
    with pytest.raises(CacheFullError):
        writer.add("a", 1)
    cache.min_free_bytes = 0
    writer.flush()
    assert cache.get("a") == 1


def test_the_steps_metadata_carries_the_caches_entries_and_bytes(scripted_llm):
    stats = CallStats()
    scripted_llm.run(
        "smollm2",
        [LLMRequest(str(i), [{"role": "user", "content": f"Capital of {i}?"}]) for i in range(5)],
        stats=stats,
    )
    meta = stats.as_metadata()
    assert meta["llm_cache/entries"] == 5 and meta["llm_cache/bytes"] > 0
    assert CallStats().merge(stats).as_metadata()["llm_cache/entries"] == 5


def test_the_deployment_chooses_the_cache_backend_in_its_environment(monkeypatch):
    from pipelines.resources import default_resources

    monkeypatch.delenv("BENCHFOUNDRY_CACHE_TYPE", raising=False)
    assert default_resources()["llm"].cache_type == "disk"
    monkeypatch.setenv("BENCHFOUNDRY_CACHE_TYPE", "postgres")
    assert default_resources()["llm"].cache_type == "postgres"
