"""Releases under the person unit (issue 26): planned before the charge, charged once, the unit stated.

Through :meth:`Session.release_sql` on small DuckDB clinics (tests/neighbours.py's schema:
Patient <- Visit <- Prescription) whose custodian sets ``[privacy] unit = "Patient"``, and through
:mod:`pimento.release.person_release` directly for the plan.
"""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest
from neighbours import HARNESS_DATABASE_KEY, Clinic, write_deployment

from pimento.errors import ConfigError, DeploymentHaltedError, ModeError, UnsupportedQuery
from pimento.mechanisms import Budget
from pimento.mechanisms.samplers import fixed_noise_for_tests
from pimento.release.session import Session

LEDGER = '[ledger]\nepsilon_cap = "100"\nanalyst_share = "1"\n'
UNIT = '[privacy]\nunit = "Patient"\nmax_contribution = 16\n\n' + LEDGER
HIV = "SELECT COUNT(*) FROM Visit WHERE diagnosis = 'hiv'"
JOIN = "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.diagnosis = 'flu'"
DISTINCT = "SELECT COUNT(DISTINCT v.pat_id) FROM Visit v WHERE v.diagnosis = 'flu'"
RX = "SELECT COUNT(*) FROM Visit v JOIN Prescription r ON v.visit_id = r.visit_id WHERE r.drug = 'warfarin'"
COPY_BUDGET = ("1.6", "1e-6")
COPY_ID = "person-release-copy"


def clinic(patients: int = 8, heavy: int = 6, seed: int = 0) -> Clinic:
    """Patients with one to three flu visits; patient 1 with ``heavy`` HIV visits; a prescription per HIV visit."""
    rng = random.Random(seed)
    people = tuple((i, f"P{i}", 1950 + i) for i in range(1, patients + 1))
    visits = [(100 + j, 1, "hiv") for j in range(heavy)]
    for i in range(1, patients + 1):
        visits += [(300 + 10 * i + k, i, "flu") for k in range(rng.randint(1, 3))]
    rx = tuple((1000 + j, 100 + j, "warfarin") for j in range(heavy))
    return Clinic({"Patient": people, "Visit": tuple(visits), "Prescription": rx})


def write_copy(path: Path, data: Clinic) -> Path:
    """A stand-in for `pimento synth`'s copy of the harness's deployment (charge it with :func:`charge_copy`)."""
    from pimento.synth import META_TABLE

    data.write(path)
    con = duckdb.connect(str(path))
    con.execute(
        f"CREATE TABLE {META_TABLE} (epsilon VARCHAR NOT NULL, delta VARCHAR NOT NULL, root VARCHAR NOT NULL, "
        "seed BIGINT NOT NULL, source_fingerprint VARCHAR NOT NULL, created_at TIMESTAMP NOT NULL, "
        "pimento_version VARCHAR NOT NULL, ledger_charge VARCHAR, details VARCHAR NOT NULL, "
        "copy_id VARCHAR NOT NULL, database_key VARCHAR NOT NULL)"
    )
    con.execute(
        f"INSERT INTO {META_TABLE} VALUES (?, ?, 'Patient', 0, 'stand-in', TIMESTAMP '2026-01-01', 'test', NULL, ?, ?, ?)",
        [*COPY_BUDGET, json.dumps({}), COPY_ID, HARNESS_DATABASE_KEY],
    )
    con.close()
    return path


def charge_copy(session: Session) -> None:
    session.ledger.charge_synthetic(session.location, Budget.of(*COPY_BUDGET), copy_id=COPY_ID)


def deploy(folder: Path, data: Clinic, *, config: str = UNIT, copy: Clinic | None = None) -> Path:
    """``data`` at folder/clinic.duckdb under ``config``; with ``copy``, a charged synthetic copy beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pimento.toml").write_text(config)
    path = data.write(folder / "clinic.duckdb")
    write_deployment(path)
    if copy is not None:
        write_copy(folder / "clinic.synthetic.duckdb", copy)
        with Session(path) as s:
            charge_copy(s)
    return path


def left(path: Path) -> Budget:
    with Session(path) as s:
        return s.ledger.remaining(s.location, "default")


# ------------------------------------------------------------------------------ answers


def test_a_count_states_its_unit_and_mechanism(tmp_path):
    data = clinic()
    db = deploy(tmp_path, data, copy=clinic(seed=1))
    before = left(db)
    with fixed_noise_for_tests(random.Random(0)), Session(db) as s:
        answer = s.release_sql(HIV, "1")
    out = answer.to_dict()
    assert out["unit"] == "Patient" and answer.unit == "Patient"
    assert out["mechanism"] in ("truncated_laplace", "r2t") and out["person_release"]["mechanism"] == out["mechanism"]
    assert "synthetic copy" in out["person_release"]["reason"]
    assert out["delta"] == "0" and out["epsilon"] == "1"
    assert before.epsilon - left(db).epsilon == 1 and left(db).delta == before.delta  # charged epsilon, delta 0


def test_the_tuple_unit_answer_states_tuple(tmp_path):
    db = deploy(tmp_path, clinic(), config=LEDGER)
    with fixed_noise_for_tests(random.Random(0)), Session(db) as s:
        out = s.release_sql(JOIN, "1", "1e-6").to_dict()
    assert out["unit"] == "tuple" and "person_release" not in out


def test_one_threshold_on_the_copy_cuts_the_heavy_patient(tmp_path):
    """The copy shows patient 1's six HIV visits as one: tau = 1, and the release counts 1 for them (noise fixed at 0)."""
    from neighbours import NoNoise

    db = deploy(tmp_path, clinic(heavy=6), copy=clinic(heavy=1, seed=1))
    with fixed_noise_for_tests(NoNoise()), Session(db) as s:
        out = s.release_sql(HIV, "1").to_dict()
    assert out["person_release"]["mechanism"] == "truncated_laplace" and out["person_release"]["thresholds"] == [1], out
    assert out["value"] == 1  # truncated at 1: the bias of a threshold that fits the copy, not the data (never privacy)
    assert out["interval_basis"] == "truncated_count" and Fraction(out["noise_scale_upper_exact"]) == 1


