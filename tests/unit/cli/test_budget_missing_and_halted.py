"""`pimento budget` and `pimento audit` name a missing database as missing (no fresh budget, no file
created), and `pimento budget` shows when releases on the deployment are halted (issue 28)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pimento.cli.app import app
from pimento.config import LedgerSettings
from pimento.mechanisms import Ledger, guarded_release, ledger_path, mechanism_for

runner = CliRunner()


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.mark.parametrize("command", [["budget"], ["budget", "--json"], ["audit", "show"], ["audit", "verify"], ["audit", "resume"]])
def test_a_missing_database_is_named_missing_and_nothing_is_created(tmp_path, command) -> None:
    (tmp_path / "shop.duckdb").touch()
    (tmp_path / "pimento.toml").write_text('[ledger]\nepsilon_cap = "3"\n')
    before = _files(tmp_path)
    typo = tmp_path / "shpo.duckdb"
    result = runner.invoke(app, [*command, "--db", str(typo)])
    assert result.exit_code == 2, result.output
    said = " ".join(result.stderr.split()) if "--json" not in command else json.loads(result.stdout)["error"]["message"]
    assert f"database file not found: {typo}" in said and "Traceback" not in result.output
    assert _files(tmp_path) == before  # no ledger, no witness, no deployment file
    assert not ledger_path(str(typo)).exists()


def test_budget_shows_when_releases_are_halted_and_how_to_resume(tmp_path) -> None:
    db = tmp_path / "shop.duckdb"
    db.touch()
    (tmp_path / "pimento.toml").write_text('[ledger]\nepsilon_cap = "3"\n')
    with Ledger(ledger_path(str(db)), LedgerSettings(epsilon_cap="3")) as ledger:
        guarded_release(ledger, mechanism_for("0.5"), analyst="ann", database=str(db), sql="SELECT COUNT(*) FROM t", true_value=7, rs=1)
    going = runner.invoke(app, ["budget", "--db", str(db), "--json"])
    assert going.exit_code == 0, going.output
    assert json.loads(going.stdout)["halted"] is None
    with Ledger(ledger_path(str(db)), LedgerSettings(epsilon_cap="3")) as ledger:
        assert ledger.halt(str(db), {"error": "engine text: 17 rows"}) is True
    shown = runner.invoke(app, ["budget", "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.stdout.split())
    assert "releases halted since audit row 2" in text and "pimento audit resume --db DB" in text
    assert "17 rows" not in shown.stdout  # the halt's engine text stays in the audit log
    data = json.loads(runner.invoke(app, ["budget", "--db", str(db), "--json"]).stdout)
    assert data["halted"] == {"since_audit_row": 2, "halts": 1} and data["spent"]["epsilon"] == "0.5"
    assert runner.invoke(app, ["audit", "resume", "--db", str(db)]).exit_code == 0
    after = runner.invoke(app, ["budget", "--db", str(db)])
    assert after.exit_code == 0 and "halted" not in after.stdout
