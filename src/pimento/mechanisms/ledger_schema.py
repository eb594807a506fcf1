"""The tables of the budget ledger, written once for both of its backends (SQLite and PostgreSQL).

:mod:`.ledger` runs the same statements on either backend, so the two schemas must have the same
tables and columns; only the column types and the append-only triggers are said differently.
:func:`ledger_tables` and :func:`audit_tables` give the tables in one dialect,
:func:`sqlite_append_only` the SQLite triggers that refuse UPDATE and DELETE on a table
(PostgreSQL's are in :mod:`.ledger_postgres`). :data:`FORMAT` is the ledger file format this
code writes, :data:`SQLITE_LEDGER_SCHEMA` the ledger's own tables on SQLite.
"""

from __future__ import annotations

__all__ = ["FORMAT", "SQLITE_LEDGER_SCHEMA", "audit_tables", "ledger_tables", "sqlite_append_only"]

#: The ledger file format this code writes (1: running totals in a ``totals`` table, no chain).
FORMAT = "2"

#: the column types that differ: a charge id the database assigns, a 64-bit integer, a float
_TYPES = {
    "sqlite": {"charge_key": "INTEGER PRIMARY KEY AUTOINCREMENT", "int": "INTEGER", "real": "REAL"},
    "postgres": {"charge_key": "BIGINT PRIMARY KEY", "int": "BIGINT", "real": "DOUBLE PRECISION"},
}

_LEDGER_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS charges (
    id {charge_key},
    time TEXT NOT NULL,
    database TEXT NOT NULL,
    analyst TEXT NOT NULL,
    kind TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    delta TEXT NOT NULL,
    request_key TEXT,
    note TEXT,
    prev_hash TEXT NOT NULL DEFAULT '',
    hash TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS charges_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    charge_id {int} NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS pending (
    charge_id {int} PRIMARY KEY,
    request_key TEXT,
    started {real} NOT NULL,
    owner TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS pending_key ON pending (request_key);
CREATE TABLE IF NOT EXISTS answers (
    request_key TEXT PRIMARY KEY,
    charge_id {int} NOT NULL,
    time TEXT NOT NULL,
    answer TEXT NOT NULL
);
"""

_AUDIT_TABLES = """
CREATE TABLE IF NOT EXISTS audit (
    seq {int} PRIMARY KEY,
    row TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    charge_id {int}
);
CREATE INDEX IF NOT EXISTS audit_charge ON audit (charge_id);
CREATE TABLE IF NOT EXISTS audit_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq {int} NOT NULL,
    hash TEXT NOT NULL
);
"""


def ledger_tables(dialect: str) -> str:
    """``meta``, ``charges``, ``charges_head``, ``pending`` and ``answers`` in ``dialect`` (sqlite, postgres).

    >>> "id BIGINT PRIMARY KEY," in ledger_tables("postgres")
    True
    """
    return _LEDGER_TABLES.format(**_TYPES[dialect])


def audit_tables(dialect: str) -> str:
    """``audit`` and ``audit_head`` in ``dialect`` (sqlite, postgres)."""
    return _AUDIT_TABLES.format(**_TYPES[dialect])


def sqlite_append_only(table: str, what: str) -> str:
    """SQLite triggers that abort any UPDATE or DELETE on ``table`` with "<what> append-only"."""
    return "".join(
        f"CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} BEFORE {op} ON {table}\n"
        f"BEGIN SELECT RAISE(ABORT, '{what} append-only'); END;\n"
        for op in ("UPDATE", "DELETE")
    )


#: The ledger's tables on SQLite with the triggers that keep ``charges`` append-only (the audit
#: log's tables are :data:`pimento.mechanisms.audit.SCHEMA`).
SQLITE_LEDGER_SCHEMA = ledger_tables("sqlite") + sqlite_append_only("charges", "charges are")