def test_without_a_copy_the_release_is_r2t_and_says_why(tmp_path):
    db = deploy(tmp_path, clinic())
    with fixed_noise_for_tests(random.Random(0)), Session(db) as s:
        out = s.release_sql(RX, "1").to_dict()
    assert out["mechanism"] == "r2t" and "no synthetic copy" in out["person_release"]["reason"], out
    assert out["person_release"]["thresholds"] == [2, 4, 8, 16]
    assert out["interval_basis"] == "r2t_underestimate"
    lo, hi = (Fraction(x) for x in out["interval_exact"])
    assert lo == Fraction(out["value_exact"]) and hi > lo  # R2T under-estimates: the count lies above the value


def test_count_distinct_persons_is_the_laplace_mechanism(tmp_path):
    from neighbours import NoNoise

    data = clinic()
    db = deploy(tmp_path, data)
    with fixed_noise_for_tests(NoNoise()), Session(db) as s:
        out = s.release_sql(DISTINCT, "1").to_dict()
    assert out["person_release"]["max_contribution"] == 1 and out["person_release"]["thresholds"] == [1]
    assert out["value"] == data.count(DISTINCT)  # unbiased, no noise under NoNoise
    assert Fraction(out["noise_scale_upper_exact"]) == 1


def test_a_repeated_request_is_the_cached_answer(tmp_path):
    db = deploy(tmp_path, clinic(), copy=clinic(seed=1))
    with fixed_noise_for_tests(random.Random(0)), Session(db) as s:
        first = s.release_sql(JOIN, "1").to_dict()
        again = s.release_sql(JOIN, "1").to_dict()
    assert not first["cached"] and again["cached"]
    assert again["value_exact"] == first["value_exact"] and again["person_release"] == first["person_release"]
    assert again["unit"] == "Patient" and again["budget_left"] == first["budget_left"]


def test_a_tuple_unit_answer_is_never_the_cached_person_answer(tmp_path):
    """The same request after the custodian moves to the person unit is charged again (the cache key names the unit)."""
    db = deploy(tmp_path, clinic(), config=LEDGER)
    with fixed_noise_for_tests(random.Random(0)), Session(db) as s:
        tuple_answer = s.release_sql(HIV, "1").to_dict()
    (tmp_path / "pimento.toml").write_text(UNIT)
    with fixed_noise_for_tests(random.Random(0)), Session(db) as s:
        person_answer = s.release_sql(HIV, "1").to_dict()
    assert tuple_answer["unit"] == "tuple" and person_answer["unit"] == "Patient"
    assert not person_answer["cached"] and person_answer["charge_id"] != tuple_answer["charge_id"]


# ------------------------------------------------------------------------------ refusals before the charge


def _refused(db: Path, sql: str, error: type[Exception], **fields) -> str:
    before = left(db)
    with Session(db) as s, pytest.raises(error) as caught:
        s.release_sql(sql, "1", **fields)
    assert left(db) == before  # nothing spent
    return str(caught.value)


def test_a_relation_that_cannot_reach_the_unit_is_refused(tmp_path):
    db = deploy(tmp_path, clinic())
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, name VARCHAR)")
    con.close()
    message = _refused(db, HIV, ConfigError)
    assert "'Staff' does not reach 'Patient'" in message


def test_count_distinct_of_another_column_is_refused(tmp_path):
    db = deploy(tmp_path, clinic())
    _refused(db, "SELECT COUNT(DISTINCT v.diagnosis) FROM Visit v", UnsupportedQuery)


