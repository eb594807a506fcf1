"""A small school database in DuckDB: students, pets, clubs, with foreign keys."""

from __future__ import annotations

import contextlib

import pytest

from pimento.engines import open_engine
from pimento.nl import ValueIndex

DDL = """
CREATE TABLE student (stu_id INTEGER PRIMARY KEY, name TEXT, age INTEGER, sex TEXT, city TEXT);
CREATE TABLE pets (pet_id INTEGER PRIMARY KEY, pet_type TEXT, weight DOUBLE);
CREATE TABLE has_pet (stu_id INTEGER REFERENCES student(stu_id), pet_id INTEGER REFERENCES pets(pet_id));
CREATE TABLE airports (airport_code TEXT PRIMARY KEY, city TEXT);
CREATE TABLE flights (flight_no INTEGER PRIMARY KEY, source_airport TEXT REFERENCES airports(airport_code),
                      dest_airport TEXT REFERENCES airports(airport_code), year INTEGER);
INSERT INTO student VALUES (1, 'Kyle', 19, 'M', 'Boston'), (2, 'Ann', 22, 'F', 'Denver'), (3, 'Bo', 25, 'F', 'Boston');
INSERT INTO pets VALUES (10, 'dog', 12.0), (11, 'cat', 3.5), (12, 'dog', 9.0);
INSERT INTO has_pet VALUES (1, 10), (2, 11), (3, 12), (3, 11);
INSERT INTO airports VALUES ('ABZ', 'Aberdeen'), ('ABI', 'Abilene'), ('APG', 'Aberdeen Proving');
INSERT INTO flights VALUES (1, 'ABZ', 'ABI', 2014), (2, 'ABI', 'ABZ', 2015), (3, 'ABI', 'APG', 2016), (4, 'APG', 'ABZ', 2014);
"""


@contextlib.contextmanager
def _script_database(path, script: str):
    """A DuckDB file at ``path`` made by ``script`` (statements separated by ";"), then opened
    read-only: (engine, catalog, value index); closed afterwards."""
    engine = open_engine(str(path), read_only=False)
    for statement in script.strip().split(";"):
        if statement.strip():
            engine.execute(statement)
    engine.close()
    engine = open_engine(str(path))
    try:
        catalog = engine.introspect()
        yield engine, catalog, ValueIndex.from_engine(engine, catalog)
    finally:
        engine.close()


@pytest.fixture(scope="session")
def script_database():
    """:func:`_script_database`, for the modules that build their own small database."""
    return _script_database


@pytest.fixture(scope="module")
def school(tmp_path_factory):
    with _script_database(tmp_path_factory.mktemp("nl") / "school.duckdb", DDL) as opened:
        yield opened
