"""load_database: engine + pimento.toml + validation of declared constraints on the data."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import pytest

from pimento.config import settings_from_dict
from pimento.engines.database import Database, load_database, validate_constraints
from pimento.errors import CatalogError, ConfigError, ConstraintViolation, DataSourceError, EngineError

DDL = (
    "CREATE TABLE Patient (patient_id INTEGER PRIMARY KEY, name TEXT NOT NULL, zip TEXT)",
    "CREATE TABLE Employee (employee_id INTEGER PRIMARY KEY, email TEXT)",
    "CREATE TABLE Prescription (patient_id INTEGER REFERENCES Patient (patient_id), employee_id INTEGER, drug TEXT)",
    "CREATE TABLE DxCategory (diagnosis TEXT, hivstatus TEXT)",
    "INSERT INTO Patient VALUES (1, 'ann', '10001'), (2, 'bob', '10002'), (3, 'cy', '10002')",
    "INSERT INTO Employee VALUES (7, 'a@h.org'), (8, 'b@h.org'), (9, 'a@h.org')",
    "INSERT INTO Prescription VALUES (1, 7, 'x'), (2, 8, 'y'), (2, 42, 'z'), (3, 43, 'z'), (3, 43, 'w'), (1, NULL, 'v')",
    "INSERT INTO DxCategory VALUES ('flu', 'neg'), ('hiv', 'pos'), ('hiv', 'neg'), ('flu', 'neg'), ('cold', NULL)",
)


@pytest.fixture(params=["duckdb", "sqlite"])
def db_path(request, tmp_path: Path) -> Path:
    if request.param == "duckdb":
        path = tmp_path / "hospital.duckdb"
        con = duckdb.connect(str(path))
    else:
        path = tmp_path / "hospital.sqlite"
        con = sqlite3.connect(path)
    for statement in DDL:
        con.execute(statement)
    con.commit()
    con.close()
    return path


def _toml(db_path: Path, text: str) -> Path:
    path = db_path.parent / "pimento.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_without_pimento_toml_every_relation_is_private(db_path: Path) -> None:
    with load_database(db_path) as db:
        assert isinstance(db, Database)
        assert set(db.catalog.private_tables) == {"Patient", "Employee", "Prescription", "DxCategory"}
        assert db.location == str(db_path)
        assert db.engine.read_only
        assert db.settings.constraints.validate_on_load is True


def test_opened_read_only_refuses_writes(db_path: Path) -> None:
    with load_database(db_path) as db, pytest.raises(EngineError, match=r"(?i)read.?only"):
        db.engine.execute("DELETE FROM Patient")


def test_pimento_toml_beside_the_file_is_merged(db_path: Path) -> None:
    _toml(
        db_path,
        """
[privacy]
public = ["dxcategory"]

[[constraints.unique]]
columns = "Patient.(name)"

