"""A grouped question's reading on the synthetic copy (issue 25, items 3 and 4): formulations clustered by their answer on
the copy, and within the chosen answer the formulation of the lowest predicted error of the whole answer.

A small clinic: a public relation Dept, private Patient and Visit; the copy is another small clinic (the reading reads it
only). ``read_grouped`` is given the proposals in a chosen order, so the tests decide the parser's ranks.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import pytest

from db_support import duckdb_file
from pimento.engines import open_engine
from pimento.errors import UnsupportedQuery
from pimento.release.admission import admit
from pimento.release.aggregate import plan
from pimento.release.aggregate_accuracy import predict
from pimento.release.aggregate_reading import read_grouped
from pimento.release.request import Request
from pimento.release.session import Session

DDL = [
    "CREATE TABLE Dept (name VARCHAR PRIMARY KEY)",
    "CREATE TABLE Patient (pat_id INTEGER PRIMARY KEY, sex VARCHAR NOT NULL)",
    "CREATE TABLE Visit (visit_id INTEGER PRIMARY KEY, pat_id INTEGER NOT NULL REFERENCES Patient(pat_id), "
    "dept VARCHAR NOT NULL REFERENCES Dept(name))",
    "INSERT INTO Dept VALUES ('cardio'), ('neuro'), ('onco')",
]
CONFIG = """
[privacy]
public = ["Dept"]

[domains]
"Visit.dept" = ["cardio", "neuro", "onco"]
"Patient.sex" = ["F", "M"]
"""
#: one answer, two formulations: over the join with the public relation (two relations: smooth noise) and over Visit alone
#: (one relation: Laplace at the global sensitivity, a narrower interval)
JOINED = "SELECT d.name, COUNT(*) FROM Visit v JOIN Dept d ON v.dept = d.name GROUP BY d.name"
ALONE = "SELECT v.dept, COUNT(*) FROM Visit v GROUP BY v.dept"
#: another answer: patients per sex
PER_SEX = "SELECT p.sex, COUNT(*) FROM Patient p GROUP BY p.sex"


def clinic_rows(patients: int, visits: int) -> list[str]:
    """The clinic's patients (sex alternating) and visits (departments in turn), as INSERT statements."""
    rows = [f"INSERT INTO Patient VALUES ({i}, '{'FM'[i % 2]}')" for i in range(1, patients + 1)]
    return rows + [f"INSERT INTO Visit VALUES ({v}, {1 + v % patients}, '{('cardio', 'neuro', 'onco')[v % 3]}')" for v in range(visits)]


def _clinic(path: Path, patients: int, visits: int) -> Path:
    return duckdb_file(path, DDL + clinic_rows(patients, visits))


@pytest.fixture()
def clinic(tmp_path: Path):
    (tmp_path / "pimento.toml").write_text(CONFIG)
    db = _clinic(tmp_path / "clinic.duckdb", 20, 60)
    (tmp_path / "copy").mkdir()
    copy = _clinic(tmp_path / "copy" / "clinic.duckdb", 30, 90)
    engine = open_engine(str(copy), read_only=True)
    with Session(db, analyst="ann") as session:
        yield session, engine
    engine.close()


def _read(session: Session, engine, proposed: list[str], **fields):
    settings = session.database.settings
    job = admit(Request.for_question("How many visits per department?", epsilon="1", delta="1e-6", **fields), settings=settings,
                ledger=session.ledger)
    return read_grouped(job, job.question or "", [SimpleNamespace(sql=s) for s in proposed], engine, session.database.catalog, settings,
                        session.ledger, session.location)


def test_within_one_answer_the_formulation_of_lower_predicted_error_wins_over_the_parsers_rank(clinic):
    session, engine = clinic
    reading, outcome = _read(session, engine, [JOINED, ALONE])
    joined, alone = reading.candidates
    assert joined.cluster == alone.cluster  # the same answer on the copy
    assert alone.relative_error < joined.relative_error
    assert reading.sql == ALONE and outcome.result.sql == ALONE
    assert reading.avoided_sql == JOINED  # the parser's top reading, avoided


def test_the_answer_is_the_cluster_of_most_weight_whatever_its_error(clinic):
    session, engine = clinic
    reading, _ = _read(session, engine, [JOINED, PER_SEX])
    assert reading.candidates[0].cluster != reading.candidates[1].cluster
    assert reading.sql == JOINED  # rank 1 weighs 1, rank 2 a half: the meaning is not traded for accuracy


