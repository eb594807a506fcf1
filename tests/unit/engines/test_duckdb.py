"""DuckDB passes the Engine conformance suite."""

from __future__ import annotations

import duckdb
import pytest

from pimento.engines import open_engine
from pimento.errors import EngineQueryError

from .conformance import EngineConformance


class TestDuckDBConformance(EngineConformance):
    engine_name = "duckdb"
    dialect = "duckdb"
    file_statements = (
        "COPY dept TO '{dir}/out.csv'",
        "COPY (SELECT 1) TO '{dir}/out.parquet' (FORMAT parquet)",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM glob('/etc/*')",
        "ATTACH '{dir}/new.duckdb' AS other",
        "INSTALL httpfs",
        "LOAD httpfs",
        "EXPORT DATABASE '{dir}/dump'",
    )

    @classmethod
    def create_location(cls, tmp_path_factory) -> str:
        return str(tmp_path_factory.mktemp("duckdb") / "conformance.duckdb")

    def missing_location(self, tmp_path) -> str:
        return str(tmp_path / "absent.duckdb")

    def test_private_connection_has_a_memory_limit_and_a_locked_configuration(self, location: str) -> None:
        with open_engine(location, engine="duckdb", memory_limit="1GB", threads=1) as engine:
            assert engine.execute("SELECT current_setting('memory_limit')").scalar() == "953.6 MiB"
            assert engine.execute("SELECT current_setting('threads')").scalar() == 1
            assert engine.execute("SELECT current_setting('enable_external_access')").scalar() is False
            assert engine.execute("SELECT current_setting('autoload_known_extensions')").scalar() is False
            assert engine.execute("SELECT current_setting('autoinstall_known_extensions')").scalar() is False
            for statement in (
                "SET memory_limit = '100GB'",
                "SET enable_external_access = true",
                "SET lock_configuration = false",
                "RESET memory_limit",
            ):
                with pytest.raises(EngineQueryError):
                    engine.execute(statement)
            assert engine.execute("SELECT current_setting('memory_limit')").scalar() == "953.6 MiB"

    def test_default_memory_limit_applies_without_settings(self, location: str) -> None:
        with open_engine(location, engine="duckdb") as engine:
            assert engine.execute("SELECT current_setting('memory_limit')").scalar() == "3.7 GiB"

    def test_trusted_code_can_still_read_the_file_beside_an_engine(self, location: str) -> None:
        # DuckDB shares one instance per file within a process; the hardening must not make a
        # plain read-only connection of trusted code (demo, benchmarks) fail.
        with open_engine(location, engine="duckdb") as engine:
            con = duckdb.connect(location, read_only=True)
            try:
                assert con.execute("SELECT count(*) FROM dept").fetchone()[0] == 3
            finally:
                con.close()
            with open_engine(location, engine="duckdb") as second:
                assert second.execute("SELECT count(*) FROM dept").scalar() == 3
            assert engine.execute("SELECT count(*) FROM dept").scalar() == 3

    def test_an_error_that_quotes_the_data_does_not_reach_the_message(self, engine) -> None:
        with pytest.raises(EngineQueryError) as info:
            engine.execute("SELECT count(*) FROM dept WHERE CAST(name AS INTEGER) = 1")
        assert "Cardiology" in info.value.engine_text
        assert "Cardiology" not in info.value.one_line()
        assert info.value.one_line() == EngineQueryError.PUBLIC_MESSAGE

    def test_read_write_connections_are_not_locked(self, tmp_path) -> None:
        with open_engine(":memory:", engine="duckdb", read_only=False) as engine:
            engine.execute(f"COPY (SELECT 1 AS a) TO '{tmp_path}/ok.csv'")
        assert (tmp_path / "ok.csv").exists()
