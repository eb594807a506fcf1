"""DuckDB: the embedded default engine.

A read-only connection (private data) is hardened before any statement of a caller runs: no
file system access, no extension installing or autoloading, the configured memory limit and
threads, then ``lock_configuration`` so that no statement can change any of it. Read-write
connections (tests, trusted bulk loading) get the memory limit only.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import duckdb

from pimento.config import DEFAULT_MEMORY_LIMIT
from pimento.engines.base import memory_limit_bytes
from pimento.errors import DataSourceError, EngineQueryError, QueryTimeout
from pimento.schema import Catalog, Column, ForeignKey, Table, normalize_type

__all__ = ["DuckDBEngine"]


#: Serialises the configuration of new connections (see DuckDBEngine._configure).
_CONFIGURE_LOCK = threading.Lock()


class DuckDBEngine:
    """A DuckDB database file (or ``:memory:``) behind the Engine protocol."""

    name = "duckdb"
    dialect = "duckdb"

    def __init__(
        self,
        location: str,
        *,
        read_only: bool = True,
        timeout_s: float | None = None,
        threads: int | None = None,
        memory_limit: str | None = None,
    ):
        self.location = location
        self.timeout_s = timeout_s
        in_memory = location in (":memory:", "")
        if not in_memory and read_only and not os.path.exists(location):
            raise DataSourceError(f"database file not found: {location}")
        self.read_only = bool(read_only and not in_memory)
        limit = memory_limit_bytes(memory_limit or DEFAULT_MEMORY_LIMIT)
        try:
            # Settings are applied with SET, not connect(config=...): DuckDB shares one instance per
            # file within a process and refuses a second connection "with a different configuration",
            # which would break trusted code that reads the same file beside an engine.
            self._con = duckdb.connect(location or ":memory:", read_only=self.read_only)
            self._configure(limit, threads)
        except duckdb.Error as exc:
            raise DataSourceError(f"cannot open DuckDB database {location}: {_first_line(exc)}") from exc
        self._lock = threading.Lock()
        self._watchdog = _Watchdog(self._con.interrupt)

    def _configure(self, memory_limit: int, threads: int | None) -> None:
        """Memory limit and threads; on a read-only connection also the hardening, then the lock.

        Connections to one file in one process share a DuckDB instance: the check of the lock
        and the settings are one step under a process-wide lock, or two threads opening the same
        file at once would both see it unlocked and the second SET would fail.
        """
        with _CONFIGURE_LOCK:
            self._configure_unlocked(memory_limit, threads)

    def _configure_unlocked(self, memory_limit: int, threads: int | None) -> None:
        con = self._con
        locked = _setting(con, "lock_configuration")
        if locked:
            # Another engine in this process already hardened and locked this file's instance.
            if _setting(con, "enable_external_access"):
                con.close()
                raise DataSourceError(
                    f"cannot open DuckDB database {self.location}: it is already open in this process with "
                    "file system access enabled and its configuration locked"
                )
            return
        con.execute(f"SET memory_limit = '{memory_limit}B'")
        if threads:
            con.execute(f"SET threads = {int(threads)}")
        if self.read_only:
            con.execute("SET enable_external_access = false")
            con.execute("SET autoinstall_known_extensions = false")
            con.execute("SET autoload_known_extensions = false")
            con.execute("SET lock_configuration = true")

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The raw DuckDB connection (for bulk loading in trusted code such as the demo generator)."""
        return self._con

    def execute(self, sql: str, params: Sequence[Any] | None = None, *, timeout_s: float | None = None):
        from pimento.engines.base import Result

        timeout = timeout_s if timeout_s is not None else self.timeout_s
        with self._lock:
            ticket = self._watchdog.arm(timeout) if timeout is not None else None
            try:
                cursor = self._con.execute(sql, list(params) if params is not None else None)
                columns = tuple(d[0] for d in cursor.description) if cursor.description else ()
                rows = tuple(tuple(r) for r in cursor.fetchall()) if cursor.description else ()
            except duckdb.InterruptException as exc:
                fired = ticket is not None and self._watchdog.fired(ticket)
                raise QueryTimeout(
                    f"statement {'timed out after ' + str(timeout) + ' s' if fired else 'was cancelled'}"
                ) from exc
            except duckdb.Error as exc:
                text = _first_line(exc)
                if self.read_only and "read-only" in text.lower():
                    raise EngineQueryError(
                        "DuckDB", text, public=EngineQueryError.READ_ONLY_MESSAGE, hint="private data is never modified by Pimento"
                    ) from exc
                raise EngineQueryError("DuckDB", text) from exc
            finally:
                if ticket is not None:
                    self._watchdog.disarm(ticket)
        return Result(columns, rows)

    def cancel(self) -> None:
        self._con.interrupt()

    def introspect(self) -> Catalog:
        rows = self.execute(
            "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
            "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
        ).rows
        columns: dict[str, list[Column]] = {}
        for table, column, raw, nullable in rows:
            columns.setdefault(table, []).append(Column(column, normalize_type(raw), raw, nullable == "YES"))
        constraints = self.execute(
            "SELECT table_name, constraint_type, constraint_column_names, referenced_table, referenced_column_names "
            "FROM duckdb_constraints() WHERE schema_name = current_schema() "
            "AND constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY')"
        ).rows
        pks: dict[str, tuple[str, ...]] = {}
        uniques: dict[str, list[tuple[str, ...]]] = {}
        fks: list[ForeignKey] = []
        for table, kind, cols, ref_table, ref_cols in constraints:
            cols = tuple(cols)
            if kind == "PRIMARY KEY":
                pks[table] = cols
            elif kind == "UNIQUE":
                if cols not in uniques.setdefault(table, []):
                    uniques[table].append(cols)
            elif ref_table is not None:
                fk = ForeignKey(table, cols, ref_table, tuple(ref_cols))
                if fk not in fks:
                    fks.append(fk)
        # CREATE UNIQUE INDEX on plain columns is a key too (expression indexes are not).
        for table, expressions in self.execute(
            "SELECT table_name, expressions FROM duckdb_indexes() "
            "WHERE schema_name = current_schema() AND is_unique AND NOT is_primary"
        ).rows:
            known = {c.name.lower(): c.name for c in columns.get(table, [])}
            cols = tuple(known.get(e.lower(), "") for e in _index_expressions(expressions or ""))
            if cols and all(cols) and cols not in uniques.setdefault(table, []):
                uniques[table].append(cols)
        column_comments, table_comments = self._comments()
        tables = []
        for name, cols in columns.items():
            pk = pks.get(name, ())
            cols = [replace(c, nullable=c.nullable and c.name not in pk, comment=column_comments.get((name, c.name)))
                    for c in cols]
            tables.append(Table(name, tuple(cols), pk, tuple(uniques.get(name, ())), True, table_comments.get(name)))
        return Catalog(tuple(tables), tuple(fks))

    def _comments(self) -> tuple[dict[tuple[str, str], str], dict[str, str]]:
        """``COMMENT ON COLUMN`` and ``COMMENT ON TABLE``/``VIEW`` of the current schema: ``{(table, column): text}``
        and ``{table: text}`` (the database's own comments only; SQL text comments (``--``) are not stored)."""
        where = "schema_name = current_schema() AND database_name = current_database() AND comment <> ''"
        columns = {(t, c): str(text) for t, c, text in self.execute(
            f"SELECT table_name, column_name, comment FROM duckdb_columns() WHERE {where} AND NOT internal").rows}
        tables = {t: str(text) for t, text in self.execute(
            f"SELECT table_name, comment FROM duckdb_tables() WHERE {where} AND NOT internal "
            f"UNION ALL SELECT view_name, comment FROM duckdb_views() WHERE {where} AND NOT internal").rows}
        return columns, tables

    def close(self) -> None:
        self._watchdog.stop()
        self._con.close()

    def __enter__(self) -> DuckDBEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _index_expressions(text: str) -> list[str]:
    """Split ``duckdb_indexes().expressions`` (``[a, '"B c"', '(d + 1)']``) into unquoted items."""
    inner = text.strip()
    if inner.startswith("[") and inner.endswith("]"):
        inner = inner[1:-1]
    items, current, quote = [], "", ""
    for ch in inner:
        if quote:
            current += ch
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
            current += ch
        elif ch == ",":
            items.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        items.append(current.strip())
    cleaned = []
    for item in items:
        if len(item) >= 2 and item[0] == item[-1] == "'":
            item = item[1:-1].replace("''", "'")
        if len(item) >= 2 and item[0] == item[-1] == '"':
            item = item[1:-1].replace('""', '"')
        cleaned.append(item)
    return cleaned


def _setting(con: duckdb.DuckDBPyConnection, name: str) -> Any:
    """The current value of one of DuckDB's settings."""
    row = con.execute(f"SELECT current_setting('{name}')").fetchone()  # name: one of ours
    return row[0] if row else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class _Watchdog:
    """One daemon thread per engine that interrupts a statement running past its deadline.

    Arming and disarming cost a lock and a notify, instead of a new timer thread per statement
    (about 1-2 ms each, which the search's many small statements noticed).
    """

    def __init__(self, interrupt: Callable[[], None]) -> None:
        self._interrupt = interrupt
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._ticket = 0
        self._fired: int | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False

    def arm(self, seconds: float) -> int:
        with self._cond:
            self._ticket += 1
            self._deadline = time.monotonic() + seconds
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="pimento-duckdb-watchdog", daemon=True)
                self._thread.start()
            self._cond.notify()
            return self._ticket

    def disarm(self, ticket: int) -> None:
        with self._cond:
            if self._ticket == ticket:
                self._deadline = None

    def fired(self, ticket: int) -> bool:
        with self._cond:
            return self._fired == ticket

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._stopped:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                self._fired = self._ticket
                self._deadline = None
                self._interrupt()
