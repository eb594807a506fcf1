"""Fixtures for the LLM tests: a private DuckDB database with canary values, and a synthetic copy."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from pimento.engines import open_engine
from pimento.llm import SYNTH_META_TABLE

#: Values planted in the private database; none may ever appear in a prompt.
CANARIES = ("CANARY-7f3a-Zebulon", "CANARY-91c2-Quetzal", "CANARY-e5d0-HIV+")
#: A value that only the synthetic database holds (shows that values do reach prompts).
SYNTH_MARKER = "SynthState-Alpha"

_SCHEMA = """
CREATE TABLE Patient (patient_id INTEGER PRIMARY KEY, name VARCHAR, state VARCHAR, age INTEGER);
CREATE TABLE Visit (visit_id INTEGER PRIMARY KEY, patient_id INTEGER REFERENCES Patient(patient_id),
                    diagnosis VARCHAR, ward VARCHAR);
"""


def _build(path: Path, rows_patient: list[tuple], rows_visit: list[tuple], *, synthetic: bool) -> Path:
    con = duckdb.connect(str(path))
    con.execute(_SCHEMA)
    con.executemany("INSERT INTO Patient VALUES (?, ?, ?, ?)", rows_patient)
    con.executemany("INSERT INTO Visit VALUES (?, ?, ?, ?)", rows_visit)
    if synthetic:
        con.execute(f"CREATE TABLE {SYNTH_META_TABLE} (key VARCHAR, value VARCHAR)")
        con.execute(f"INSERT INTO {SYNTH_META_TABLE} VALUES ('epsilon', '1.6')")
    con.close()
    return path


@pytest.fixture()
def private_db(tmp_path: Path) -> Path:
    patients = [
        (1, CANARIES[0], "CA", 40),
        (2, "Alice Private", CANARIES[1], 51),
        (3, "Bob Private", "NY", 33),
    ]
    visits = [(10, 1, CANARIES[2], "W1"), (11, 2, "flu", "W2"), (12, 3, "flu", CANARIES[0])]
    return _build(tmp_path / "private.duckdb", patients, visits, synthetic=False)


@pytest.fixture()
def synthetic_db(tmp_path: Path) -> Path:
    patients = [(1, "Synth Name", SYNTH_MARKER, 40), (2, "Other Synth", "NY", 50)]
    visits = [(10, 1, "flu", "W1"), (11, 2, "cold", "W2")]
    return _build(tmp_path / "synthetic.duckdb", patients, visits, synthetic=True)


@pytest.fixture()
def private_engine(private_db: Path):
    engine = open_engine(str(private_db))
    yield engine
    engine.close()


@pytest.fixture()
def synthetic_engine(synthetic_db: Path):
    engine = open_engine(str(synthetic_db))
    yield engine
    engine.close()


@pytest.fixture()
def catalog(private_engine):
    """The private database's catalog: schema only (names, types, keys)."""
    return private_engine.introspect()
