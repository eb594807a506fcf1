"""The service on a damaged or halted ledger and on a replaced database file (issue 23, findings 11 and 12).

A damaged ledger is a 503 with the fixed ledger body (it was a 500) and ``serve`` refuses to start
on it (it started); ``serve`` refuses to start while the deployment is halted; a database file
replaced under the running service is refused with a 503 and nothing charged (it was answered from
the old data, which DuckDB keeps open).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from db_support import SHOP, duckdb_file, overwrite_root_page
from service_support import TESTCLIENT_WARNING
from typer.testing import CliRunner

from pimento.cli.app import app
from pimento.errors import LedgerIntegrityError
from pimento.mechanisms import Ledger, ledger_path
from pimento.mechanisms import ledger as ledger_mod

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)

COUNT = "SELECT COUNT(*) FROM orders"


@pytest.fixture(autouse=True)
def _no_halt_left_behind():
    yield
    ledger_mod._UNRECORDED_HALTS.clear()


@pytest.fixture
def shop(tmp_path) -> Path:
    path = duckdb_file(tmp_path / "shop.duckdb", SHOP)
    (tmp_path / "pimento.toml").write_text('[ledger]\nepsilon_cap = "100"\n')
    return path


def serve(db: Path):
    """(deployment, TestClient, headers) for ``db``, held open as ``pimento serve`` holds it."""
    from fastapi.testclient import TestClient

    from pimento.service.app import ServiceOptions, create_app
    from pimento.service.deployment import Deployment

    deployment = Deployment(db)
    deployment.hold_open()
    _entry, key = deployment.add_key("ann")
    client = TestClient(create_app(deployment, ServiceOptions(rate=1000.0, burst=1000)), raise_server_exceptions=False)
    return deployment, client, {"Authorization": f"Bearer {key}"}


def _charges(db: Path) -> int:
    con = sqlite3.connect(ledger_path(str(db)))
    try:
        return int(con.execute("SELECT COUNT(*) FROM charges").fetchone()[0])
    finally:
        con.close()


def test_a_damaged_ledger_is_a_503_with_the_fixed_body(shop):
    deployment, client, headers = serve(shop)
    try:
        assert client.post("/v1/sql", headers=headers, json={"sql": COUNT, "epsilon": "0.5"}).status_code == 200
        overwrite_root_page(ledger_path(str(shop)), "charges")
        r = client.post("/v1/sql", headers=headers, json={"sql": COUNT + " WHERE oid > 3", "epsilon": "0.5"})
        assert r.status_code == 503, r.text
        assert r.json()["error"]["type"] == "LedgerIntegrityError" and "malformed" not in r.text
    finally:
        deployment.close()


def test_serve_refuses_to_start_on_a_damaged_ledger(shop, monkeypatch):
    """The damage is in the audit log, which no charge reads: only a full read at start finds it."""
    import uvicorn

    with Ledger(ledger_path(str(shop))) as ledger:
        from pimento.mechanisms import guarded_release, mechanism_for

        for i in range(5):
            guarded_release(ledger, mechanism_for("0.1"), analyst="ann", database=str(shop), sql=f"SELECT {i}", true_value=1, rs=1)
    overwrite_root_page(ledger_path(str(shop)), "audit")
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: pytest.fail("serve started on a damaged ledger"))
    result = CliRunner().invoke(app, ["serve", "--db", str(shop), "--port", "0"])
    assert result.exit_code == 2, result.output
    assert "damaged" in " ".join(result.output.split() + getattr(result, "stderr", "").split())
    from pimento.service.deployment import Deployment

    with pytest.raises(LedgerIntegrityError):
        Deployment(shop)


def test_serve_refuses_to_start_while_halted_and_starts_after_resume(shop, monkeypatch):
    import uvicorn

    with Ledger(ledger_path(str(shop))) as ledger:
        ledger.halt(str(shop), {"error": "statement timeout"})
    started: list[bool] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: started.append(True))
    result = CliRunner().invoke(app, ["serve", "--db", str(shop), "--port", "0"])
    assert result.exit_code == 2 and not started
    assert "halted" in " ".join(getattr(result, "stderr", result.output).split())
    assert CliRunner().invoke(app, ["audit", "resume", "--db", str(shop)]).exit_code == 0
    assert CliRunner().invoke(app, ["serve", "--db", str(shop), "--port", "0"]).exit_code == 0 and started


def test_a_database_file_replaced_under_the_service_is_not_answered(shop, tmp_path):
    deployment, client, headers = serve(shop)
    try:
        first = client.post("/v1/sql", headers=headers, json={"sql": COUNT, "epsilon": "0.5"})
        assert first.status_code == 200, first.text
        again = client.post("/v1/sql", headers=headers, json={"sql": COUNT + " WHERE oid >= 0", "epsilon": "0.5"})
        assert again.status_code == 200  # opening and reading the file does not change its identity
        charged = _charges(shop)
        other = duckdb_file(tmp_path / "new.duckdb", [s.replace("range(40)", "range(4000)") for s in SHOP])
        os.replace(other, shop)  # the custodian swaps in a new file; DuckDB still holds the old one
        r = client.post("/v1/sql", headers=headers, json={"sql": COUNT + " WHERE oid >= 1", "epsilon": "0.5"})
        assert r.status_code == 503, r.text
        assert r.json()["error"]["type"] == "DataSourceError"
        assert _charges(shop) == charged  # refused before the charge
        assert client.get("/v1/budget", headers=headers).status_code == 200
    finally:
        deployment.close()
