"""Database engines behind one protocol: DuckDB (embedded default), SQLite, PostgreSQL."""

from __future__ import annotations

from pimento.engines.base import Engine, Result, open_engine, register_engine, registered_engines

__all__ = ["Engine", "Result", "open_engine", "register_engine", "registered_engines"]
