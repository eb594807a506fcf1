"""Issue 27 (POLICY11): the catalog carries the database's own comments on columns and tables.

``COMMENT ON COLUMN`` / ``COMMENT ON TABLE`` (``VIEW``) are read by introspection (DuckDB: ``duckdb_columns()``,
``duckdb_tables()``, ``duckdb_views()``; PostgreSQL: ``col_description`` / ``obj_description``, tested where
``PIMENTO_PG_DSN`` is set). SQL text comments (``--``) are not stored by the database and are not read. A comment
takes no part in a catalog's equality nor in the compiled policy's schema fingerprint, and a catalog without comments
is described (``to_dict``: ``pimento catalog --json``, the reading cache's key) exactly as before.
"""

from __future__ import annotations

from dataclasses import replace

import duckdb
import pytest

from pimento.engines.duckdb_engine import DuckDBEngine
from pimento.policy.compiled import schema_fingerprint
from pimento.schema import Catalog, Column, Table

DDL = """
CREATE TABLE Pupil (pupil_id INTEGER PRIMARY KEY, tel VARCHAR,  -- a SQL text comment: not stored
    dob DATE, nm VARCHAR);
COMMENT ON COLUMN Pupil.tel IS 'Home telephone number of the family';
COMMENT ON COLUMN Pupil.dob IS 'Date of birth';
COMMENT ON COLUMN Pupil.nm IS '';
COMMENT ON TABLE Pupil IS 'Pupils on the roll';
CREATE TABLE Sess (sess_id INTEGER PRIMARY KEY, pupil_id INTEGER REFERENCES Pupil(pupil_id));
CREATE VIEW Roll AS SELECT pupil_id FROM Pupil;
COMMENT ON VIEW Roll IS 'The roll call';
"""


def _catalog(tmp_path, ddl: str = DDL) -> Catalog:
    path = tmp_path / "c.duckdb"
    con = duckdb.connect(str(path))
    con.execute(ddl)
    con.close()
    engine = DuckDBEngine(str(path))
    try:
        return engine.introspect()
    finally:
        engine.close()


def test_duckdb_reads_column_and_table_comments(tmp_path):
    catalog = _catalog(tmp_path)
    pupil = catalog.table("Pupil")
    assert {c.name: c.comment for c in pupil.columns} == {
        "pupil_id": None, "tel": "Home telephone number of the family", "dob": "Date of birth", "nm": None}
    assert pupil.comment == "Pupils on the roll"
    assert catalog.table("Sess").comment is None
    assert catalog.table("Roll").comment == "The roll call"
    assert not pupil.column("pupil_id").nullable  # the key's NOT NULL is kept beside its comment


def test_comments_take_no_part_in_equality_or_the_schema_fingerprint(tmp_path):
    with_comments = _catalog(tmp_path)
    bare = Catalog(tuple(replace(t, comment=None, columns=tuple(replace(c, comment=None) for c in t.columns))
                         for t in with_comments.tables), with_comments.foreign_keys)
    assert bare == with_comments
    assert schema_fingerprint(bare) == schema_fingerprint(with_comments)


def test_to_dict_shows_comments_only_where_there_are_some(tmp_path):
    described = _catalog(tmp_path).to_dict()
    pupil = next(t for t in described["tables"] if t["name"] == "Pupil")
    assert pupil["comment"] == "Pupils on the roll"
    assert [c.get("comment") for c in pupil["columns"]] == [None, "Home telephone number of the family",
                                                           "Date of birth", None]
    assert "comment" not in pupil["columns"][0]
    plain = Catalog((Table("T", (Column("a", "integer", "INTEGER", False),), ("a",)),)).to_dict()
    assert plain["tables"][0] == {"name": "T", "private": True, "primary_key": ["a"], "unique": [],
                                  "columns": [{"name": "a", "type": "integer", "raw_type": "INTEGER", "nullable": False}]}


@pytest.mark.postgres
def test_postgres_reads_column_and_table_comments():
    from pg_support import fresh_engine

    with fresh_engine("pimento_comments") as engine:
        for statement in ("CREATE TABLE pupil (pupil_id INTEGER PRIMARY KEY, tel VARCHAR, nm VARCHAR)",
                          "COMMENT ON COLUMN pupil.tel IS 'Home telephone number of the family'",
                          "COMMENT ON TABLE pupil IS 'Pupils on the roll'",
                          "CREATE TABLE sess (sess_id INTEGER PRIMARY KEY)"):
            engine.execute(statement)
        catalog = engine.introspect()
    assert {c.name: c.comment for c in catalog.table("pupil").columns} == {
        "pupil_id": None, "tel": "Home telephone number of the family", "nm": None}
    assert catalog.table("pupil").comment == "Pupils on the roll"
    assert catalog.table("sess").comment is None
