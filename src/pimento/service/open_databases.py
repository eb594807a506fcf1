"""The read-only databases a running service keeps open between requests (issue 28 item 3).

Opening the private database is most of a request's cost when the answer is cached
(:func:`pimento.engines.database.load_database`: the settings, the engine's configuration, the schema
introspection, the declared-constraint check; docs/benchmarks.md, "Several workers, one ledger"). A
:class:`DatabasePool` keeps the database a request thread opened for that thread's next request: a
connection is only ever used by the thread that opened it (DuckDB documents a connection as not
thread-safe), one request at a time, and is closed once its thread has ended (the server's worker
threads come and go) or at shutdown.

Nothing changes in what is read or when: the pool only opens and closes connections; the request
(:class:`pimento.release.Session`) still charges before any private read. Before every loan the
caller checks the database file (:meth:`pimento.engines.database.FileIdentity.check`: a replaced
file is refused, never answered from). The settings a database was opened under are those of the
``pimento.toml`` at that time: when that file changes, the idle databases are closed and the next
requests open the database anew under the new settings (as when every request opened it).
:meth:`DatabasePool.close` closes the idle ones and makes every lent one close when its request ends
(``pimento serve`` at shutdown, :meth:`pimento.service.deployment.Deployment.close`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pimento.config import CONFIG_FILE_NAME
from pimento.engines.database import Database, FileStat, file_stat, load_database

__all__ = ["MAX_IDLE", "DatabasePool", "settings_file"]

#: The most open databases kept between requests (one per request thread: anyio's default limit is 40
#: threads); a request on a thread beyond them opens its own and closes it when it ends.
MAX_IDLE = 40

_Stat = FileStat | None


def settings_file(db: str, location: str) -> Path | None:
    """Where the ``pimento.toml`` that governs ``db`` (opened at ``location``) is, existing or not; None for a bare DSN."""
    given = Path(db)
    if given.name == CONFIG_FILE_NAME:
        return given
    if "://" in db:
        return None
    if given.is_dir():
        return given / CONFIG_FILE_NAME
    return Path(location).parent / CONFIG_FILE_NAME


class DatabasePool:
    """Open read-only :class:`~pimento.engines.database.Database` s of ``db``, one per request thread, lent to its requests."""

    def __init__(self, db: str, location: str, *, max_idle: int = MAX_IDLE) -> None:
        self.db = db
        self.max_idle = max_idle
        self._settings_file = settings_file(db, location)
        self._settings_seen = file_stat(self._settings_file)
        #: per thread (its ident): the thread and the database it opened, idle between its requests
        self._idle: dict[int, tuple[threading.Thread, Database]] = {}
        self._lock = threading.Lock()
        self._generation = 0
        self._closed = False

    @contextmanager
    def lend(self) -> Iterator[Database]:
        """An open read-only database for the caller's request alone, taken back (or closed) when it ends."""
        database, generation = self._take()
        try:
            yield database
        finally:
            self._give_back(database, generation)

    @property
    def idle(self) -> int:
        """How many open databases wait for a request."""
        with self._lock:
            return len(self._idle)

    def close(self) -> None:
        """Close the idle databases; each lent one closes when its request ends; later loans open and close their own."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, {}
        for _thread, database in idle.values():
            database.close()

    def _take(self) -> tuple[Database, int]:
        me = threading.current_thread()
        with self._lock:
            seen = file_stat(self._settings_file)
            if seen != self._settings_seen:  # pimento.toml changed: open anew under the settings as they are now
                self._settings_seen = seen
                self._generation += 1
                stale = list(self._idle.values())
                self._idle = {}
            else:  # the databases of threads that ended (no request can use them any more)
                stale = [entry for entry in self._idle.values() if not entry[0].is_alive()]
                for thread, _database in stale:
                    del self._idle[thread.ident or 0]
            generation = self._generation
            mine = self._idle.pop(me.ident or 0, None)
        for _thread, old in stale:
            old.close()
        if mine is not None and mine[0] is me:
            return mine[1], generation
        if mine is not None:  # another thread's, under a reused ident: never lent across threads
            mine[1].close()
        return load_database(self.db, read_only=True), generation

    def _give_back(self, database: Database, generation: int) -> None:
        me = threading.current_thread()
        with self._lock:
            if not self._closed and generation == self._generation and len(self._idle) < self.max_idle:
                self._idle[me.ident or 0] = (me, database)
                return
        database.close()
