"""`pimento catalog` on a Typer app holding only this command (independent of the other commands)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cli_support import command_app
import typer
from typer.testing import CliRunner

from pimento.cli import _common, cmd_catalog


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Rich console is created at import time: its width, not COLUMNS, decides the wrapping."""
    monkeypatch.setattr(_common.console, "width", 200)


@pytest.fixture
def app() -> typer.Typer:
    return command_app(cmd_catalog)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "clinic.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE Patient (pid INTEGER PRIMARY KEY, email TEXT UNIQUE, zip TEXT NOT NULL)")
    con.execute("CREATE TABLE Visit (vid INTEGER PRIMARY KEY, pid INTEGER REFERENCES Patient (pid), ward TEXT)")
    con.execute("CREATE TABLE Ward (name TEXT, floor INTEGER)")
    con.execute("INSERT INTO Patient VALUES (1, 'a@x', '1'), (2, 'b@x', '2')")
    con.execute("INSERT INTO Visit VALUES (10, 1, 'A'), (11, 3, 'B')")
    con.execute("INSERT INTO Ward VALUES ('A', 1), ('B', 2)")
    con.commit()
    con.close()
    (tmp_path / "pimento.toml").write_text(
        '[privacy]\npublic = ["Ward"]\n'
        '[[constraints.functional_dependencies]]\nlhs = "Ward.name"\nrhs = "Ward.floor"\n',
        encoding="utf-8",
    )
    return path


def test_json_is_the_catalog_dict(app: typer.Typer, db: Path) -> None:
    result = CliRunner().invoke(app, ["catalog", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["engine"] == "sqlite"
    tables = {t["name"]: t for t in payload["tables"]}
    assert tables["Patient"]["private"] is True and tables["Ward"]["private"] is False
    assert tables["Patient"]["primary_key"] == ["pid"]
    assert tables["Patient"]["unique"] == [["email"]]
    assert {c["name"]: c["nullable"] for c in tables["Patient"]["columns"]}["zip"] is False
    assert payload["foreign_keys"] == [
        {"table": "Visit", "columns": ["pid"], "ref_table": "Patient", "ref_columns": ["pid"], "declared": False}
    ]
    assert payload["functional_dependencies"] == [{"table": "Ward", "lhs": ["name"], "rhs": ["floor"]}]
    assert "violations" not in payload


def test_private_option_only_adds_private_relations(app: typer.Typer, db: Path) -> None:
    # Before: --private replaced pimento.toml's marking, so Patient became public here.
    result = CliRunner().invoke(app, ["catalog", "--db", str(db), "--private", "visit,ward", "--json"])
    assert result.exit_code == 0, result.output
    tables = {t["name"]: t for t in json.loads(result.stdout)["tables"]}
    assert {name for name, t in tables.items() if t["private"]} == {"Patient", "Visit", "Ward"}
    assert tables["Ward"]["private_reason"] == "added by --private"


def test_json_and_text_say_why_each_relation_is_private_or_public(app: typer.Typer, db: Path) -> None:
    result = CliRunner().invoke(app, ["catalog", "--db", str(db), "--json"])
    reasons = {t["name"]: t["private_reason"] for t in json.loads(result.stdout)["tables"]}
    assert reasons == {
        "Patient": "not in privacy.public (private by default)",
        "Visit": "not in privacy.public (private by default)",
        "Ward": "listed in privacy.public",
    }
    text = CliRunner().invoke(app, ["catalog", "--db", str(db)]).stdout
    assert "listed in privacy.public" in text and "private by default" in text


def test_check_is_a_custodian_tool_written_to_the_audit_log(app: typer.Typer, db: Path) -> None:
    from pimento.mechanisms import Ledger

    result = CliRunner().invoke(app, ["catalog", "--db", str(db), "--check"])
    assert result.exit_code == 1
    assert "custodian tool" in result.stderr
    with Ledger.for_database(str(db)) as ledger:
        (row,) = [r for r in ledger.audit_rows() if r.get("kind") == "custodian"]
    assert row["tool"] == "catalog --check"
    assert row["details"]["failing"] == ["foreign key Visit(pid) -> Patient(pid)"]


def test_rich_view_lists_relations_keys_and_flags(app: typer.Typer, db: Path) -> None:
    result = CliRunner().invoke(app, ["catalog", "--db", str(db)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for text in ("Patient", "private", "public", "Visit(pid) -> Patient(pid)", "Ward.(name) -> Ward.(floor)", "zip TEXT NOT NULL"):
        assert text in result.stdout


def test_check_reports_violations_and_exits_1(app: typer.Typer, db: Path) -> None:
    result = CliRunner().invoke(app, ["catalog", "--db", str(db), "--check", "--json"])
    assert result.exit_code == 1, result.output
    (violation,) = json.loads(result.stdout)["violations"]
    assert (violation["kind"], violation["count"], violation["examples"]) == ("foreign_key", 1, [3])
    human = CliRunner().invoke(app, ["catalog", "--db", str(db), "--check"], env={"COLUMNS": "200"})
    assert human.exit_code == 1
    assert "violation: foreign key Visit(pid) -> Patient(pid) fails: 1 row(s)" in human.stdout


def test_check_passes_when_constraints_hold(app: typer.Typer, db: Path, tmp_path: Path) -> None:
    con = sqlite3.connect(db)
    con.execute("DELETE FROM Visit WHERE pid = 3")
    con.commit()
    con.close()
    result = CliRunner().invoke(app, ["catalog", "--db", str(db), "--check"])
    assert result.exit_code == 0, result.output
    assert "all constraints hold" in result.stdout


def test_unknown_private_relation_is_one_line_error(app: typer.Typer, db: Path) -> None:
    result = CliRunner().invoke(app, ["catalog", "--db", str(db), "--private", "Patinet"])
    assert result.exit_code == 2
    assert "did you mean 'Patient'" in result.stderr
    assert "Traceback" not in result.output


def test_missing_database_is_one_line_error(app: typer.Typer, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["catalog", "--db", str(tmp_path / "nope.duckdb")])
    assert result.exit_code == 2
    assert "database file not found" in result.stderr
