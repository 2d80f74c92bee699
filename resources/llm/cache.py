"""The response cache: content-addressed answers on disk (diskcache, SQLite) or in a
PostgreSQL table every worker shares, and the embedded provider's registration with
litellm, both set up once per process.

The cache is the project's own rather than litellm's: a key is the hash of what decides an
answer (the model string, the messages, the sampling parameters with the sample index as
seed), so a whole partition's keys are computed and looked up in bulk before any call is
made. A rerun served from the cache then costs a hash and a SQLite read per call instead
of a litellm round trip each (at 2.4M passages the difference is hours). An answer is
written as soon as it arrives, so a killed run keeps every finished answer; failed calls
are never written, so a rerun asks exactly those again.

The disk cache is a folder per machine: a step retried on another worker, or a partition
rerun in a new pod, finds none of the first worker's answers. The Postgres cache
(``cache_type="postgres"``) is one table that every worker reaches, under the same keys.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from typing import Any, Protocol
from urllib.parse import urlsplit

from resources.llm.embedded import _make_provider, register_provider
from resources.redact import redact_chain

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


class AnswerCache(Protocol):
    """What the LLM resource asks of a cache backend."""

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]: ...
    def get(self, key: str) -> Any: ...
    def put(self, key: str, value: Any) -> None: ...
    def put_many(self, items: list[tuple[str, Any]]) -> None: ...
    def stats(self) -> dict[str, int]: ...


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
                f"cache_dir at a larger disk (copying the folder keeps every answer)"
            )

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

    def __init__(self, cache: AnswerCache, size: int = 512, delay: float = 0.005):
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


class CacheUnavailableError(RuntimeError):
    """The Postgres answer cache could not be reached, even after connecting again once."""


# The table every worker shares. No eviction here either: rows are only ever inserted.
TABLE = "benchfoundry_llm_answers"
# Where cache_type "postgres" finds its URL when the resource names none: the URL carries a
# password, so a deployment sets it in the environment (a Kubernetes secret), not in run config.
CACHE_URL_ENV = "BENCHFOUNDRY_CACHE_URL"
# Below this many rows (as the planner estimates them) stats() counts them exactly; above,
# the estimate (pg_class.reltuples, kept by autovacuum) is the figure: stats() runs after
# every chunk, and an exact count of QUIT's 8M rows scans the whole table each time.
EXACT_COUNT_BELOW = 100_000


class PostgresCache:
    """Answers by key in one Postgres table (``benchfoundry_llm_answers``, made if missing),
    shared by every process given the same URL: a step retried on another worker is served
    the first worker's answers. Lookups are one query per chunk (``key = ANY(...)``), writes
    one transaction per group the :class:`AnswerWriter` commits.

    Values are stored as JSON, not pickled as diskcache does: every value the resource
    writes is a plain JSON payload (text, token counts, tokens and their log-probabilities;
    a score's floats), and a row of a table that every worker of a deployment writes must
    not be able to run code in the worker that reads it, as a pickle can. JSON keeps floats
    exactly and reads ``-Infinity`` back. A key written twice keeps its first answer
    (``ON CONFLICT DO NOTHING``): two workers that asked the same call hold the same answer.

    One connection per process, opened on first use and shared by its threads under a lock,
    one operation at a time, so that two threads never mix their statements in one
    transaction (diskcache gives each thread its own SQLite connection; a connection per
    thread here would multiply the server's connections); a process forked from one that
    had connected opens its own. A connection found lost is opened again once; then the call
    fails with :class:`CacheUnavailableError` naming the server. No error leaves it with the
    password, in its message or in a cause or context it links to (``redact_chain``)."""

    def __init__(self, url: str, connect_timeout: int = 10):
        self._url = url
        self.where = _where(url)
        self.connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._conn = None
        _POSTGRES_CACHES.add(self)

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """The cached answers among ``keys``, read in one query."""
        keys = list(keys)
        if not keys:
            return {}

        def read(cur) -> list:
            cur.execute(f"SELECT key, value FROM {TABLE} WHERE key = ANY(%s)", (keys,))
            return cur.fetchall()

        return {k: json.loads(bytes(v)) for k, v in self._run(read)}

    def get(self, key: str) -> Any:
        return self.get_many([key]).get(key)

    def put(self, key: str, value: Any) -> None:
        self.put_many([(key, value)])

    def put_many(self, items: list[tuple[str, Any]]) -> None:
        """Write answers in one transaction; a key already there keeps its answer."""
        if not items:
            return
        from psycopg2.extras import execute_values

        # ASCII escapes: a model's text with a lone surrogate still encodes, and reads back the same.
        rows = [(k, json.dumps(v, separators=(",", ":")).encode()) for k, v in items]

        def write(cur) -> None:
            execute_values(
                cur,
                f"INSERT INTO {TABLE} (key, value) VALUES %s ON CONFLICT (key) DO NOTHING",
                rows,
                page_size=len(rows),
            )

        self._run(write)

    def stats(self) -> dict[str, int]:
        """Entries (exact below :data:`EXACT_COUNT_BELOW`, else the planner's estimate) and
        bytes: the table's, its index's and its TOAST's (``pg_total_relation_size``)."""

        def measure(cur) -> dict[str, int]:
            cur.execute(
                "SELECT reltuples::bigint, pg_total_relation_size(oid) FROM pg_class WHERE oid = %s::regclass", (TABLE,)
            )
            entries, size = cur.fetchone()
            if entries < EXACT_COUNT_BELOW:  # -1: never analyzed yet
                cur.execute(f"SELECT count(*) FROM {TABLE}")
                entries = cur.fetchone()[0]
            return {"entries": int(entries), "bytes": int(size)}

        return self._run(measure)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _run(self, operation: Callable[[Any], Any]) -> Any:
        """``operation(cursor)`` (:meth:`_attempts`); whatever it raises leaves redacted with
        its whole chain: a driver's error may echo the URL (libpq repeats one it cannot read),
        and Dagster writes every cause and context of a step's error into its event log."""
        with self._lock:
            try:
                return self._attempts(operation)
            except Exception as e:  # noqa: BLE001 - re-raised, redacted
                failure = redact_chain(e, self._secrets())
        raise failure  # outside the handler, which would link the raw error back as its context

    def _attempts(self, operation: Callable[[Any], Any]) -> Any:
        """``operation(cursor)`` in a transaction of its own, committed; on a lost connection
        once more on a new one (a read, and a write that keeps existing keys, can be repeated)."""
        import psycopg2
        import psycopg2.errors

        for attempt in range(2):
            conn = self._connection()
            try:
                with conn.cursor() as cur:
                    result = operation(cur)
                conn.commit()
                return result
            except psycopg2.Error as e:
                lost = bool(conn.closed)
                if not lost:  # the server answered with an error: the transaction is void, not the connection
                    conn.rollback()
                if isinstance(e, psycopg2.errors.DiskFull):
                    raise CacheFullError(
                        f"the answer cache on Postgres at {self.where} could not write: {str(e).strip()}; "
                        f"the server's disk is full and the cache evicts none: free space on it"
                    ) from e
                if not lost:
                    raise
                self._conn = None
                if attempt:
                    raise CacheUnavailableError(
                        f"the answer cache on Postgres at {self.where} dropped the connection twice in a row: "
                        f"{str(e).strip()}; check that the server is up and reachable from this worker"
                    ) from e
        raise AssertionError("unreachable")

    def _connection(self):
        """This process's connection, opened (and the table made) when there is none."""
        if self._conn is not None and not self._conn.closed:
            return self._conn
        try:
            import psycopg2
        except ImportError as e:
            raise ImportError("cache_type 'postgres' needs psycopg2: pip install -e '.[cluster]'") from e
        try:
            conn = psycopg2.connect(
                self._url, connect_timeout=self.connect_timeout, application_name="benchfoundry-llm-cache"
            )
        except psycopg2.Error as e:
            raise CacheUnavailableError(
                f"the answer cache on Postgres at {self.where} could not be reached: {str(e).strip()}; "
                f"check the server, or the LLM resource's cache_url (or ${CACHE_URL_ENV})"
            ) from e
        try:
            with conn.cursor() as cur:
                # Workers that start together would otherwise race to create the table (a
                # duplicate pg_type row); the lock is held until the commit.
                cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (TABLE,))
                cur.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (key text PRIMARY KEY, value bytea NOT NULL)")
            conn.commit()
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _secrets(self) -> list[str]:
        """The URL and its password, masked wherever an error repeats them."""
        try:
            password = urlsplit(self._url).password
        except ValueError:  # an unreadable URL: masked whole, and redact() finds its userinfo
            password = None
        return [s for s in (self._url, password) if s]

    def _after_fork(self) -> None:
        # A forked child opens its own connection: the inherited one shares its socket with
        # the parent. Only the reference goes; psycopg2 closes a connection only in the
        # process that opened it, so the parent's session is left alone.
        self._lock = threading.Lock()  # a thread of the parent may have held it at the fork
        self._conn = None


def _where(url: str) -> str:
    """``user@host:port/database`` of a libpq URL or key=value string: what an error names."""
    try:
        from psycopg2.extensions import parse_dsn

        parts = parse_dsn(url)
    except Exception:  # noqa: BLE001 - unreadable or no psycopg2: say what can be said safely
        split = urlsplit(url) if "://" in url else None
        if split is None:
            return "(an unreadable cache URL)"
        parts = {"host": split.hostname, "port": split.port, "user": split.username, "dbname": split.path.lstrip("/")}
    user = f"{parts['user']}@" if parts.get("user") else ""
    return f"{user}{parts.get('host') or 'localhost'}:{parts.get('port') or 5432}/{parts.get('dbname') or ''}"


_POSTGRES_CACHES: weakref.WeakSet[PostgresCache] = weakref.WeakSet()


def _reconnect_after_fork() -> None:
    for cache in list(_POSTGRES_CACHES):
        cache._after_fork()


os.register_at_fork(after_in_child=_reconnect_after_fork)

_CACHES: dict[tuple[str, str], AnswerCache] = {}


def response_cache(cache_type: str, cache_dir: str, cache_url: str | None = None) -> AnswerCache:
    """One cache object per place and process (diskcache opens a SQLite connection, the
    Postgres cache a connection of its own). ``cache_url`` None: ``$BENCHFOUNDRY_CACHE_URL``."""
    if cache_type == "off":
        return ResponseCache(None)
    if cache_type == "disk":
        place = cache_dir
    elif cache_type == "postgres":
        place = cache_url or os.environ.get(CACHE_URL_ENV, "")
        if not place:
            raise ValueError(
                f"cache_type 'postgres' needs a connection URL: set the LLM resource's cache_url, "
                f"or {CACHE_URL_ENV} (postgresql://user:password@host:5432/database)"
            )
    else:
        raise ValueError(f"cache_type must be 'disk', 'postgres' or 'off', not {cache_type!r}")
    if (cache_type, place) not in _CACHES:
        _CACHES[cache_type, place] = ResponseCache(place) if cache_type == "disk" else PostgresCache(place)
    return _CACHES[cache_type, place]
