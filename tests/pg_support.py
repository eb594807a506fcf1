"""PostgreSQL helpers shared by the tests that need a server (importable: tests/ is on sys.path
because tests/conftest.py lives there and tests/ is not a package).

``PIMENTO_PG_DSN`` is a superuser DSN to a throwaway server; each test creates and drops its own
database beside it. Without it PostgreSQL tests skip, except under ``CI=true`` where a missing
server is a failure, so that CI really runs them.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

import pytest


def admin_dsn() -> str:
    """The superuser DSN, or skip (fail under CI=true) when it is not set."""
    dsn = os.environ.get("PIMENTO_PG_DSN")
    if not dsn:
        reason = "PIMENTO_PG_DSN is not set: PostgreSQL tests need a superuser DSN to a throwaway database"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason + " (CI=true, so this is a failure)")
        pytest.skip(reason)
    return dsn


def with_dbname(dsn: str, dbname: str) -> str:
    """``dsn`` pointing at database ``dbname`` instead."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return make_conninfo(**params)


@contextlib.contextmanager
def fresh_database(prefix: str) -> Iterator[str]:
    """The DSN of a new, empty database ``<prefix>_<random>`` beside the admin DSN's; dropped
    afterwards (skips without psycopg or PIMENTO_PG_DSN, like :func:`admin_dsn`)."""
    psycopg = pytest.importorskip("psycopg")
    admin = admin_dsn()
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_dbname(admin, name)
    finally:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def fresh_engine(prefix: str) -> Iterator[object]:
    """A writable :class:`PostgresEngine` on a :func:`fresh_database`; closed and dropped afterwards."""
    from pimento.engines.postgres_engine import PostgresEngine

    with fresh_database(prefix) as dsn:
        engine = PostgresEngine(dsn, read_only=False)
        try:
            yield engine
        finally:
            engine.close()
