"""DuckDB passes the Engine conformance suite."""

from __future__ import annotations

from .conformance import EngineConformance


class TestDuckDBConformance(EngineConformance):
    engine_name = "duckdb"
    dialect = "duckdb"

    @classmethod
    def create_location(cls, tmp_path_factory) -> str:
        return str(tmp_path_factory.mktemp("duckdb") / "conformance.duckdb")

    def missing_location(self, tmp_path) -> str:
        return str(tmp_path / "absent.duckdb")
