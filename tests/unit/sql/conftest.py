from __future__ import annotations

import pytest

from pimento.engines.duckdb_engine import DuckDBEngine

DDL = """
CREATE TABLE Patient(pat_id INTEGER PRIMARY KEY, age INTEGER, sex TEXT NOT NULL);
CREATE TABLE Employee(employee_id INTEGER PRIMARY KEY, specialty TEXT);
CREATE TABLE Visit(visit_id INTEGER PRIMARY KEY, pat_id INTEGER NOT NULL REFERENCES Patient(pat_id),
                   attending_id INTEGER REFERENCES Employee(employee_id), diagnosis TEXT);
CREATE TABLE Rx(rx_id INTEGER PRIMARY KEY, pat_id INTEGER REFERENCES Patient(pat_id),
                prescriber_id INTEGER REFERENCES Employee(employee_id), med TEXT);
INSERT INTO Patient VALUES (1, 30, 'F'), (2, 45, 'M'), (3, NULL, 'F'), (4, 70, 'M');
INSERT INTO Employee VALUES (10, 'Cardiology'), (11, 'Oncology'), (12, NULL);
INSERT INTO Visit VALUES (100, 1, 10, 'flu'), (101, 1, 11, 'HIV disease'), (102, 2, 10, 'angina'),
                         (103, 3, 12, 'flu'), (104, 4, 10, 'angina');
INSERT INTO Rx VALUES (1000, 1, 10, 'warfarin'), (1001, 2, 10, 'warfarin'), (1002, 2, 11, 'aspirin'),
                      (1003, 4, 10, 'warfarin'), (1004, 3, 12, NULL);
"""


@pytest.fixture(scope="session")
def small_db():
    engine = DuckDBEngine(":memory:", read_only=False)
    for statement in DDL.split(";"):
        if statement.strip():
            engine.execute(statement)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def small_catalog(small_db):
    return small_db.introspect()
