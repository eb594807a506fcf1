"""`pimento keys` and `pimento serve`'s start-up checks."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pimento.cli.app import app
from pimento.cli.cmd_serve import is_loopback


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    from pimento.demo.hospital import create_demo

    path = tmp_path_factory.mktemp("keys") / "hospital.duckdb"
    create_demo(path, patients=50, seed=1)
    return path


def test_keys_add_prints_the_key_once_list_never_shows_it_revoke(db):
    runner = CliRunner()
    added = runner.invoke(app, ["keys", "add", "--db", str(db), "--analyst", "ann", "--principal", "employee:17"])
    assert added.exit_code == 0, added.output
    key = added.stdout.strip()
    assert key.startswith("pmk_") and "shown once" in added.stderr
    listed = runner.invoke(app, ["keys", "list", "--db", str(db), "--json"])
    entries = json.loads(listed.stdout)["keys"]
    assert key not in listed.stdout and entries[-1]["analyst"] == "ann" and entries[-1]["principal"] == "employee:17"
    key_file = db.parent / "hospital.duckdb.ledger.sqlite.keys.json"
    assert key_file.is_file() and key not in key_file.read_text()
    revoked = runner.invoke(app, ["keys", "revoke", "--db", str(db), "--id", entries[-1]["id"], "--json"])
    assert revoked.exit_code == 0 and json.loads(revoked.stdout)["revoked"]
    again = runner.invoke(app, ["keys", "revoke", "--db", str(db), "--id", entries[-1]["id"]])
    assert again.exit_code == 2 and "already revoked" in again.stderr


def test_keys_add_refuses_bad_input_cleanly(db):
    result = CliRunner().invoke(app, ["keys", "add", "--db", str(db), "--analyst", "ann", "--principal", "17"])
    assert result.exit_code == 2 and "invalid principal" in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize(("host", "loopback"), [("127.0.0.1", True), ("127.8.0.1", True), ("::1", True), ("localhost", True),
                                                 ("0.0.0.0", False), ("192.168.1.4", False), ("example.org", False), ("::", False)])
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback


def test_serve_refuses_a_non_loopback_host_without_allow_remote(db):
    result = CliRunner().invoke(app, ["serve", "--db", str(db), "--host", "0.0.0.0"])
    assert result.exit_code == 2
    text = " ".join(result.stderr.split())
    assert "not a loopback address" in text and "--allow-remote" in text and "plain HTTP" in text


def test_serve_refuses_a_short_custodian_token(db, monkeypatch):
    monkeypatch.setenv("PIMENTO_CUSTODIAN_TOKEN", "short")
    result = CliRunner().invoke(app, ["serve", "--db", str(db)])
    assert result.exit_code == 2 and "shorter than 32" in result.stderr


def test_serve_refuses_to_start_on_an_emptied_ledger_of_a_deployment_that_has_spent(tmp_path):
    from pimento.demo.hospital import create_demo
    from pimento.release.session import Session

    db = tmp_path / "hospital.duckdb"
    create_demo(db, patients=30, seed=2)
    with Session(db, analyst="ann") as session:
        session.release_sql("SELECT COUNT(*) FROM Patient", "0.5")
    ledger = tmp_path / "hospital.duckdb.ledger.sqlite"
    ledger.unlink()  # deleting the ledger must not give the budget back
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"hospital.duckdb.ledger.sqlite{suffix}").unlink(missing_ok=True)
    result = CliRunner().invoke(app, ["serve", "--db", str(db), "--port", "0"])
    assert result.exit_code == 2, result.output
    assert "missing or empty" in " ".join(result.stderr.split())
