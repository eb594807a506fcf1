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
