"""The demo hospital generator: schema, declared constraints, data invariants, determinism, the example."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pytest

from pimento.demo.hospital import (
    DEMO_QUESTION,
    DEMO_SQL_ORDERS,
    DEMO_SQL_PRESCRIPTION,
    PUBLIC_TABLES,
    SPECIALTIES,
    TABLES,
    create_demo,
)
from pimento.engines.database import load_database, validate_constraints
from pimento.errors import DataSourceError, UserError

# The schema of .agents/DEMO_SCHEMA.md: primary keys, unique keys, foreign keys, NOT NULL columns.
PRIMARY_KEYS = {
    "Patient": ("pat_id",),
    "Employee": ("employee_id",),
    "DxCategory": ("diagnosis",),
    "Visit": ("visit_id",),
    "MedicationOrders": ("order_id",),
    "Prescription": ("prescription_id",),
    "Discharge": ("discharge_id",),
    "TreatingRelationship": ("employee_id", "pat_id"),
    "Supervises": ("supervisor_id", "supervisee_id"),
    "CareTeamMember": ("employee_id", "team_id"),
    "TeamAssignment": ("team_id", "pat_id"),
    "Researcher": ("researcher_id",),
    "Study": ("study_id",),
    "StudyPatient": ("study_id", "pat_id"),
}
UNIQUE = {("Prescription", ("order_id",)), ("Discharge", ("visit_id",))}
FOREIGN_KEYS = {
    ("Visit", "pat_id", "Patient", "pat_id"),
    ("Visit", "attending_id", "Employee", "employee_id"),
    ("Visit", "diagnosis", "DxCategory", "diagnosis"),
    ("MedicationOrders", "visit_id", "Visit", "visit_id"),
    ("MedicationOrders", "pat_id", "Patient", "pat_id"),
    ("Prescription", "order_id", "MedicationOrders", "order_id"),
    ("Prescription", "pat_id", "Patient", "pat_id"),
    ("Prescription", "prescriber_id", "Employee", "employee_id"),
    ("Discharge", "visit_id", "Visit", "visit_id"),
    ("Discharge", "pat_id", "Patient", "pat_id"),
    ("Discharge", "finaldiagnosis", "DxCategory", "diagnosis"),
    ("TreatingRelationship", "employee_id", "Employee", "employee_id"),
    ("TreatingRelationship", "pat_id", "Patient", "pat_id"),
    ("Supervises", "supervisor_id", "Employee", "employee_id"),
    ("Supervises", "supervisee_id", "Employee", "employee_id"),
    ("CareTeamMember", "employee_id", "Employee", "employee_id"),
    ("TeamAssignment", "pat_id", "Patient", "pat_id"),
    ("Study", "researcher_id", "Researcher", "researcher_id"),
    ("StudyPatient", "study_id", "Study", "study_id"),
    ("StudyPatient", "pat_id", "Patient", "pat_id"),
}
NULLABLE = {("Employee", "specialty")}  # every other column is NOT NULL


def _max_warfarin_per_cardiologist(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """(max warfarin prescriptions signed by one cardiologist, max warfarin orders in visits one attended)."""
    signed = con.execute(
        "SELECT max(n) FROM (SELECT P.prescriber_id, COUNT(*) AS n FROM Prescription P "
        "JOIN Employee E ON P.prescriber_id = E.employee_id "
        "WHERE P.medication = 'warfarin' AND E.specialty = 'Cardiology' GROUP BY P.prescriber_id)"
    ).fetchone()[0]
    attended = con.execute(
        "SELECT max(n) FROM (SELECT V.attending_id, COUNT(*) AS n FROM MedicationOrders M "
        "JOIN Visit V ON M.visit_id = V.visit_id JOIN Employee E ON V.attending_id = E.employee_id "
        "WHERE M.medication = 'warfarin' AND E.specialty = 'Cardiology' GROUP BY V.attending_id)"
    ).fetchone()[0]
    return int(signed), int(attended)


def _table_hashes(path: Path) -> dict[str, str]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        out = {}
        for table in TABLES:
            rows = con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()
            out[table] = hashlib.sha256(repr(rows).encode()).hexdigest()
        return out
    finally:
        con.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("demo") / "hospital.duckdb"
    info = create_demo(path, patients=1000, seed=0)
    con = duckdb.connect(str(path), read_only=True)
    yield info, con
    con.close()


def test_writes_every_table_with_rows(demo) -> None:
    info, con = demo
    assert tuple(info.rows) == TABLES
    assert all(n > 0 for n in info.rows.values()), info.rows
    assert info.rows["Patient"] == 1000
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert tables == set(TABLES)


def test_declared_keys_and_foreign_keys_match_the_schema(demo) -> None:
    _, con = demo
    rows = con.execute(
        "SELECT table_name, constraint_type, constraint_column_names, referenced_table, referenced_column_names "
        "FROM duckdb_constraints() WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY')"
    ).fetchall()
    pks = {t: tuple(cols) for t, kind, cols, _, _ in rows if kind == "PRIMARY KEY"}
    uniques = {(t, tuple(cols)) for t, kind, cols, _, _ in rows if kind == "UNIQUE"}
    fks = {(t, cols[0], rt, rcols[0]) for t, kind, cols, rt, rcols in rows if kind == "FOREIGN KEY" and rt}
    assert pks == PRIMARY_KEYS
    assert uniques == UNIQUE
    assert fks == FOREIGN_KEYS


def test_declared_not_null_matches_the_schema(demo) -> None:
    _, con = demo
    columns = con.execute("SELECT table_name, column_name, is_nullable FROM information_schema.columns").fetchall()
    for table, column, nullable in columns:
        assert (nullable == "YES") == ((table, column) in NULLABLE), (table, column, nullable)


def test_primary_and_unique_keys_hold(demo) -> None:
    _, con = demo
    keys = [*PRIMARY_KEYS.items(), *((t, cols) for t, cols in UNIQUE)]
    for table, cols in keys:
        key = ", ".join(cols)
        total, distinct = con.execute(f"SELECT COUNT(*), COUNT(DISTINCT ({key})) FROM {table}").fetchone()
        assert total == distinct, f"{table}({key}) has duplicates"


def test_foreign_keys_hold(demo) -> None:
    _, con = demo
    for table, column, ref, ref_column in FOREIGN_KEYS:
        orphans = con.execute(
            f"SELECT COUNT(*) FROM {table} t WHERE NOT EXISTS "
            f"(SELECT 1 FROM {ref} r WHERE r.{ref_column} = t.{column})"
        ).fetchone()[0]
        assert orphans == 0, f"{table}.{column} -> {ref}.{ref_column}: {orphans} orphans"


def test_no_nulls_and_specialty_only_for_physicians_and_residents(demo) -> None:
    _, con = demo
    for table in TABLES:
        for (column,) in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]
        ).fetchall():
            if (table, column) in NULLABLE:
                continue
            assert con.execute(f"SELECT COUNT(*) FROM {table} WHERE {column} IS NULL").fetchone()[0] == 0
    wrong = con.execute(
        "SELECT COUNT(*) FROM Employee WHERE (specialty IS NULL) <> (role NOT IN ('physician', 'resident'))"
    ).fetchone()[0]
    assert wrong == 0


def test_functional_dependency_and_hiv_diagnosis(demo) -> None:
    _, con = demo
    violating = con.execute(
        "SELECT COUNT(*) FROM (SELECT diagnosis FROM DxCategory GROUP BY diagnosis HAVING COUNT(DISTINCT hivstatus) > 1)"
    ).fetchone()[0]
    assert violating == 0
    assert con.execute("SELECT hivstatus FROM DxCategory WHERE diagnosis = 'HIV disease'").fetchone()[0] == "positive"
    assert 35 <= con.execute("SELECT COUNT(*) FROM DxCategory").fetchone()[0] <= 50
    assert con.execute("SELECT COUNT(*) FROM Visit WHERE diagnosis = 'HIV disease'").fetchone()[0] > 0


def test_every_prescription_signs_one_order_of_the_same_patient_and_specialty(demo) -> None:
    _, con = demo
    n_orders = con.execute("SELECT COUNT(*) FROM MedicationOrders").fetchone()[0]
    mismatched = con.execute(
        "SELECT COUNT(*) FROM Prescription P JOIN MedicationOrders M ON P.order_id = M.order_id "
        "JOIN Visit V ON M.visit_id = V.visit_id JOIN Employee A ON V.attending_id = A.employee_id "
        "JOIN Employee S ON P.prescriber_id = S.employee_id "
        "WHERE P.pat_id <> M.pat_id OR P.medication <> M.medication OR S.specialty <> A.specialty "
        "OR S.role <> 'physician' OR A.role <> 'physician' OR M.pat_id <> V.pat_id OR P.issued < V.visit_date"
    ).fetchone()[0]
    assert mismatched == 0
    assert con.execute("SELECT COUNT(*) FROM Prescription").fetchone()[0] == n_orders


def test_shape_is_realistic(demo) -> None:
    _, con = demo
    visits_per_patient = con.execute("SELECT COUNT(*) / COUNT(DISTINCT pat_id) FROM Visit").fetchone()[0]
    assert 2.5 <= visits_per_patient <= 3.5
    assert con.execute("SELECT COUNT(DISTINCT pat_id) FROM Visit").fetchone()[0] == 1000
    max_orders = con.execute("SELECT max(n) FROM (SELECT COUNT(*) AS n FROM MedicationOrders GROUP BY visit_id)").fetchone()[0]
    assert max_orders <= 4
    specialties = {r[0] for r in con.execute("SELECT DISTINCT specialty FROM Employee WHERE role = 'physician'").fetchall()}
    assert specialties == set(SPECIALTIES)
    assert con.execute("SELECT COUNT(*) FROM Employee").fetchone()[0] >= 40
    medications = con.execute("SELECT COUNT(DISTINCT medication) FROM MedicationOrders").fetchone()[0]
    assert medications >= 30
    # Warfarin is a cardiology drug: most warfarin orders come from cardiology visits.
    cardiology_share = con.execute(
        "SELECT avg(CASE WHEN E.specialty = 'Cardiology' THEN 1 ELSE 0 END) FROM MedicationOrders M "
        "JOIN Visit V USING (visit_id) JOIN Employee E ON V.attending_id = E.employee_id WHERE M.medication = 'warfarin'"
    ).fetchone()[0]
    assert cardiology_share > 0.5
    # Each discharge belongs to a visit of the same patient, on or after it.
    bad = con.execute(
        "SELECT COUNT(*) FROM Discharge D JOIN Visit V USING (visit_id) "
        "WHERE D.pat_id <> V.pat_id OR D.discharge_date <= V.visit_date"
    ).fetchone()[0]
    assert bad == 0
    # Every attending of a visit treats that patient.
    untreated = con.execute(
        "SELECT COUNT(*) FROM Visit V LEFT JOIN TreatingRelationship T "
        "ON T.employee_id = V.attending_id AND T.pat_id = V.pat_id WHERE T.role IS NULL"
    ).fetchone()[0]
    assert untreated == 0
    assert con.execute("SELECT COUNT(*) FROM TreatingRelationship WHERE role = 'consulting'").fetchone()[0] > 0
    assert con.execute("SELECT COUNT(*) FROM Study WHERE approved").fetchone()[0] > 0


def test_notes_mention_the_diagnosis_and_the_ordered_medications(demo) -> None:
    _, con = demo
    rows = con.execute(
        "SELECT V.note, lower(V.diagnosis), list(M.medication) FILTER (WHERE M.medication IS NOT NULL) "
        "FROM Visit V LEFT JOIN MedicationOrders M USING (visit_id) GROUP BY V.visit_id, V.note, V.diagnosis"
    ).fetchall()
    for note, diagnosis, medications in rows:
        assert diagnosis in note.lower()
        for medication in medications or []:
            assert medication in note


def test_indirect_supervision_exists(demo) -> None:
    _, con = demo
    chains = con.execute(
        "SELECT COUNT(*) FROM Supervises A JOIN Supervises B ON A.supervisee_id = B.supervisor_id "
        "JOIN Employee R ON B.supervisee_id = R.employee_id WHERE R.role = 'resident'"
    ).fetchone()[0]
    assert chains > 0
    residents_unsupervised = con.execute(
        "SELECT COUNT(*) FROM Employee E WHERE role = 'resident' "
        "AND NOT EXISTS (SELECT 1 FROM Supervises S WHERE S.supervisee_id = E.employee_id)"
    ).fetchone()[0]
    assert residents_unsupervised == 0


def test_pimento_toml_declares_privacy_root_and_fd(demo) -> None:
    info, _ = demo
    assert info.config_path == info.path.parent / "pimento.toml"
    with load_database(info.path) as database:
        catalog = database.catalog
        assert set(catalog.private_tables) == set(TABLES) - set(PUBLIC_TABLES)
        assert database.settings.privacy.root == "Patient"
        assert [str(fd) for fd in catalog.functional_dependencies] == ["DxCategory.(diagnosis) -> DxCategory.(hivstatus)"]
        assert validate_constraints(database) == []


@pytest.mark.parametrize(("patients", "seed"), [(500, 1), (1000, 0), (2000, 2)])
def test_the_two_formulations_agree_and_signatures_are_heavy_tailed(tmp_path: Path, patients: int, seed: int) -> None:
    path = tmp_path / "h.duckdb"
    create_demo(path, patients=patients, seed=seed)
    con = duckdb.connect(str(path), read_only=True)
    try:
        a = con.execute(DEMO_SQL_PRESCRIPTION).fetchone()[0]
        b = con.execute(DEMO_SQL_ORDERS).fetchone()[0]
        assert a == b
        assert a > 0
        signed, attended = _max_warfarin_per_cardiologist(con)
        assert signed >= 5 * attended, (signed, attended)
    finally:
        con.close()


def test_demo_question_constant() -> None:
    assert DEMO_QUESTION == "How many patients were prescribed warfarin by cardiologists?"


def test_same_seed_same_database_other_seed_other_database(tmp_path: Path) -> None:
    first = create_demo(tmp_path / "a" / "h.duckdb", patients=400, seed=7)
    second = create_demo(tmp_path / "b" / "h.duckdb", patients=400, seed=7)
    other = create_demo(tmp_path / "c" / "h.duckdb", patients=400, seed=8)
    assert _table_hashes(first.path) == _table_hashes(second.path)
    changed = {t for t, h in _table_hashes(other.path).items() if h != _table_hashes(first.path)[t]}
    assert {"Patient", "Visit", "MedicationOrders", "Prescription"} <= changed
    assert (tmp_path / "a" / "pimento.toml").read_text() == (tmp_path / "b" / "pimento.toml").read_text()


def test_tiny_sizes_build(tmp_path: Path) -> None:
    info = create_demo(tmp_path / "h.duckdb", patients=1, seed=3)
    assert info.rows["Patient"] == 1
    assert info.rows["Visit"] >= 1


def test_progress_reports_every_table(tmp_path: Path) -> None:
    calls: list[tuple[str, int, int]] = []
    create_demo(tmp_path / "h.duckdb", patients=50, progress=lambda *a: calls.append(a))
    assert [c[0] for c in calls[:2]] == ["sample", "sample"]
    assert sorted(c[0] for c in calls[2:]) == sorted(TABLES)  # tables load two at a time, in any order
    assert [c[1] for c in calls] == [0, *range(1, len(TABLES) + 2)]
    assert {c[2] for c in calls} == {len(TABLES) + 1}


def test_refuses_to_overwrite_unless_asked(tmp_path: Path) -> None:
    path = tmp_path / "h.duckdb"
    create_demo(path, patients=30)
    with pytest.raises(UserError, match="already exists"):
        create_demo(path, patients=30)
    info = create_demo(path, patients=40, overwrite=True)
    assert info.rows["Patient"] == 40
    assert not list(tmp_path.glob(".*tmp*")), "temporary files left behind"


def test_refuses_a_foreign_pimento_toml(tmp_path: Path) -> None:
    (tmp_path / "pimento.toml").write_text("[privacy]\nprivate = []\n")
    with pytest.raises(UserError, match=r"pimento.toml already exists"):
        create_demo(tmp_path / "h.duckdb", patients=10)
    assert not (tmp_path / "h.duckdb").exists()


@pytest.mark.parametrize("patients", [0, -5, 2.5, True])
def test_rejects_bad_patient_counts(tmp_path: Path, patients) -> None:
    with pytest.raises(UserError, match="positive integer"):
        create_demo(tmp_path / "h.duckdb", patients=patients)


def test_rejects_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(DataSourceError, match="is a directory"):
        create_demo(tmp_path, patients=10)
    (tmp_path / "file").write_text("x")
    with pytest.raises(DataSourceError, match="is a file, not a folder"):
        create_demo(tmp_path / "file" / "h.duckdb", patients=10)


def test_package_exports() -> None:
    import pimento.demo

    assert sorted(pimento.demo.__all__) == sorted(
        ["DEMO_QUESTION", "DEMO_SQL_ORDERS", "DEMO_SQL_PRESCRIPTION", "DemoInfo", "check_target", "create_demo"]
    )
    assert pimento.demo.create_demo is create_demo
