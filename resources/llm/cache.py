"""The response cache: content-addressed answers on disk (diskcache, SQLite), and the
embedded provider's registration with litellm, both set up once per process.

The cache is the project's own rather than litellm's: a key is the hash of what decides an
answer (the model string, the messages, the sampling parameters with the sample index as
seed), so a whole partition's keys are computed and looked up in bulk before any call is
made. A rerun served from the cache then costs a hash and a SQLite read per call instead
of a litellm round trip each (at 2.4M passages the difference is hours). An answer is
written as soon as it arrives, so a killed run keeps every finished answer; failed calls
are never written, so a rerun asks exactly those again.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Iterable
from typing import Any

from resources.llm.embedded import _make_provider, register_provider

_PROVIDER_INSTALLED = False


def install_embedded_provider() -> None:
    """Register the embedded llama.cpp model as litellm's ``local/`` provider, once."""
    global _PROVIDER_INSTALLED
    if _PROVIDER_INSTALLED:
        return
    import litellm

    litellm.drop_params = True  # sample seeds and the like are dropped for APIs without them
    litellm.suppress_debug_info = True
    register_provider("local", _make_provider())
    _PROVIDER_INSTALLED = True


def cache_key(kind: str, *parts: Any) -> str:
    """A content address: ``kind`` (``chat``, ``score``) and the JSON of what decides the
    answer, hashed. Dict keys are sorted so the same request always hashes the same."""
    blob = json.dumps([kind, *parts], sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return kind + ":" + hashlib.sha256(blob.encode()).hexdigest()


class CacheFullError(RuntimeError):
    """The disk under the cache is nearly full: answers are never evicted to make room."""


# Below this much free space a write stops with CacheFullError rather than filling the disk
# (SQLite then fails mid-transaction, and every later step on that disk with it).
MIN_FREE_BYTES = 512 * 2**20


class ResponseCache:
    """Answers by key on disk; ``directory=None`` keeps nothing (every call is asked).

    Nothing is ever evicted: diskcache's default (a 1 GiB limit, least recently stored out
    first) dropped answers silently after about 3M of QUIT's 8M, and a resumed build asked
    them again. A disk that is nearly full is an error naming the cache instead."""

    def __init__(self, directory: str | None, min_free_bytes: int = MIN_FREE_BYTES):
        self._store = None
        self.directory = directory
        self.min_free_bytes = min_free_bytes
        if directory:
            import diskcache

            # Settings given here are written into the cache's own table, so a cache made with
            # the old default limit stops evicting when it is opened again. No memory map:
            # diskcache maps 64 MB of the file by default, and the mapped pages count in a
            # step's resident memory, growing with the cache up to that size (bench/scale.py
            # read it as 0.8 MB a labeled question); SQLite's page cache alone is as fast here.
            self._store = diskcache.Cache(directory, size_limit=2**62, eviction_policy="none", sqlite_mmap_size=0)

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """The cached answers among ``keys``, read in one transaction."""
        if self._store is None:
            return {}
        found = {}
        get = self._store.get
        with self._store.transact():
            for k in keys:
                v = get(k)
                if v is not None:
                    found[k] = v
        return found

    def get(self, key: str) -> Any:
        return None if self._store is None else self._store.get(key)

    def put(self, key: str, value: Any) -> None:
        self.put_many([(key, value)])

    def put_many(self, items: list[tuple[str, Any]]) -> None:
        """Write answers in one transaction (one commit, where one per answer cost 0.3 ms)."""
        if self._store is None or not items:
            return
        self._room()
        import sqlite3

        try:
            with self._store.transact():
                for k, v in items:
                    self._store.set(k, v)
        except sqlite3.OperationalError as e:
            if "full" in str(e):
                raise CacheFullError(f"the answer cache at {self.directory} could not write: {e}") from e
            raise

    def _room(self) -> None:
        free = shutil.disk_usage(self.directory).free
        if free < self.min_free_bytes:
            s = self.stats()
            raise CacheFullError(
                f"the disk under the answer cache at {self.directory} has {free / 2**20:.0f} MiB free "
                f"(below {self.min_free_bytes / 2**20:.0f} MiB); the cache holds {s['entries']:,} answers in "
                f"{s['bytes'] / 2**20:.0f} MiB and evicts none: free space, or point the LLM resource's "
                f"cache_dir at a larger disk (copying the folder keeps every answer)")

    def stats(self) -> dict[str, int]:
        """Entries and bytes on disk (0 and 0 for no cache): read from diskcache's counters."""
        if self._store is None:
            return {"entries": 0, "bytes": 0}
        return {"entries": len(self._store), "bytes": int(self._store.volume())}


class AnswerWriter:
    """Answers as they arrive, committed in groups. An answer is committed at once when the
    last commit is at least ``delay`` seconds old; otherwise it waits for the next commit,
    which comes when ``size`` answers wait, ``delay`` after the last commit (the caller's
    timer calls :meth:`flush_if_due`), or at the end of a chunk. A slow model so gets a
    commit per answer, and a fast server one commit per group instead of one per answer
    (0.3 ms each), while a killed run loses only the calls in flight and at most ``delay``
    seconds' answers."""

    def __init__(self, cache: ResponseCache, size: int = 512, delay: float = 0.005):
        self.cache, self.size, self.delay = cache, size, delay
        self._pending: list[tuple[str, Any]] = []
        self._last = 0.0

    def add(self, key: str, value: Any) -> bool:
        """Keep an answer; True when it waits for a later commit (the caller sets a timer)."""
        self._pending.append((key, value))
        if len(self._pending) >= self.size or time.monotonic() - self._last >= self.delay:
            self.flush()
            return False
        return True

    def flush_if_due(self) -> None:
        if self._pending and time.monotonic() - self._last >= self.delay:
            self.flush()

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        self._last = time.monotonic()
        try:
            self.cache.put_many(pending)
        except BaseException:
            # Kept for the end-of-chunk flush, which raises again where the caller sees it
            # (a timer's exception would only be logged by the event loop).
            self._pending = pending + self._pending
            raise


_CACHES: dict[str, ResponseCache] = {}


def response_cache(cache_type: str, cache_dir: str) -> ResponseCache:
    """One cache object per directory and process (diskcache opens a SQLite connection)."""
    if cache_type == "off":
        return ResponseCache(None)
    if cache_type != "disk":
        raise ValueError(f"cache_type must be 'disk' or 'off', not {cache_type!r}")
    if cache_dir not in _CACHES:
        _CACHES[cache_dir] = ResponseCache(cache_dir)
    return _CACHES[cache_dir]
