"""A fresh PostgreSQL database for a ledger test (importable: tests/ is on sys.path). Skips
without PIMENTO_PG_DSN (fails under CI=true), like every PostgreSQL test (pg_support.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from pg_support import fresh_database


@contextlib.contextmanager
def fresh_ledger_url() -> Iterator[str]:
    """The URL of a new, empty database for one test's ledger; dropped afterwards."""
    with fresh_database("pimento_ledger") as dsn:
        from psycopg.conninfo import conninfo_to_dict

        params = conninfo_to_dict(dsn)
        user = params.get("user", "")
        host = params.get("host", "localhost")
        port = params.get("port", "5432")
        password = f":{params['password']}" if params.get("password") else ""
        yield f"postgresql://{user}{password}@{host}:{port}/{params['dbname']}"


#: the ledger backends a ledger test runs on (``@pytest.fixture(params=LEDGER_BACKENDS)``)
LEDGER_BACKENDS = ("sqlite", "postgresql")


@contextlib.contextmanager
def ledger_backend(name: str) -> Iterator[str | None]:
    """The ledger URL for a test on backend ``name``: None for SQLite (the file beside the
    database), else a :func:`fresh_ledger_url` (skipped without PIMENTO_PG_DSN)."""
    if name == "sqlite":
        yield None
        return
    with fresh_ledger_url() as url:
        yield url
