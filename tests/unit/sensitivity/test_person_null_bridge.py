"""Two relations joined through a row that references nobody are not in the one-person class.

Under ``one_person_per_row``, A(pat_id -> Patient, room -> Room) and B(pat_id -> Patient, room -> Room)
joined on one Room whose own pat_id is NULL: every row has one owner at most, yet the join result
references A's patient and B's patient. The shared expression (the room's patient) is NULL there,
so it must not merge A's and B's owner groups (sensitivity/person.py ``_never_null``); with the
room's pat_id NOT NULL it does (then the declaration forces A's and B's patients to be the room's).
"""

from __future__ import annotations

import pytest

from pimento.engines.duckdb_engine import DuckDBEngine
from pimento.sensitivity.person import owner_expressions, person_contributions, person_paths
from pimento.sql.parse import parse_count_query

JOIN = "SELECT COUNT(*) FROM A JOIN Room R ON A.room = R.room_id JOIN B ON B.room = R.room_id"
JOINED_TWO = "SELECT COUNT(*) FROM Visit V JOIN Rx X ON X.vid = V.vid"


def build(room_pat: str, rows: str):
    engine = DuckDBEngine(":memory:", read_only=False)
    engine.execute("CREATE TABLE Patient (pat_id INTEGER PRIMARY KEY)")
    engine.execute(f"CREATE TABLE Room (room_id INTEGER PRIMARY KEY, pat_id INTEGER {room_pat} REFERENCES Patient (pat_id))")
    for t in ("A", "B"):
        engine.execute(f"CREATE TABLE {t} (id INTEGER PRIMARY KEY, pat_id INTEGER REFERENCES Patient (pat_id), "
                       "room INTEGER NOT NULL REFERENCES Room (room_id))")
    engine.execute("CREATE TABLE Visit (vid INTEGER PRIMARY KEY, pat_id INTEGER REFERENCES Patient (pat_id))")
    engine.execute("CREATE TABLE Rx (rid INTEGER PRIMARY KEY, vid INTEGER REFERENCES Visit (vid), pat_id INTEGER REFERENCES Patient (pat_id))")
    engine.execute("INSERT INTO Patient VALUES (1), (2)")
    for statement in rows.split(";"):
        if statement.strip():
            engine.execute(statement)
    return engine, engine.introspect()


def test_a_room_of_nobody_joins_two_patients_and_the_query_is_not_one_person():
    engine, catalog = build("", "INSERT INTO Room VALUES (7, NULL); INSERT INTO A VALUES (1, 1, 7); INSERT INTO B VALUES (1, 2, 7)")
    paths = person_paths(catalog, "Patient")
    query = parse_count_query(JOIN, catalog)
    got = person_contributions(engine, query, catalog, paths)
    assert got.most_owners == 2  # every row has one owner, the result two: the data keeps one_person_per_row
    assert len(owner_expressions(query, catalog, paths)) > 1  # so the query must not be in the one-person class


def test_with_the_room_patient_not_null_the_join_is_one_person():
    engine, catalog = build("NOT NULL", "INSERT INTO Room VALUES (7, 1); INSERT INTO A VALUES (1, 1, 7); INSERT INTO B VALUES (1, 1, 7)")
    paths = person_paths(catalog, "Patient")
    assert len(owner_expressions(parse_count_query(JOIN, catalog), catalog, paths)) == 1


@pytest.mark.parametrize("visit_pat", [None, 1])
def test_a_child_joined_to_its_parent_stays_one_person_with_nullable_keys(visit_pat):
    """Rx joined to its Visit: the visit's expressions are all Rx's too, so a NULL visit patient splits nothing."""
    engine, catalog = build("", f"INSERT INTO Visit VALUES (10, {'NULL' if visit_pat is None else visit_pat}); INSERT INTO Rx VALUES (100, 10, 1)")
    paths = person_paths(catalog, "Patient")
    query = parse_count_query(JOINED_TWO, catalog)
    assert len(owner_expressions(query, catalog, paths)) == 1
    assert person_contributions(engine, query, catalog, paths).most_owners == 1
