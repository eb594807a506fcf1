"""SQLite (standard library ``sqlite3``) behind the Engine protocol.

Private data is opened read-only through a ``file:...?mode=ro`` URI with ``PRAGMA query_only``
as a second lock, and hardened: extension loading off, no ``ATTACH`` (limit 0 and the
authorizer), only the introspection pragmas, no file or extension functions, and a heap limit
(``PRAGMA hard_heap_limit``, which SQLite keeps per process: the lowest limit asked for applies). The per-statement timeout is a progress handler that aborts the statement
once its deadline passes; :meth:`SQLiteEngine.cancel` calls ``sqlite3_interrupt`` and is safe
to call from another thread.

Introspection reads ``PRAGMA table_info``, ``index_list``/``index_info`` and
``foreign_key_list`` and smooths over quirks of real-world files (Spider's among them): a
foreign key that names only the referenced table means that table's primary key, and names
whose case differs from the table definition are resolved to the catalog's own spelling.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pimento.config import DEFAULT_MEMORY_LIMIT
from pimento.engines.base import memory_limit_bytes
from pimento.errors import DataSourceError, EngineQueryError, QueryTimeout
from pimento.schema import Catalog, Column, ForeignKey, Table, normalize_type
from pimento.sql.quote import quote_identifier

__all__ = ["SQLiteEngine"]

#: SQLite virtual-machine instructions between two checks of the deadline.
_PROGRESS_STEPS = 10_000
#: Pragmas a read-only connection may run (those :meth:`SQLiteEngine.introspect` reads).
_READ_PRAGMAS = frozenset({"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"})
#: Functions refused on a read-only connection (file access and extensions, where compiled in).
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})


class SQLiteEngine:
    """A SQLite database file behind the Engine protocol (``?`` placeholders, as SQLite's own)."""

    name = "sqlite"
    dialect = "sqlite"

    def __init__(
        self,
        location: str,
        *,
        read_only: bool = True,
        timeout_s: float | None = None,
        memory_limit: str | None = None,
        threads: int | None = None,  # noqa: ARG002 - SQLite runs one thread per statement
    ):
        self.location = str(location)
        self.timeout_s = timeout_s
        in_memory = self.location in (":memory:", "")
        self.read_only = bool(read_only and not in_memory)
        #: Foreign keys the file declares but that point at no existing table or column.
        self.skipped_foreign_keys: list[str] = []
        if in_memory:
            target, uri = ":memory:", False
        else:
            path = Path(self.location)
            if self.read_only and not path.is_file():
                raise DataSourceError(
                    f"database file not found: {self.location}",
                    hint="check the path" if not path.exists() else "this is not a file",
                )
            mode = "ro" if self.read_only else "rwc"
            target, uri = f"file:{quote(os.path.abspath(path))}?mode={mode}", True
        try:
            self._con = sqlite3.connect(target, uri=uri, check_same_thread=False, isolation_level=None)
            if self.read_only:
                self._con.execute("PRAGMA query_only = ON")
            # Fails on a file that is not a SQLite database.
            self._con.execute("SELECT count(*) FROM sqlite_master").fetchall()
            if self.read_only:
                self._harden(memory_limit_bytes(memory_limit or DEFAULT_MEMORY_LIMIT))
        except sqlite3.Error as exc:
            raise DataSourceError(f"cannot open SQLite database {self.location}: {_first_line(exc)}") from exc
        self._lock = threading.Lock()
        self._deadline: float | None = None
        self._timed_out = False
        self._con.set_progress_handler(self._progress, _PROGRESS_STEPS)

    def _harden(self, heap_limit: int) -> None:
        con = self._con
        if hasattr(con, "enable_load_extension"):
            con.enable_load_extension(False)
        if hasattr(con, "setlimit"):  # Python 3.11+; on 3.10 the authorizer below alone refuses ATTACH
            con.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        current = con.execute("PRAGMA hard_heap_limit").fetchone()[0]
        if not current or current > heap_limit:
            con.execute(f"PRAGMA hard_heap_limit = {int(heap_limit)}")
        con.set_authorizer(_authorize)

    def _progress(self) -> int:
        if self._deadline is not None and time.monotonic() > self._deadline:
            self._timed_out = True
            return 1  # non-zero aborts the statement with "interrupted"
        return 0

    @property
    def connection(self) -> sqlite3.Connection:
        """The raw sqlite3 connection (for trusted bulk loading)."""
        return self._con

    def execute(self, sql: str, params: Sequence[Any] | None = None, *, timeout_s: float | None = None):
        """Run one statement with ``?`` placeholders bound to ``params``."""
        from pimento.engines.base import Result

        timeout = timeout_s if timeout_s is not None else self.timeout_s
        with self._lock:
            self._timed_out = False
            self._deadline = time.monotonic() + timeout if timeout is not None else None
            try:
                cursor = self._con.execute(sql, tuple(params) if params is not None else ())
                columns = tuple(d[0] for d in cursor.description) if cursor.description else ()
                rows = tuple(tuple(r) for r in cursor.fetchall()) if cursor.description else ()
            except sqlite3.OperationalError as exc:
                text = _first_line(exc)
                if "interrupted" in text.lower():
                    what = f"timed out after {timeout} s" if self._timed_out else "was cancelled"
                    raise QueryTimeout(
                        f"SQLite: statement {what}",
                        hint="raise database.timeout_s in pimento.toml" if self._timed_out else None,
                    ) from exc
                raise _engine_error(text, self.read_only) from exc
            except sqlite3.Error as exc:
                raise _engine_error(_first_line(exc), self.read_only) from exc
            finally:
                self._deadline = None
        return Result(columns, rows)

    def cancel(self) -> None:
        """Interrupt the running statement (no-op when none runs); thread-safe."""
        self._con.interrupt()

    def introspect(self) -> Catalog:
        """Tables, columns, NOT NULL, primary and unique keys, and foreign keys of the file."""
        names = [
            r[0]
            for r in self.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
                "ORDER BY name"
            ).rows
        ]
        by_lower = {n.lower(): n for n in names}
        infos = {n: self.execute(f"PRAGMA table_info({_quote(n)})").rows for n in names}
        tables: list[Table] = []
        pks: dict[str, tuple[str, ...]] = {}
        for name in names:
            info = infos[name]
            pk = tuple(r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5]))
            pks[name] = pk
            rowid_alias = len(pk) == 1 and any(r[1] == pk[0] and (r[2] or "").upper() == "INTEGER" for r in info)
            columns = tuple(
                Column(
                    r[1],
                    normalize_type(r[2] or ""),
                    r[2] or "",
                    nullable=not (r[3] or (rowid_alias and r[1] == pk[0])),
                )
                for r in info
            )
            tables.append(Table(name, columns, pk, self._unique_keys(name, pk), True))
        columns_of = {n: {r[1].lower(): r[1] for r in infos[n]} for n in names}
        fks: list[ForeignKey] = []
        for name in names:
            groups: dict[int, list[tuple[Any, ...]]] = {}
            for row in self.execute(f"PRAGMA foreign_key_list({_quote(name)})").rows:
                groups.setdefault(row[0], []).append(row)
            for _id, rows in sorted(groups.items()):
                rows.sort(key=lambda r: r[1])
                fk = self._resolve_fk(name, rows, by_lower, columns_of, pks)
                if fk is not None and fk not in fks:
                    fks.append(fk)
        return Catalog(tuple(tables), tuple(fks))

    def _unique_keys(self, table: str, pk: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
        keys: list[tuple[str, ...]] = []
        for _seq, index, unique, origin, partial in self.execute(f"PRAGMA index_list({_quote(table)})").rows:
            if not unique or partial or origin == "pk":
                continue
            info = sorted(self.execute(f"PRAGMA index_info({_quote(index)})").rows)
            cols = tuple(r[2] for r in info)
            if not cols or any(c is None for c in cols):  # expression index
                continue
            if {c.lower() for c in cols} == {c.lower() for c in pk}:
                continue
            if cols not in keys:
                keys.append(cols)
        return tuple(keys)

    def _resolve_fk(
        self,
        table: str,
        rows: list[tuple[Any, ...]],
        by_lower: dict[str, str],
        columns_of: dict[str, dict[str, str]],
        pks: dict[str, tuple[str, ...]],
    ) -> ForeignKey | None:
        ref = by_lower.get(str(rows[0][2]).lower())
        if ref is None:
            self.skipped_foreign_keys.append(f"{table} -> {rows[0][2]}: no such table")
            return None
        own = [columns_of[table].get(str(r[3]).lower()) for r in rows]
        if any(r[4] is None for r in rows):
            # "REFERENCES parent" without columns: the parent's primary key.
            targets: list[str | None] = list(pks[ref])
        else:
            targets = [columns_of[ref].get(str(r[4]).lower()) for r in rows]
        if None in own or None in targets or len(own) != len(targets) or not own:
            self.skipped_foreign_keys.append(f"{table} -> {ref}: columns do not resolve")
            return None
        return ForeignKey(table, tuple(c for c in own if c is not None), ref, tuple(c for c in targets if c is not None))

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> SQLiteEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _quote(name: str) -> str:
    return quote_identifier(name, "sqlite")


def _authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _source: str | None) -> int:
    """The authorizer of a read-only connection: no ATTACH, only reading pragmas, no file functions."""
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA:
        return sqlite3.SQLITE_OK if (arg1 or "").lower() in _READ_PRAGMAS else sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _engine_error(text: str, read_only: bool) -> EngineQueryError:
    lowered = text.lower()
    if read_only and ("readonly" in lowered or "read-only" in lowered or "query_only" in lowered or "not authorized" in lowered):
        return EngineQueryError(
            "SQLite", text, public=EngineQueryError.READ_ONLY_MESSAGE, hint="private data is never modified by Pimento"
        )
    return EngineQueryError("SQLite", text)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
