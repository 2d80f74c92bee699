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


class ResponseCache:
    """Answers by key on disk; ``directory=None`` keeps nothing (every call is asked)."""

    def __init__(self, directory: str | None):
        self._store = None
        if directory:
            import diskcache

            self._store = diskcache.Cache(directory)

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """The cached answers among ``keys``, read in one transaction."""
        if self._store is None:
            return {}
        found = {}
        with self._store.transact():
            for k in keys:
                v = self._store.get(k)
                if v is not None:
                    found[k] = v
        return found

    def get(self, key: str) -> Any:
        return None if self._store is None else self._store.get(key)

    def put(self, key: str, value: Any) -> None:
        if self._store is not None:
            self._store.set(key, value)


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
