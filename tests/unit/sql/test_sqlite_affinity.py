"""SQLite compares a TEXT-affinity column with a number as text; the parser writes that down."""

from __future__ import annotations

import sqlite3

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pimento.engines import open_engine
from pimento.errors import UnsupportedQuery
from pimento.sql import parse_count_query


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("aff") / "cars.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE cars (id INTEGER PRIMARY KEY, hp TEXT, note VARCHAR(10), cyl INTEGER, w REAL)")
    rows = [(1, "130", "a", 4, 1.5), (2, "95", "b", 6, 2.0), (3, "1000", "c", 8, 3.5), (4, "null", "d", 4, 1.0), (5, "150", "e", 6, 2.5)]
    con.executemany("INSERT INTO cars VALUES (?, ?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    engine = open_engine(str(path))
    yield path, engine, engine.introspect()
    engine.close()


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT COUNT(*) FROM cars WHERE hp > 150", "cars.hp > '150'"),
        ("SELECT COUNT(*) FROM cars WHERE 150 < hp", "'150' < cars.hp"),
        ("SELECT COUNT(*) FROM cars WHERE hp = -2.5", "cars.hp = '-2.5'"),
        ("SELECT COUNT(*) FROM cars WHERE hp IN (95, 130)", "cars.hp IN ('95', '130')"),
        ("SELECT COUNT(*) FROM cars WHERE note = 7", "cars.note = '7'"),
        ("SELECT COUNT(*) FROM cars WHERE cyl > 4", "cars.cyl > 4"),
        ("SELECT COUNT(*) FROM cars WHERE w > 2", "cars.w > 2"),
        ("SELECT COUNT(*) FROM cars WHERE hp > '150'", "cars.hp > '150'"),
    ],
)
def test_numbers_against_text_columns_become_text(db, sql, expected):
    _, _, catalog = db
    rendered = parse_count_query(sql, catalog, dialect="sqlite").to_sql("sqlite")
    assert expected in rendered, rendered


def test_other_dialects_are_not_rewritten_and_the_mismatch_is_refused(db):
    # DuckDB would cast the TEXT column to a number, which fails on the data (and names the value).
    _, _, catalog = db
    with pytest.raises(UnsupportedQuery) as info:
        parse_count_query("SELECT COUNT(*) FROM cars WHERE hp > 150", catalog, dialect="duckdb")
    assert info.value.construct == "type_mismatch"


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from([">", ">=", "<", "<=", "=", "<>"]), value=st.one_of(st.integers(-2000, 2000), st.floats(-2000, 2000, allow_nan=False).map(lambda f: round(f, 2))))
def test_same_answer_on_sqlite_and_runs_on_duckdb(db, op, value):
    path, engine, catalog = db
    sql = f"SELECT COUNT(*) FROM cars WHERE hp {op} {value}"
    query = parse_count_query(sql, catalog, dialect="sqlite")
    # The rewritten query means on SQLite what the analyst's query meant there ...
    assert engine.execute(query.to_sql("sqlite")).scalar() == engine.execute(sql).scalar()
    # ... and it runs on a DuckDB copy of the table, with the same answer.
    con = duckdb.connect()
    con.execute("CREATE TABLE cars (id INTEGER, hp VARCHAR, note VARCHAR, cyl INTEGER, w DOUBLE)")
    con.executemany("INSERT INTO cars VALUES (?, ?, ?, ?, ?)", [list(r) for r in sqlite3.connect(path).execute("SELECT * FROM cars")])
    assert con.execute(query.to_sql("duckdb")).fetchone()[0] == engine.execute(sql).scalar()
