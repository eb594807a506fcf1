"""The service's state shared by every process that serves one deployment (``pimento serve --workers
N``, several machines on one PostgreSQL ledger): token buckets here, web sign-in sessions in
:mod:`pimento.service.shared_sessions`.

The in-process :class:`pimento.service.limits.RateLimiter` keeps its buckets in memory: N workers
would give a key N times its rate. :class:`SharedRateLimiter` keeps each bucket as one row
(``scope``, ``name``, ``tokens``, ``stamp``) and takes a token atomically, so two processes never both
spend the last token: on SQLite in one statement that SQLite runs under its write lock
(:meth:`SqliteState.take`, issue 28, PERF7), on PostgreSQL in one transaction that reads and rewrites the
row while no other process can (:meth:`StateStore.run`, :func:`take_in`). The arithmetic is :func:`refill_and_take`, the same as
:class:`~pimento.service.limits.TokenBucket`'s: ``rate`` tokens per second banked up to ``burst``;
only the clock differs (wall time, shared by the processes, instead of each process's monotonic
clock; a clock that steps back refills nothing).

Where the state lives (:func:`state_store_for`):

- a SQLite ledger: a file of its own beside it, ``<ledger><STATE_SUFFIX>`` (mode 0600, WAL,
  ``synchronous = OFF``). Not the ledger file: a bucket is written on every request, and on the
  ledger file that write would take the lock every charge needs and an fsync (``synchronous =
  FULL``); the state is volatile (losing it in a crash refills the buckets and signs the web
  page's users out, nothing more).
- a PostgreSQL ledger (``[ledger] url``): the tables ``pimento_rate_buckets`` and
  ``pimento_web_sessions`` in the same database, created on first use, so that processes on several
  machines share them; a transaction-scoped advisory lock of their own (not the ledger's) orders
  the writes.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from pimento.errors import DataSourceError

__all__ = ["BUCKETS_TABLE", "SESSIONS_TABLE", "STATE_SUFFIX", "PgState", "Query", "SharedRateLimiter", "SqliteState", "StateStore",
           "refill_and_take", "state_store_for", "take", "take_in"]

#: the table of buckets (both backends)
BUCKETS_TABLE = "pimento_rate_buckets"
#: the table of web sign-in sessions (both backends)
SESSIONS_TABLE = "pimento_web_sessions"
#: the SQLite file of the shared state beside a SQLite ledger: ``<ledger file><STATE_SUFFIX>``
STATE_SUFFIX = ".service-state.sqlite"

#: the tables of the shared state (both dialects): the buckets, and the web page's sign-in sessions
#: (:mod:`pimento.service.shared_sessions`; a session is stored under the SHA-256 of its id). ``took``: whether the
#: bucket's last take was granted (:data:`_TAKE_SQL` returns it; added to older SQLite files, :meth:`SqliteState._conn`)
_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {BUCKETS_TABLE} (scope TEXT NOT NULL, name TEXT NOT NULL, "
    "tokens DOUBLE PRECISION NOT NULL, stamp DOUBLE PRECISION NOT NULL, took INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (scope, name))",
    f"CREATE TABLE IF NOT EXISTS {SESSIONS_TABLE} (sid_sha256 TEXT PRIMARY KEY, role TEXT NOT NULL, key_id TEXT, "
    "csrf TEXT NOT NULL, expires DOUBLE PRECISION NOT NULL)",
)
#: the advisory-lock key of the shared state on PostgreSQL (the ledger's is another)
STATE_LOCK_KEY = 0x706D7374617465  # "pmstate"


def refill_and_take(tokens: float, stamp: float, now: float, *, rate: float, burst: float) -> tuple[float, float, float]:
    """One take from a bucket holding ``tokens`` at ``stamp``: (tokens after, new stamp, wait).

    ``wait`` is 0.0 when a token was taken, else the seconds until one is available. What accrued
    while the bucket idled is banked up to ``burst``; an elapsed time below zero (another machine's
    clock ahead of this one) counts as zero.

    >>> refill_and_take(0.0, 10.0, 11.0, rate=2.0, burst=20)
    (1.0, 11.0, 0.0)
    >>> refill_and_take(0.5, 10.0, 10.0, rate=2.0, burst=20)
    (0.5, 10.0, 0.25)
    """
    tokens = min(float(burst), tokens + max(0.0, now - stamp) * rate)
    stamp = max(stamp, now)
    if tokens >= 1:
        return tokens - 1, stamp, 0.0
    return tokens, stamp, (1 - tokens) / rate if rate > 0 else float("inf")


#: The refill of a bucket row (its ``tokens`` at ``stamp``) at ``:now``: :func:`refill_and_take`'s first line, in the
#: same floating-point operations in the same order (so the same result to the bit).
_REFILLED = "min(:burst, tokens + max(0.0, :now - stamp) * :rate)"
#: One take from a SQLite bucket in one statement (:meth:`SqliteState.take`): :func:`refill_and_take` on the row as
#: it is (a new bucket starts full: its row is :func:`refill_and_take` of ``burst`` at ``now``, computed by the
#: caller), the write lock held only while SQLite runs it, in C. ``RETURNING`` gives the tokens after and whether
#: this take was granted (``UPDATE``'s ``SET`` reads the row as it was).
_TAKE_SQL = (
    f"INSERT INTO {BUCKETS_TABLE} (scope, name, tokens, stamp, took) VALUES (:scope, :name, :tokens, :now, :took) "
    f"ON CONFLICT (scope, name) DO UPDATE SET tokens = CASE WHEN {_REFILLED} >= 1 THEN {_REFILLED} - 1 ELSE {_REFILLED} END, "
    f"took = ({_REFILLED} >= 1), stamp = max(stamp, :now) RETURNING tokens, took"
)
#: ``RETURNING`` came with SQLite 3.35: before it, a take is the transaction of :func:`take`.
_ONE_STATEMENT = sqlite3.sqlite_version_info >= (3, 35, 0)

Query = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]
_T = TypeVar("_T")


class StateStore(Protocol):
    """The service's state shared by its processes: :meth:`run` runs ``body`` in one transaction that
    excludes every other :meth:`run` on the same store (any process, any machine); :meth:`take` takes a
    token from a bucket (:func:`take`, or its equal in one statement)."""

    def run(self, body: Callable[[Query], _T]) -> _T: ...

    def take(self, scope: str, name: str, *, rate: float, burst: float) -> float: ...


#: One lock per state file in this process (:meth:`SqliteState.run`), by resolved path.
_PROCESS_LOCKS: dict[str, threading.Lock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()


def _process_lock(path: Path) -> threading.Lock:
    """The lock this process's threads take before writing the state file at ``path``."""
    name = str(path.resolve())
    with _PROCESS_LOCKS_GUARD:
        return _PROCESS_LOCKS.setdefault(name, threading.Lock())