[[constraints.foreign_keys]]
from = "prescription.PATIENT_ID"
to = "patient.patient_id"
""",
    )
    with load_database(db_path) as db:
        assert "DxCategory" not in db.catalog.private_tables
        assert db.catalog.table("Patient").is_key(["name"])
        assert db.settings.privacy.public == ["dxcategory"]


def test_private_argument_adds_to_the_file_and_never_removes(db_path: Path) -> None:
    # Before: private= replaced the custodian's list, so Patient became public here.
    _toml(db_path, '[privacy]\nprivate = ["Patient"]\npublic = ["Employee", "DxCategory"]\n')
    with load_database(db_path, private=["Employee", "prescription"]) as db:
        assert set(db.catalog.private_tables) == {"Patient", "Employee", "Prescription"}
    with pytest.raises(CatalogError, match="--private"):
        load_database(db_path, private=["Patinet"])


def test_config_argument_is_used_instead_of_the_file_beside(db_path: Path, tmp_path: Path) -> None:
    # Custodian tools only (see load_database): settings other than the file beside the data.
    _toml(db_path, '[privacy]\nprivate = ["Nope"]\n')
    other = tmp_path / "elsewhere.toml"
    other.write_text('[privacy]\npublic = ["Employee", "Prescription", "DxCategory"]\n', encoding="utf-8")
    with load_database(db_path, config=other) as db:
        assert db.catalog.private_tables == ("Patient",)
    with load_database(db_path, config=settings_from_dict({"privacy": {"public": ["Patient"]}})) as db:
        assert "Patient" not in db.catalog.private_tables


def test_folder_with_pimento_toml_names_the_database(db_path: Path) -> None:
    _toml(db_path, f'[database]\npath = "{db_path.name}"\n[privacy]\npublic = ["Employee", "Prescription", "DxCategory"]\n')
    with load_database(db_path.parent) as db:
        assert db.catalog.private_tables == ("Patient",)
    with load_database(db_path.parent / "pimento.toml") as db:
        assert db.catalog.private_tables == ("Patient",)


def test_a_pimento_toml_elsewhere_cannot_govern_the_database(db_path: Path, tmp_path: Path) -> None:
    # Before: a folder whose pimento.toml named someone else's database put its own ledger, caps
    # and public relations on it (the analyst's route around the custodian's settings).
    _toml(db_path, '[ledger]\nepsilon_cap = "1"\n')
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "pimento.toml").write_text(
        f'[database]\npath = "{db_path}"\n[ledger]\nepsilon_cap = "1000000"\n[privacy]\npublic = ["Patient"]\n',
        encoding="utf-8",
    )
    for named in (mine, mine / "pimento.toml"):
        with pytest.raises(ConfigError, match="not beside this pimento.toml"):
            load_database(named)
    # A link in the analyst's folder to the database is no better: the real file's folder counts.
    (mine / "pimento.toml").write_text(f'[database]\npath = "{db_path.name}"\n', encoding="utf-8")
    (mine / db_path.name).symlink_to(db_path)
    with pytest.raises(ConfigError, match="not beside this pimento.toml"):
        load_database(mine)


def test_a_missing_database_beside_its_pimento_toml_is_not_found(tmp_path: Path) -> None:
    (tmp_path / "pimento.toml").write_text('[database]\npath = "absent.duckdb"\n', encoding="utf-8")
    with pytest.raises(DataSourceError, match="not found"):
        load_database(tmp_path)


def test_settings_are_read_beside_the_target_of_a_symbolic_link(db_path: Path, tmp_path: Path) -> None:
    _toml(db_path, '[privacy]\npublic = ["Employee", "Prescription", "DxCategory"]\n')
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "pimento.toml").write_text('[privacy]\npublic = ["Patient"]\n', encoding="utf-8")
    link = mine / db_path.name
    link.symlink_to(db_path)
    with load_database(link) as db:
        assert db.catalog.private_tables == ("Patient",)
        # The location keys the ledger beside it: the link must not reach a fresh ledger.
        assert db.location == str(db_path.resolve())


def test_typo_in_pimento_toml_is_one_line_config_error(db_path: Path) -> None:
    _toml(db_path, '[privacy]\nprivat = ["Patient"]\n')
    with pytest.raises(ConfigError) as info:
        load_database(db_path)
    line = info.value.one_line()
    assert "\n" not in line
    assert "unknown key 'privacy.privat'" in line
    assert "did you mean 'private'" in line


def test_invalid_toml_is_config_error(db_path: Path) -> None:
    _toml(db_path, "[privacy\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_database(db_path)


def test_unknown_table_names_the_entry_and_suggests(db_path: Path) -> None:
    _toml(db_path, '[[constraints.unique]]\ncolumns = "Employe.email"\n')
    with pytest.raises(CatalogError) as info:
        load_database(db_path)
    line = info.value.one_line()
    assert "pimento.toml: constraints.unique[0].columns = 'Employe.email'" in line
    assert "did you mean 'Employee'" in line


def test_unknown_column_names_the_entry_and_suggests(db_path: Path) -> None:
    _toml(db_path, '[[constraints.functional_dependencies]]\nlhs = "DxCategory.diagnosis"\nrhs = "DxCategory.hiv_status"\n')
    with pytest.raises(CatalogError) as info:
        load_database(db_path)
    line = info.value.one_line()
    assert "constraints.functional_dependencies[0].rhs = 'DxCategory.hiv_status'" in line
    assert "did you mean 'hivstatus'" in line


#: Values and counts of DDL that must never appear in a load error (they are private data).
_DATA = ("a@h.org", "42", "43", "'hiv'", "'pos'", "'neg'", "'ann'", "'bob'")


def _no_data_in(error: ConstraintViolation) -> None:
    line = error.one_line().split("pimento.toml:", 1)[1]  # the path before it is the test's folder
    assert not any(value in line for value in _DATA), line
    assert not any(ch.isdigit() for ch in line), line  # no count either
    assert error.examples == ()


def test_violated_unique_names_the_declaration_and_no_data(db_path: Path) -> None:
    # Before: "1 duplicate key value(s), e.g. 'a@h.org'", with examples on the exception.
    _toml(db_path, '[[constraints.unique]]\ncolumns = "Employee.email"\n')
    with pytest.raises(ConstraintViolation) as info:
        load_database(db_path)
    assert info.value.constraint == "Employee(email)"
    assert "declared unique Employee(email) does not hold on the data" in info.value.one_line()
    assert "pimento catalog" in info.value.one_line()
    _no_data_in(info.value)


def test_violated_foreign_key_names_the_declaration_and_no_data(db_path: Path) -> None:
    _toml(
        db_path,
        '[[constraints.foreign_keys]]\nfrom = "Prescription.employee_id"\nto = "Employee.employee_id"\n',
    )
    with pytest.raises(ConstraintViolation) as info:
        load_database(db_path)
    assert "declared foreign key Prescription(employee_id) -> Employee(employee_id) does not hold" in info.value.one_line()
    _no_data_in(info.value)


def test_violated_functional_dependency_names_the_declaration_and_no_data(db_path: Path) -> None:
    # Before: the message carried the count of offending groups and the values ('hiv').
    _toml(db_path, '[[constraints.functional_dependencies]]\nlhs = "DxCategory.diagnosis"\nrhs = "DxCategory.hivstatus"\n')
    with pytest.raises(ConstraintViolation) as info:
        load_database(db_path)
    assert info.value.constraint == "DxCategory.(diagnosis) -> DxCategory.(hivstatus)"
    assert "declared functional dependency DxCategory.(diagnosis) -> DxCategory.(hivstatus) does not hold" in (
        info.value.one_line()
    )
    _no_data_in(info.value)


def test_several_violations_are_all_named(db_path: Path) -> None:
    _toml(
        db_path,
        '[[constraints.unique]]\ncolumns = "Employee.email"\n'
        '[[constraints.functional_dependencies]]\nlhs = "DxCategory.diagnosis"\nrhs = "DxCategory.hivstatus"\n',
    )
    with pytest.raises(ConstraintViolation) as info:
        load_database(db_path)
    line = info.value.one_line()
    assert "declared unique Employee(email); declared functional dependency DxCategory" in line and " do not hold" in line


def test_the_custodian_tool_still_sees_counts_and_examples(db_path: Path) -> None:
    _toml(
        db_path,
        '[constraints]\nvalidate_on_load = false\n'
        '[[constraints.foreign_keys]]\nfrom = "Prescription.employee_id"\nto = "Employee.employee_id"\n'
        '[[constraints.functional_dependencies]]\nlhs = "DxCategory.diagnosis"\nrhs = "DxCategory.hivstatus"\n',
    )
    with load_database(db_path) as db:
        found = {v.kind: v for v in validate_constraints(db)}
    # Rows (2, 42), (3, 43), (3, 43) have no employee; the NULL row is not an orphan.
    assert (found["foreign_key"].count, found["foreign_key"].examples) == (3, (42, 43))
    assert "3 row(s) reference a missing parent" in found["foreign_key"].message
    assert (found["functional_dependency"].count, found["functional_dependency"].examples) == (1, ("hiv",))


def test_holding_constraints_load_and_validate_on_load_can_be_off(db_path: Path) -> None:
    _toml(db_path, '[[constraints.functional_dependencies]]\nlhs = "Patient.patient_id"\nrhs = "Patient.(zip, name)"\n')
    with load_database(db_path) as db:
        assert len(db.catalog.functional_dependencies) == 1
    _toml(db_path, '[constraints]\nvalidate_on_load = false\n[[constraints.unique]]\ncolumns = "Employee.email"\n')
    with load_database(db_path) as db:
        assert db.catalog.table("Employee").is_key(["email"])


def test_validate_constraints_checks_engine_declared_ones(tmp_path: Path) -> None:
    # SQLite enforces neither foreign keys (by default) nor NOT NULL on non-INTEGER primary keys.
    path = tmp_path / "loose.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE p (code TEXT PRIMARY KEY)")
    con.execute("CREATE TABLE c (id INTEGER PRIMARY KEY, code TEXT REFERENCES p (code))")
    con.execute("INSERT INTO p VALUES ('a'), (NULL), (NULL)")
    con.execute("INSERT INTO c VALUES (1, 'a'), (2, 'b'), (3, 'b'), (4, NULL)")
    con.commit()
    con.close()
    with load_database(path) as db:
        found = {(v.kind, v.constraint): v for v in validate_constraints(db)}
    assert set(found) == {("primary_key", "p(code)"), ("foreign_key", "c(code) -> p(code)")}
    nulls = found[("primary_key", "p(code)")]
    assert (nulls.count, nulls.examples) == (2, (None,))  # two rows with a NULL key
    orphans = found[("foreign_key", "c(code) -> p(code)")]
    assert (orphans.count, orphans.examples, orphans.declared) == (2, ("b",), False)
    assert orphans.to_dict()["message"].startswith("foreign key c(code) -> p(code) fails: 2 row(s)")


def test_validate_constraints_is_empty_when_all_hold(db_path: Path) -> None:
    with load_database(db_path) as db:
        assert validate_constraints(db) == []


def test_missing_database_is_data_source_error(tmp_path: Path) -> None:
    with pytest.raises(DataSourceError, match="not found"):
        load_database(tmp_path / "absent.duckdb")


def test_folder_without_database_section_is_config_error(tmp_path: Path) -> None:
    (tmp_path / "pimento.toml").write_text('[privacy]\nprivate = ["x"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="neither path nor url"):
        load_database(tmp_path)


def test_memory_limit_and_threads_come_from_pimento_toml(db_path: Path) -> None:
    _toml(db_path, '[database]\nmemory_limit = "1GB"\nthreads = 1\n')
    with load_database(db_path) as db:
        if db.engine.name == "duckdb":
            assert db.engine.execute("SELECT current_setting('memory_limit')").scalar() == "953.6 MiB"
            assert db.engine.execute("SELECT current_setting('threads')").scalar() == 1
        else:
            probe = sqlite3.connect(":memory:")  # SQLite's heap limit is per process
            try:
                assert 0 < probe.execute("PRAGMA hard_heap_limit").fetchone()[0] <= 1_000_000_000
            finally:
                probe.close()


def test_a_bad_memory_limit_in_pimento_toml_is_a_config_error(db_path: Path) -> None:
    _toml(db_path, '[database]\nmemory_limit = "plenty"\n')
    with pytest.raises(ConfigError, match="not a size"):
        load_database(db_path)
