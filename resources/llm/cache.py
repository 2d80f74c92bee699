"""litellm's response cache on disk (diskcache), installed once per process together with the
embedded provider."""

from __future__ import annotations

from resources.llm.embedded import _make_provider, register_provider

# (cache type, directory) once installed: a process configures litellm once.
_CONFIGURED: tuple[str, str] | None = None


def _disk_cache(directory: str):
    """A litellm cache backend on diskcache (SQLite): safe across threads and processes,
    and written before the call returns, so a killed run keeps every finished answer."""
    import diskcache
    from litellm.caching.base_cache import BaseCache

    class DiskCache(BaseCache):
        def __init__(self, path: str):
            super().__init__()
            self._store = diskcache.Cache(path)

        def set_cache(self, key, value, **kwargs):
            self._store.set(key, value)

        async def async_set_cache(self, key, value, **kwargs):
            self.set_cache(key, value)

        async def async_set_cache_pipeline(self, cache_list, **kwargs):
            for key, value in cache_list:
                self.set_cache(key, value)

        def get_cache(self, key, **kwargs):
            return self._store.get(key)

        async def async_get_cache(self, key, **kwargs):
            return self.get_cache(key)

        async def batch_cache_write(self, key, value, **kwargs):
            self.set_cache(key, value)

        async def disconnect(self):
            self._store.close()

        async def test_connection(self) -> dict:
            return {"status": "healthy"}

    return DiskCache(directory)


def configure_litellm(cache_type: str, cache_dir: str) -> None:
    """Install the cache and the embedded provider once per process."""
    global _CONFIGURED
    if _CONFIGURED == (cache_type, cache_dir):
        return
    import litellm
    from litellm.caching.caching import Cache

    litellm.drop_params = True  # sample seeds and the like are dropped for APIs without them
    litellm.suppress_debug_info = True
    # litellm skips its cache for requests of more than 4 messages by default; few-shot
    # prompts are longer than that, so the limit is lifted.
    if cache_type == "disk":
        # litellm keys and (de)serialises the entries; they are kept on disk by diskcache.
        litellm.cache = Cache(type="local", max_messages=None)
        litellm.cache.cache = _disk_cache(cache_dir)
    else:
        litellm.cache = Cache(type=cache_type, max_messages=None)
    register_provider("local", _make_provider())
    _CONFIGURED = (cache_type, cache_dir)