class SqliteState:
    """The state in a SQLite file (mode 0600; one connection per thread; ``BEGIN IMMEDIATE`` serializes).

    A process's threads queue on one lock per file (:func:`_process_lock`) before ``BEGIN IMMEDIATE``: a
    thread then waits only as long as the holder's transaction, instead of SQLite's busy handler, which
    polls the file lock with sleeps growing to 100 ms (every request takes a token here, so under load
    that polling was a tail of the cheapest requests). Other processes still meet SQLite's lock."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._lock = _process_lock(self.path)
        self._conn()  # create the file and its tables now: a problem is reported at start-up

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                if not self.path.exists():
                    self.path.touch(mode=0o600)
                conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None, check_same_thread=False)
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = OFF")
                for statement in _SCHEMA:
                    conn.execute(statement)
                _add_took(conn)
            except (sqlite3.Error, OSError) as exc:
                raise DataSourceError(f"cannot open the service's state file {self.path}: {exc}",
                                      hint="it lives beside the ledger; the service needs to write there") from None
            self._local.conn = conn
        return conn

    def take(self, scope: str, name: str, *, rate: float, burst: float) -> float:
        """:func:`take` in one statement (:data:`_TAKE_SQL`; the transaction of :func:`take` before SQLite 3.35): 0.0, or
        the seconds until a token is available."""
        if not _ONE_STATEMENT:
            return take_in(self, scope, name, rate=rate, burst=burst)
        now = time.time()
        tokens, _stamp, wait = refill_and_take(float(burst), now, now, rate=rate, burst=burst)  # a new bucket's row
        params = {"scope": scope, "name": name, "tokens": tokens, "now": now, "took": int(wait == 0.0), "rate": float(rate), "burst": float(burst)}
        conn = self._conn()
        with self._lock:
            (left, took), = conn.execute(_TAKE_SQL, params).fetchall()
        if took:
            return 0.0
        return (1 - float(left)) / rate if rate > 0 else float("inf")

    def run(self, body: Callable[[Query], _T]) -> _T:
        conn = self._conn()
        with self._lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = body(lambda sql, params: conn.execute(sql, params).fetchall())
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return result


class PgState:
    """The state in the PostgreSQL database of the ledger (one connection per thread; a transaction-scoped
    advisory lock, not the ledger's, serializes)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._local = threading.local()
        self._conn()

    def _conn(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            import psycopg

            from pimento.mechanisms.ledger_postgres import redact

            try:
                conn = psycopg.connect(self.url, autocommit=True, connect_timeout=30)
                for statement in _SCHEMA:
                    conn.execute(statement)
            except psycopg.Error as exc:
                raise DataSourceError(f"cannot use the service's state tables on {redact(self.url)}: {' '.join(str(exc).split())[:200]}") from None
            self._local.conn = conn
        return conn

    def run(self, body: Callable[[Query], _T]) -> _T:
        conn = self._conn()

        def query(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            cursor = conn.execute(sql.replace("?", "%s"), params)
            return cursor.fetchall() if cursor.description is not None else []

        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (STATE_LOCK_KEY,))
            return body(query)

    def take(self, scope: str, name: str, *, rate: float, burst: float) -> float:
        """:func:`take`, in one transaction under the state's advisory lock."""
        return take_in(self, scope, name, rate=rate, burst=burst)


def _add_took(conn: sqlite3.Connection) -> None:
    """Give a buckets table made before ``took`` the column (another process may add it at the same time)."""
    columns = {str(row[1]) for row in conn.execute(f"PRAGMA table_info({BUCKETS_TABLE})").fetchall()}
    if "took" not in columns:
        try:
            conn.execute(f"ALTER TABLE {BUCKETS_TABLE} ADD COLUMN took INTEGER NOT NULL DEFAULT 0")
        except sqlite3.OperationalError as exc:
            if "duplicate column" not in str(exc):
                raise


def state_store_for(ledger_url: str | None, ledger_file: str | Path | None) -> StateStore:
    """The store shared by every process of a deployment: the PostgreSQL ledger's database, else
    the file ``<ledger><STATE_SUFFIX>`` beside the SQLite ledger."""
    if ledger_url:
        return PgState(ledger_url)
    if ledger_file is None:
        raise DataSourceError("no ledger to keep the service's shared state beside")
    return SqliteState(f"{ledger_file}{STATE_SUFFIX}")


def take(store: StateStore, scope: str, name: str, *, rate: float, burst: float) -> float:
    """Take a token from the bucket ``(scope, name)`` in ``store``: 0.0, or the seconds until one is available."""
    return store.take(scope, name, rate=rate, burst=burst)


def take_in(store: StateStore, scope: str, name: str, *, rate: float, burst: float) -> float:
    """:func:`take` as one transaction of ``store`` (:meth:`StateStore.run`): read the row, :func:`refill_and_take`, write it."""

    def body(query: Query) -> float:
        rows = query(f"SELECT tokens, stamp FROM {BUCKETS_TABLE} WHERE scope = ? AND name = ?", (scope, name))
        now = time.time()
        held, since = (float(rows[0][0]), float(rows[0][1])) if rows else (float(burst), now)
        tokens, stamp, wait = refill_and_take(held, since, now, rate=rate, burst=burst)
        query(f"INSERT INTO {BUCKETS_TABLE} (scope, name, tokens, stamp) VALUES (?, ?, ?, ?) "
              "ON CONFLICT (scope, name) DO UPDATE SET tokens = excluded.tokens, stamp = excluded.stamp", (scope, name, tokens, stamp))
        return wait

    return store.run(body)


class SharedRateLimiter:
    """One shared bucket per name under ``scope`` (``"key"``: a key id; ``"sign-in"``: a client address);
    the same interface as :class:`pimento.service.limits.RateLimiter`."""

    def __init__(self, store: StateStore, scope: str, rate: float, burst: int) -> None:
        self.store, self.scope, self.rate, self.burst = store, scope, float(rate), int(burst)
        self._lock = threading.Lock()  # one take at a time per process: the threads do not queue on the file lock

    def take(self, name: str) -> float:
        """Take a token from ``name``'s bucket: 0.0, or the seconds until one is available."""
        with self._lock:
            return take(self.store, self.scope, name, rate=self.rate, burst=self.burst)
