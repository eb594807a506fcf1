"""The PostgreSQL backend of the budget ledger (``[ledger] url = "postgresql://..."``).

For a deployment served by several processes or machines: they share one ledger on a server.
:class:`pimento.mechanisms.ledger.Ledger` runs the same statements on both backends; this module
gives it a connection with the sqlite3 surface the ledger uses (``execute`` with ``?``
placeholders returning a cursor, ``in_transaction``, ``close``) and the schema in PostgreSQL's
dialect. What differs:

- ``BEGIN IMMEDIATE`` (SQLite: take the write lock now) becomes ``BEGIN`` followed by a
  transaction-scoped advisory lock, so that writers are serialized exactly as on SQLite: a check
  of the caps and its charge are one critical section across every process and machine. Reads
  in READ COMMITTED see what the previous lock holder committed.
- append-only is enforced by triggers that raise (a PL/pgSQL function).
- there is no witness file (several machines share the ledger; a file on one of them could not
  witness the others' charges): the server's own durability and backups stand in for it, and
  the chains, the head rows and ``pimento audit verify`` work as on SQLite.

Errors of the driver are raised as :class:`LedgerBackendError`, a ``sqlite3.OperationalError``,
so that the ledger's error handling is one code path.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from pimento.mechanisms.ledger_schema import audit_tables, ledger_tables

__all__ = ["LOCK_KEY", "PG_SCHEMA", "LedgerBackendError", "PgConnection", "is_postgres_url", "redact"]

#: The advisory-lock key every ledger writer takes (one ledger per PostgreSQL database).
LOCK_KEY = 0x70696D656E746F  # "pimento"

PG_SCHEMA = ledger_tables("postgres") + audit_tables("postgres") + """
CREATE OR REPLACE FUNCTION pimento_append_only() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION '% is append-only', TG_TABLE_NAME; END $$ LANGUAGE plpgsql;
DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'charges_append_only' AND tgrelid = 'charges'::regclass) THEN CREATE TRIGGER charges_append_only BEFORE UPDATE OR DELETE ON charges FOR EACH ROW EXECUTE FUNCTION pimento_append_only(); END IF; END $$;
DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'audit_append_only' AND tgrelid = 'audit'::regclass) THEN CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit FOR EACH ROW EXECUTE FUNCTION pimento_append_only(); END IF; END $$;
"""


class LedgerBackendError(sqlite3.OperationalError):
    """A PostgreSQL error of the ledger (raised as sqlite3's, so the ledger handles both alike)."""


def is_postgres_url(location: object) -> bool:
    return str(location).startswith(("postgresql://", "postgres://"))


def redact(url: str) -> str:
    """The URL without its credentials (for messages)."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.rsplit('@', 1)[-1]}"


_PLACEHOLDER = re.compile(r"\?")


class PgConnection:
    """A psycopg connection (autocommit: transactions are the ledger's explicit BEGIN/COMMIT) with
    the sqlite3 surface the ledger uses."""

    def __init__(self, url: str, *, connect_timeout_s: float = 30.0) -> None:
        from pimento.extras import require_extra

        psycopg = require_extra("psycopg", "postgres", "a PostgreSQL ledger")
        self._psycopg = psycopg
        try:
            self._conn = psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(connect_timeout_s)))
        except psycopg.Error as exc:
            raise LedgerBackendError(f"cannot connect: {' '.join(str(exc).split())[:200]}") from None

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self._conn.info.transaction_status != TransactionStatus.IDLE

    def execute(self, sql: str, params: tuple[Any, ...] | list[Any] | None = None) -> Any:
        try:
            if sql.strip().upper() == "BEGIN IMMEDIATE":
                self._conn.execute("BEGIN")
                return self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            if params:
                return self._conn.execute(_PLACEHOLDER.sub("%s", sql.replace("%", "%%")), tuple(params))
            return self._conn.execute(sql)
        except self._psycopg.Error as exc:
            raise LedgerBackendError(" ".join(str(exc).split())[:300]) from None

    def close(self) -> None:
        self._conn.close()

    def __del__(self) -> None:  # a Ledger left open (as sqlite3 allows) closes its server connection quietly
        conn = getattr(self, "_conn", None)
        if conn is not None and not conn.closed:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - nothing to do at interpreter teardown
                pass