def test_the_predicted_error_is_the_median_half_width_over_the_median_value_on_the_copy(clinic):
    session, engine = clinic
    reading, _ = _read(session, engine, [ALONE])
    estimate = reading.estimate
    assert estimate.values == (Fraction(30), Fraction(30), Fraction(30))  # 90 visits of the copy over three departments
    # one relation: Laplace of scale 1/epsilon per group, its 95% half-width ceil(ln(20) - 1/2) = 3
    assert estimate.half_widths == (Fraction(3),) * 3
    assert estimate.accuracy(Fraction(1, 2)).relative_error == Fraction(3, 30)


def test_the_estimate_is_the_plan_of_the_release(clinic):
    """predict() prices the plan the release would make: the same mechanism, groups and cost."""
    session, engine = clinic
    job = admit(Request.for_sql(JOINED, epsilon="1", delta="1e-6"), settings=session.database.settings, ledger=session.ledger)
    planned = plan(session, job)
    estimate = predict(planned, engine, session.database.catalog)
    assert len(estimate.values) == len(planned.keys or ()) == 3
    assert estimate.synthetic_rs is not None and estimate.synthetic_rs > 0  # a join: the copy's smooth sensitivity
    reading, _ = _read(session, engine, [JOINED])
    assert reading.cost == planned.cost and reading.groups == 3


def test_a_proposal_its_release_would_refuse_is_dropped_with_its_reason(clinic):
    session, engine = clinic
    refused = "SELECT v.dept, SUM(v.visit_id) FROM Visit v GROUP BY v.dept"  # no [bounds]: the release refuses it
    reading, outcome = _read(session, engine, [refused, ALONE])
    assert reading.sql == ALONE and any("needs clipping bounds" in d for d in reading.dropped)
    assert outcome.result.invalid == 1
    with pytest.raises(UnsupportedQuery, match="needs clipping bounds"):
        _read(session, engine, [refused])


def test_split_and_contextual_are_refused_before_any_proposal_is_planned(clinic):
    from pimento.errors import ModeError

    session, engine = clinic
    job = admit(Request.for_question("How many visits per department?", epsilon="1", delta="1e-6"), settings=session.database.settings,
                ledger=session.ledger)
    split = SimpleNamespace(name="split", spends=True, aggregates=False)
    with pytest.raises(ModeError, match="GROUP BY, SUM or AVG has no bound in this mode"):
        read_grouped(_with_mode(job, split), "q", [SimpleNamespace(sql=ALONE)], engine, session.database.catalog,
                     session.database.settings, session.ledger, session.location)


def _with_mode(job, mode):
    from dataclasses import replace

    return replace(job, mode=mode)


def test_a_grouped_question_under_the_person_unit_is_refused_before_the_charge(tmp_path: Path):
    """[privacy] unit = "Patient": refused by the reading (the release would refuse it too), the ledger untouched."""
    (tmp_path / "pimento.toml").write_text(CONFIG.replace('public = ["Dept"]', 'public = ["Dept"]\nunit = "Patient"'))
    db = _clinic(tmp_path / "clinic.duckdb", 20, 60)
    (tmp_path / "copy").mkdir()
    engine = open_engine(str(_clinic(tmp_path / "copy" / "clinic.duckdb", 30, 90)), read_only=True)
    try:
        with Session(db, analyst="ann") as session:
            with pytest.raises(UnsupportedQuery, match="not supported under \\[privacy\\] unit = 'Patient'"):
                _read(session, engine, [ALONE])
            assert session.ledger.spent(session.location).epsilon == 0
    finally:
        engine.close()


def test_the_analysts_narrowed_bounds_are_part_of_a_readings_key():
    """A grouped reading's plan and predicted error use the narrowed bounds: another interval, another cached reading."""
    from pimento.config import Settings
    from pimento.mechanisms import mechanism_for
    from pimento.release import reading_cache

    def key(bounds: dict) -> str:
        request = Request.for_question("What is the average stay per department?", epsilon="1", bounds=bounds or None)
        job = SimpleNamespace(question=request.question, analyst="ann", mode=SimpleNamespace(name="dp"), context=None, policy=None,
                              neighbours=None, request=request)
        catalog = SimpleNamespace(to_dict=lambda: {"tables": []})
        parts = reading_cache.reading_parts(job, mechanism_for("1", None), catalog, Settings(), copy_id="c", database="d")  # type: ignore[arg-type]
        return reading_cache.reading_key(parts)

    assert key({}) != key({"Visit.stay": ["0", "10"]}) != key({"Visit.stay": ["0", "12"]})
    assert key({"Visit.stay": ["0", "10"]}) == key({"Visit.stay": ["0", "10"]})
