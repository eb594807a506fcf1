"""A fresh PostgreSQL database for a ledger test (importable: tests/ is on sys.path). Skips
without PIMENTO_PG_DSN (fails under CI=true), like every PostgreSQL test (pg_support.py)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

from pg_support import admin_dsn, with_dbname


@contextlib.contextmanager
def fresh_ledger_url() -> Iterator[str]:
    """The URL of a new, empty database for one test's ledger; dropped afterwards."""
    import psycopg

    admin = admin_dsn()
    name = f"pimento_ledger_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        from psycopg.conninfo import conninfo_to_dict

        params = conninfo_to_dict(with_dbname(admin, name))
        user = params.get("user", "")
        host = params.get("host", "localhost")
        port = params.get("port", "5432")
        password = f":{params['password']}" if params.get("password") else ""
        yield f"postgresql://{user}{password}@{host}:{port}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
