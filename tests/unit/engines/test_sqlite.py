"""SQLite passes the Engine conformance suite, and copes with quirks of real-world files."""

from __future__ import annotations

import sqlite3

import pytest

from pimento.engines import open_engine
from pimento.errors import DataSourceError, EngineQueryError

from .conformance import EngineConformance


class TestSQLiteConformance(EngineConformance):
    engine_name = "sqlite"
    dialect = "sqlite"

    @classmethod
    def create_location(cls, tmp_path_factory) -> str:
        return str(tmp_path_factory.mktemp("sqlite") / "conformance.sqlite")

    def missing_location(self, tmp_path) -> str:
        return str(tmp_path / "absent.sqlite")

    file_statements = (
        "ATTACH '{dir}/new.sqlite' AS other",
        "ATTACH 'file:{dir}/uri.sqlite?mode=rwc' AS other",
        "SELECT load_extension('{dir}/evil')",
        "VACUUM INTO '{dir}/copy.sqlite'",
    )

    @pytest.mark.parametrize(
        "statement",
        ["PRAGMA query_only = OFF", "PRAGMA writable_schema = ON", "PRAGMA hard_heap_limit = 0", "PRAGMA journal_mode = WAL"],
    )
    def test_private_connection_refuses_pragmas_that_change_it(self, engine, statement: str) -> None:
        with pytest.raises(EngineQueryError):
            engine.execute(statement)

    def test_private_connection_sets_a_heap_limit(self, location: str) -> None:
        with open_engine(location, engine="sqlite", memory_limit="3GB") as engine:
            probe = sqlite3.connect(":memory:")  # SQLite's heap limit is per process
            try:
                limit = probe.execute("PRAGMA hard_heap_limit").fetchone()[0]
            finally:
                probe.close()
            assert 0 < limit <= 3_000_000_000
            assert engine.execute("SELECT count(*) FROM dept").scalar() == 3
            # Introspection pragmas still run.
            assert engine.introspect().has_table("dept")


def _make(path, *statements: str) -> str:
    con = sqlite3.connect(path)
    for statement in statements:
        con.execute(statement)
    con.commit()
    con.close()
    return str(path)


@pytest.mark.parametrize("suffix", [".sqlite", ".sqlite3", ".db"])
def test_suffixes_select_sqlite(tmp_path, suffix: str) -> None:
    path = _make(tmp_path / f"x{suffix}", "CREATE TABLE t (a INTEGER)")
    with open_engine(path) as engine:
        assert engine.name == "sqlite"


def test_fk_naming_only_the_table_means_its_primary_key(tmp_path) -> None:
    path = _make(
        tmp_path / "quirk.sqlite",
        "CREATE TABLE parent (a INTEGER, b TEXT, PRIMARY KEY (a, b))",
        "CREATE TABLE child (x INTEGER, y TEXT, FOREIGN KEY (x, y) REFERENCES parent)",
    )
    with open_engine(path) as engine:
        (fk,) = engine.introspect().foreign_keys
    assert (fk.table, fk.columns, fk.ref_table, fk.ref_columns) == ("child", ("x", "y"), "parent", ("a", "b"))


def test_fk_names_in_another_case_resolve_to_the_catalog_spelling(tmp_path) -> None:
    path = _make(
        tmp_path / "case.sqlite",
        "CREATE TABLE Highschooler (ID INTEGER PRIMARY KEY, name TEXT)",
        "CREATE TABLE Likes (student_id INTEGER REFERENCES HIGHSCHOOLER (id), "
        "LIKED_ID INTEGER, FOREIGN KEY (liked_id) REFERENCES highschooler (Id))",
    )
    with open_engine(path) as engine:
        found = {(fk.table, fk.columns, fk.ref_table, fk.ref_columns) for fk in engine.introspect().foreign_keys}
    assert found == {
        ("Likes", ("student_id",), "Highschooler", ("ID",)),
        ("Likes", ("LIKED_ID",), "Highschooler", ("ID",)),
    }


def test_fk_to_a_missing_table_is_skipped_and_recorded(tmp_path) -> None:
    path = _make(tmp_path / "dangling.sqlite", "CREATE TABLE t (a INTEGER REFERENCES nowhere (id))")
    with open_engine(path) as engine:
        assert engine.introspect().foreign_keys == ()
        assert engine.skipped_foreign_keys == ["t -> nowhere: no such table"]


def test_partial_and_expression_unique_indexes_are_not_keys(tmp_path) -> None:
    path = _make(
        tmp_path / "idx.sqlite",
        "CREATE TABLE t (a INTEGER, b TEXT)",
        "CREATE UNIQUE INDEX t_a ON t (a) WHERE a > 0",
        "CREATE UNIQUE INDEX t_b ON t (lower(b))",
    )
    with open_engine(path) as engine:
        assert engine.introspect().table("t").unique == ()


def test_internal_tables_are_hidden(tmp_path) -> None:
    path = _make(tmp_path / "seq.sqlite", "CREATE TABLE t (a INTEGER PRIMARY KEY AUTOINCREMENT)", "INSERT INTO t VALUES (NULL)")
    with open_engine(path) as engine:
        assert engine.introspect().table_names == ("t",)


def test_file_that_is_not_sqlite_is_a_data_source_error(tmp_path) -> None:
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not a database file at all" * 100)
    with pytest.raises(DataSourceError, match="cannot open SQLite"):
        open_engine(str(path))


def test_multiple_statements_are_refused(tmp_path) -> None:
    from pimento.errors import EngineError

    path = _make(tmp_path / "multi.sqlite", "CREATE TABLE t (a INTEGER)")
    with open_engine(path) as engine, pytest.raises(EngineError):
        engine.execute("SELECT 1; DELETE FROM t")
