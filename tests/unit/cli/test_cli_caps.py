"""Issue 28, item 4: `pimento serve` states the caps at start-up; `pimento budget` says which cap binds;
`pimento audit show` shows each release's mode."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pimento.cli.app import app
from pimento.mechanisms import Budget, Ledger, guarded_release, ledger_path, mechanism_for


@pytest.fixture
def shop(tmp_path):
    from pimento.demo.hospital import create_demo

    db = tmp_path / "hospital.duckdb"
    create_demo(db, patients=30, seed=1)
    with open(tmp_path / "pimento.toml", "a", encoding="utf-8") as fh:
        fh.write('\n[ledger]\nepsilon_cap = "4"\nanalyst_share = "0.5"\n')
    return db


def _stderr(result) -> str:
    return " ".join(getattr(result, "stderr", result.output).split())


def test_serve_states_the_caps_at_start_up(shop, monkeypatch):
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: None)
    result = CliRunner().invoke(app, ["serve", "--db", str(shop), "--port", "0"])
    assert result.exit_code == 0, result.output
    assert ("budget: each analyst may spend epsilon 2 ([ledger] analyst_share = 0.5 of the database cap); "
            "database cap epsilon 4, delta 1e-5 for all analysts together") in _stderr(result)


def test_budget_says_which_cap_binds_per_analyst(shop):
    with Ledger(ledger_path(str(shop.resolve()))) as ledger:
        ledger.charge("ann", str(shop.resolve()), Budget.spend("2"))
        ledger.charge("bob", str(shop.resolve()), Budget.spend("1.5"))
    result = CliRunner().invoke(app, ["budget", "--db", str(shop), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    binds = {row["analyst"]: (row["left"]["epsilon"], row["binds"]) for row in data["analysts"]}
    assert binds == {"ann": ("0", "analyst"), "bob": ("0.5", "analyst")}
    assert "analyst_share = 0.5" in data["analyst_caps"]
    with Ledger(ledger_path(str(shop.resolve()))) as ledger:
        ledger.charge("carl", str(shop.resolve()), Budget.spend("0.25"))
    data = json.loads(CliRunner().invoke(app, ["budget", "--db", str(shop), "--json"]).stdout)
    binds = {row["analyst"]: (row["left"]["epsilon"], row["binds"]) for row in data["analysts"]}
    assert binds["carl"] == ("0.25", "database")  # own cap leaves 1.75, the database 0.25
    table = CliRunner().invoke(app, ["budget", "--db", str(shop)])
    assert "database cap" in table.stdout and "own cap" in table.stdout and "caps: each analyst may spend epsilon 2" in " ".join(table.stdout.split())


def test_audit_show_names_each_releases_mode(shop):
    with Ledger(ledger_path(str(shop.resolve()))) as ledger:
        guarded_release(ledger, mechanism_for("0.5"), analyst="ann", database=str(shop.resolve()), sql="SELECT 1", true_value=3, rs=1,
                        mode="contextual:policy:employee:1|employee:1|treatment")
    result = CliRunner().invoke(app, ["audit", "show", "--db", str(shop)])
    assert result.exit_code == 0, result.output
    assert "contextual" in result.stdout and "policy:employee" not in result.stdout  # the mode's name; --json has the rest