def test_grouped_queries_and_other_modes_are_refused(tmp_path):
    db = deploy(tmp_path, clinic())
    _refused(db, "SELECT diagnosis, COUNT(*) FROM Visit GROUP BY diagnosis", UnsupportedQuery)


# ------------------------------------------------------------------------------ one_person_per_row broken on the data

TWO_CHAINS = """
CREATE TABLE Patient (pat_id INTEGER PRIMARY KEY, name VARCHAR NOT NULL);
CREATE TABLE Visit (visit_id INTEGER PRIMARY KEY, pat_id INTEGER NOT NULL REFERENCES Patient(pat_id));
CREATE TABLE Rx (rx_id INTEGER PRIMARY KEY, visit_id INTEGER NOT NULL REFERENCES Visit(visit_id),
                 pat_id INTEGER NOT NULL REFERENCES Patient(pat_id));
INSERT INTO Patient VALUES (1, 'a'), (2, 'b');
INSERT INTO Visit VALUES (10, 1), (20, 2);
"""


def _two_chains(folder: Path, rx_pat: int) -> Path:
    folder.mkdir()
    (folder / "pimento.toml").write_text(UNIT)
    path = folder / "clinic.duckdb"
    con = duckdb.connect(str(path))
    con.execute(TWO_CHAINS + f"INSERT INTO Rx VALUES (100, 10, {rx_pat});")
    con.close()
    return path


def test_a_row_with_two_persons_under_one_person_per_row_halts_after_the_charge(tmp_path):
    """Rx 100 belongs to visit 10 (patient 1) but names patient 2: the declaration is false on the data.
    The one-person plan refuses to release it and the deployment halts; on data that keeps it, it answers."""
    good = _two_chains(tmp_path / "good", rx_pat=1)
    with Session(good) as s:
        assert s.release_sql("SELECT COUNT(*) FROM Rx", "1").unit == "Patient"
    bad = _two_chains(tmp_path / "bad", rx_pat=2)
    before = left(bad)
    with Session(bad) as s, pytest.raises(DeploymentHaltedError):
        s.release_sql("SELECT COUNT(*) FROM Rx", "1")
    assert before.epsilon - left(bad).epsilon == 1  # the charge stands


def test_split_mode_is_refused_under_the_person_unit(tmp_path):
    """A mode other than dp is refused before the plan (its bound is a tuple-level one)."""
    from types import SimpleNamespace

    from pimento.config import Settings
    from pimento.release.modes.split import SPLIT

    settings = Settings.model_validate({"privacy": {"unit": "Patient"}})
    private = SimpleNamespace(database=SimpleNamespace(settings=settings))
    with pytest.raises(ModeError, match="not available under"):
        SPLIT.release(private, SimpleNamespace(interpretation=None))  # nothing else is read


def test_pimento_sql_prints_the_unit_and_why(tmp_path):
    """`pimento sql` (text and --json) states the unit and the mechanism's reason."""
    from neighbours import cli_json, cli_text

    db = deploy(tmp_path, clinic(), copy=clinic(seed=1))
    args = ["sql", "--db", str(db), "--sql", HIV, "--epsilon", "1"]
    text = cli_text(args, 0)
    assert text["exit_code"] == 0, text
    assert "privacy unit: one Patient with every row that references them; on the synthetic copy" in text["stdout"]
    assert "(public: the truncation threshold and epsilon)" in text["stdout"]
    data = cli_json(args, 1)
    assert data["unit"] == "Patient" and data["person_release"]["mechanism"] == data["mechanism"], data


def test_the_audit_row_records_the_unit_and_the_private_counts(tmp_path):
    """The custodian's audit row names the unit (in the row and in the request's mode) and holds the true count."""
    data = clinic()
    db = deploy(tmp_path, data, copy=clinic(seed=1))
    with fixed_noise_for_tests(random.Random(0)), Session(db) as s:
        s.release_sql(HIV, "1")
        rows = [r for r in s.ledger.audit_rows() if r.get("sql") and "hiv" in r["sql"]]
    (row,) = rows
    assert row["unit"] == "Patient" and row["mode"] == "dp:unit=Patient", row
    assert row["private"]["true_value"] == data.count(HIV) and row["private"]["largest_contribution"] == 6


def test_a_question_is_answered_under_the_person_unit(tmp_path):
    """`ask` reads the question on the copy, then releases its SQL per person; the end-to-end guarantee adds the copy's."""
    db = deploy(tmp_path, clinic(), copy=clinic(seed=1))
    with fixed_noise_for_tests(random.Random(0)), Session(db) as s:
        answer = s.ask("How many HIV visits?", epsilon="1", seed_sql=(HIV,), k=1)
    out = answer.to_dict()
    assert out["unit"] == "Patient" and out["person_release"]["unit"] == "Patient" and out["question"]
    assert answer.end_to_end is not None and answer.end_to_end.epsilon == Fraction(13, 5)  # 1.6 + 1
