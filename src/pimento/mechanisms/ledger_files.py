"""The ledger's storage primitives: a SQLite connection that reports a damaged file as
:class:`pimento.errors.LedgerIntegrityError`, the owner-only files it keeps beside the database,
and the timestamp of its rows (:func:`now`).

The ledger file, the witness and the deployment file hold the custodian's audit rows and exact
private quantities: they are created with mode 0600 (:func:`create_private`, :func:`write_private`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from pimento.errors import LedgerIntegrityError

__all__ = [
    "SqliteConnection",
    "create_private",
    "damaged",
    "is_damage",
    "now",
    "write_private",
]

_T = TypeVar("_T")


def now() -> str:
    """The current UTC time as ISO text with microseconds: the time of a charge, an audit row, a file."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def damaged(name: str, exc: object) -> LedgerIntegrityError:
    """The error for the damaged (or non-SQLite) ledger file ``name``."""
    return LedgerIntegrityError(
        f"the budget ledger {name} is damaged or is not a ledger file ({exc}): releases are refused; nothing was spent",
        hint=f"restore {name} from a backup, then check it with `pimento audit verify --db DB`",
    )


def is_damage(exc: BaseException) -> bool:
    """A damaged SQLite file: sqlite3 raises plain DatabaseError (none of its subclasses) for
    SQLITE_CORRUPT ("database disk image is malformed") and SQLITE_NOTADB ("file is not a database")."""
    return type(exc) is sqlite3.DatabaseError


class _Cursor:
    """A sqlite3 cursor whose damaged-file errors, raised while rows are fetched, are LedgerIntegrityError."""

    def __init__(self, cursor: sqlite3.Cursor, name: str) -> None:
        self._cursor = cursor
        self._name = name

    def _guard(self, fetch: Callable[[], _T]) -> _T:
        try:
            return fetch()
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                raise damaged(self._name, exc) from None
            raise

    def fetchone(self) -> Any:
        return self._guard(self._cursor.fetchone)

    def fetchall(self) -> list[Any]:
        return self._guard(self._cursor.fetchall)

    def __iter__(self) -> Any:
        while True:
            row = self._guard(self._cursor.fetchone)
            if row is None:
                return
            yield row

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class SqliteConnection:
    """The ledger's sqlite3 connection: a damaged file (a malformed page, bytes that are not SQLite)
    raises :class:`LedgerIntegrityError` wherever it shows, in a statement or while its rows are
    read, instead of a bare sqlite3.DatabaseError (a 500 in the service, "a bug" in the CLI)."""

    def __init__(self, conn: sqlite3.Connection, name: str) -> None:
        self._conn = conn
        self._name = name

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    def execute(self, sql: str, params: Any = (), /) -> _Cursor:
        try:
            return _Cursor(self._conn.execute(sql, params), self._name)
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                raise damaged(self._name, exc) from None
            raise

    def close(self) -> None:
        self._conn.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def create_private(path: Path) -> None:
    """Create ``path`` empty with mode 0600 (owner only) unless it exists: the ledger (whose -wal and
    -shm files SQLite creates with the database file's mode), the witness and the deployment file
    hold the custodian's audit rows and exact private quantities."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def write_private(path: Path, text: str) -> None:
    """Write ``text`` into the new file ``path`` (mode 0600, fsynced); it must not exist."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
