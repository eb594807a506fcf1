"""``pimento budget`` and ``pimento audit`` on a ledger with a few releases."""

from __future__ import annotations

import json
import sqlite3

import pytest
from cli_support import command_app
import typer
from typer.testing import CliRunner

from pimento.cli import cmd_audit, cmd_budget
from pimento.config import LedgerSettings
from pimento.mechanisms import Ledger, guarded_release, ledger_path, mechanism_for


@pytest.fixture
def app() -> typer.Typer:
    return command_app(cmd_budget, cmd_audit)


@pytest.fixture
def db(tmp_path):
    db = tmp_path / "shop.duckdb"
    db.touch()  # the database exists: a ledger of a missing one is not shown
    (tmp_path / "pimento.toml").write_text('[ledger]\nepsilon_cap = "3"\nanalyst_share = "1"\nanalysts = ["ann", "bob"]\n')
    ledger = Ledger(ledger_path(str(db)), LedgerSettings(epsilon_cap="3", analyst_share="1", analysts=["ann", "bob"]))
    for i in range(3):
        guarded_release(ledger, mechanism_for("0.5"), analyst="ann", database=str(db), sql=f"SELECT COUNT(*) FROM t WHERE a = {i}", true_value=7, rs=1)
    ledger.close()
    return str(db)


def test_budget_json_shows_caps_spent_left(app, db):
    result = CliRunner().invoke(app, ["budget", "--db", db, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["cap"]["epsilon"] == "3" and data["spent"]["epsilon"] == "1.5" and data["left"]["epsilon"] == "1.5"
    rows = {r["analyst"]: r for r in data["analysts"]}
    assert rows["ann"]["left"]["epsilon"] == "1.5" and rows["bob"]["spent"]["epsilon"] == "0"


def test_budget_of_a_fresh_database_creates_no_file(app, tmp_path):
    db = tmp_path / "new.duckdb"
    db.touch()
    result = CliRunner().invoke(app, ["budget", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "no spend yet" in result.stdout
    assert not ledger_path(str(db)).exists()


def test_audit_verify_ok_then_tampered(app, db):
    ok = CliRunner().invoke(app, ["audit", "verify", "--db", db, "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["rows"] == 3
    conn = sqlite3.connect(ledger_path(db), isolation_level=None)
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("UPDATE audit SET row = replace(row, '\"epsilon\":\"0.5\"', '\"epsilon\":\"0.05\"') WHERE seq = 2")
    conn.close()
    bad = CliRunner().invoke(app, ["audit", "verify", "--db", db])
    assert bad.exit_code == 1
    assert "edited" in bad.output


def test_audit_show_lists_releases(app, db):
    result = CliRunner().invoke(app, ["audit", "show", "--db", db, "--json", "--limit", "2"])
    rows = json.loads(result.stdout)
    assert [r["seq"] for r in rows] == [2, 3] and rows[0]["analyst"] == "ann"
    human = CliRunner().invoke(app, ["audit", "show", "--db", db])
    assert human.exit_code == 0 and "SELECT" in human.stdout


def test_bad_config_is_one_clear_line(app, tmp_path):
    (tmp_path / "pimento.toml").write_text('[ledger]\nepsilon_cpa = "3"\n')
    (tmp_path / "x.duckdb").touch()  # the database exists (a missing one is refused first, by name)
    result = CliRunner().invoke(app, ["budget", "--db", str(tmp_path / "x.duckdb")])
    assert result.exit_code == 2
    assert "epsilon_cap" in result.output and "Traceback" not in result.output
