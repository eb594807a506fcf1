"""Registers the built-in engines with the registry (same extension point as third parties)."""

from __future__ import annotations

from pimento.engines.base import register_engine


def _duckdb(location: str, **kwargs):
    from pimento.engines.duckdb_engine import DuckDBEngine

    return DuckDBEngine(location, **kwargs)


register_engine(
    "duckdb",
    lambda loc: loc == ":memory:" or loc.lower().endswith((".duckdb", ".ddb")),
    _duckdb,
)


def _sqlite(location: str, **kwargs):
    from pimento.engines.sqlite_engine import SQLiteEngine

    return SQLiteEngine(location, **kwargs)


register_engine(
    "sqlite",
    lambda loc: loc.lower().endswith((".sqlite", ".sqlite3", ".db")),
    _sqlite,
)


def _postgres(location: str, **kwargs):
    from pimento.extras import check_extra

    try:  # the `postgres` extra (psycopg): one line naming it when missing
        from pimento.engines.postgres_engine import PostgresEngine
    except ImportError as exc:
        check_extra(exc, "postgres", "a PostgreSQL database")
        raise

    return PostgresEngine(location, **kwargs)


register_engine(
    "postgres",
    lambda loc: loc.lower().startswith(("postgresql://", "postgres://")),
    _postgres,
)


def _spark(location: str, **kwargs):
    from pimento.engines.spark_engine import SparkEngine

    return SparkEngine(location, **kwargs)


register_engine(
    "spark",
    lambda loc: loc.lower().startswith("spark:"),
    _spark,
)
