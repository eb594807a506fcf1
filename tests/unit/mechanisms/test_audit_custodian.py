"""Custodian tools are marked as such and every use is written to the audit log (issue 18, finding 3)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from db_support import duckdb_file
from typer.testing import CliRunner

from pimento.cli.app import app
from pimento.config import LedgerSettings
from pimento.mechanisms import Budget, Ledger, ledger_path, mechanism_for
from pimento.mechanisms.ledger import witness_path

SQL = "SELECT COUNT(*) FROM P JOIN V ON P.id = V.p WHERE V.dx = 'hiv'"


@pytest.fixture()
def clinic(tmp_path):
    path = duckdb_file(tmp_path / "clinic.duckdb", (
        "CREATE TABLE P (id INTEGER PRIMARY KEY, name TEXT)",
        "CREATE TABLE V (id INTEGER PRIMARY KEY, p INTEGER REFERENCES P(id), dx TEXT)",
        "INSERT INTO P VALUES (1, 'a'), (2, 'b')",
        "INSERT INTO V VALUES (1, 1, 'hiv'), (2, 1, 'hiv'), (3, 1, 'hiv'), (4, 2, 'flu')",
    ))
    (tmp_path / "pimento.toml").write_text('[privacy]\nprivate = ["P", "V"]\n')
    return path


def runner() -> CliRunner:
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 keeps stderr apart already
        return CliRunner()


def test_sensitivity_is_marked_and_every_run_is_audited(clinic):
    help_text = runner().invoke(app, ["sensitivity", "--help"]).output
    assert "custodian tool: shows private data, not for analysts" in " ".join(help_text.lower().split())
    result = runner().invoke(app, ["sensitivity", "--db", str(clinic), "--beta", "0.1", "--sql", SQL, "--json"])
    assert result.exit_code == 0, result.output
    assert "custodian tool" in result.stderr and "custodian tool" not in result.stdout
    assert json.loads(result.stdout)["rs"] > 0
    with Ledger(ledger_path(str(clinic)), LedgerSettings()) as ledger:
        rows = ledger.audit_rows()
        assert [(r["kind"], r["tool"]) for r in rows] == [("custodian", "sensitivity")]
        assert rows[0]["details"]["sql"] == SQL and "T_E" in rows[0]["details"]["result"]
        assert ledger.charges() == [] and ledger.verify_audit().ok
    # a failing run is recorded too
    bad = runner().invoke(app, ["sensitivity", "--db", str(clinic), "--beta", "0.1", "--sql", "SELECT COUNT(*) FROM Nope"])
    assert bad.exit_code == 2
    with Ledger(ledger_path(str(clinic)), LedgerSettings()) as ledger:
        rows = ledger.audit_rows()
        assert len(rows) == 2 and "error" in rows[1]["details"]


def test_audit_show_and_verify_read_custodian_and_abort_rows(clinic):
    with Ledger(ledger_path(str(clinic)), LedgerSettings()) as ledger:
        ledger.record_custodian_action(str(clinic), "sensitivity", {"sql": SQL})
    shown = runner().invoke(app, ["audit", "show", "--db", str(clinic)])
    assert shown.exit_code == 0, shown.output
    assert "custodian tool" in shown.stderr  # the log holds private details of releases
    rows = json.loads(runner().invoke(app, ["audit", "show", "--db", str(clinic), "--json"]).stdout)
    assert [(r["kind"], r["tool"]) for r in rows] == [("custodian", "sensitivity")]
    verified = runner().invoke(app, ["audit", "verify", "--db", str(clinic), "--json"])
    assert verified.exit_code == 0 and json.loads(verified.stdout)["ok"]


def test_budget_and_audit_refuse_a_deleted_ledger(clinic):
    with Ledger(ledger_path(str(clinic)), LedgerSettings()) as ledger:
        ledger.charge_synthetic(str(clinic), Budget.spend("1", "1e-6"), copy_id="c1")
    ledger_path(str(clinic)).unlink()
    assert witness_path(ledger_path(str(clinic))).exists()
    for args in (["budget"], ["audit", "verify"], ["audit", "show"]):
        result = runner().invoke(app, [*args, "--db", str(clinic)])
        assert result.exit_code == 2, (args, result.output)
        assert "witness" in result.output
    assert not ledger_path(str(clinic)).exists()  # looking created nothing


def test_sensitivity_epsilon_gives_the_beta_a_release_uses(clinic):
    """--epsilon E --delta D computes RS at the beta of a release at (E, D), after the RS-bound share."""
    result = runner().invoke(app, ["sensitivity", "--db", str(clinic), "--epsilon", "1", "--delta", "1e-6", "--sql", SQL, "--json"])
    assert result.exit_code == 0, result.output
    beta = json.loads(result.stdout)["beta"]
    release_beta = mechanism_for("1", "1e-6", share="0.1").beta_float()
    assert beta == release_beta
    # The full-epsilon beta (the old derivation) is larger by the share: not what a release uses.
    assert beta < float(Fraction(1) / (2 * 15.201804919084164))
