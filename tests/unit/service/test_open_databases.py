"""The databases the running service keeps open between requests (issue 28 item 3, service/open_databases.py).

Requests after :meth:`Deployment.hold_open` borrow an open read-only database instead of opening one
(no second ``load_database``), only ever the one their own thread opened, a Session over a lent database does not close it, a changed
``pimento.toml`` is read again, and the app's lifespan closes every connection at shutdown: the file
can then be opened read-write in the same process (DuckDB refuses that while a read-only
connection of the process holds it). A replaced file is refused with the pool in use:
tests/unit/service/test_service_ledger_faults.py.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from db_support import SHOP, duckdb_file
from service_support import TESTCLIENT_WARNING

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)

COUNT = "SELECT COUNT(*) FROM orders"


@pytest.fixture
def shop(tmp_path) -> Path:
    path = duckdb_file(tmp_path / "shop.duckdb", SHOP)
    (tmp_path / "pimento.toml").write_text('[ledger]\nepsilon_cap = "100"\n')
    return path


@pytest.fixture
def opens(monkeypatch) -> list[str]:
    """Every database the pool opens (its ``load_database`` calls)."""
    from pimento.service import open_databases

    seen: list[str] = []
    real = open_databases.load_database

    def counted(db, **kw):
        seen.append(str(db))
        return real(db, **kw)

    monkeypatch.setattr(open_databases, "load_database", counted)
    return seen


def _held(db: Path):
    from pimento.service.deployment import Deployment

    deployment = Deployment(db)
    deployment.hold_open()
    _entry, key = deployment.add_key("ann")
    return deployment, key


def test_requests_borrow_one_open_database_and_leave_it_open(shop, opens):
    from pimento.service.keys import ApiKey

    deployment, _secret = _held(shop)
    key: ApiKey = next(k for k in deployment.keys.keys() if k.analyst == "ann")
    try:
        first = deployment.sql(key, COUNT, "0.5", None)
        cached = deployment.sql(key, COUNT, "0.5", None)
        fresh = deployment.sql(key, COUNT + " WHERE oid >= 0", "0.5", None)
        assert first["value"] == cached["value"] and "value" in fresh
        assert len(opens) == 1  # opened for the first request, lent again to the next two
        assert deployment.databases is not None and deployment.databases.idle == 1
        with deployment.session("ann") as session:  # a Session over a lent database leaves it open
            pass
        with deployment.session("ann") as again:
            assert again.database is session.database
            assert again.database.engine.execute("SELECT 1").rows == ((1,),)
    finally:
        deployment.close()
    assert deployment.databases is None


def test_a_database_is_lent_only_to_the_thread_that_opened_it_and_closed_after_it_ended(shop, opens):
    import threading

    deployment, _secret = _held(shop)
    release, used = threading.Event(), {}

    def request(name: str, wait: bool) -> None:
        with deployment.session("ann") as session:
            used[name] = session.database
        if wait:
            release.wait(10)

    try:
        a = threading.Thread(target=request, args=("a", True))
        a.start()
        while "a" not in used:
            threading.Event().wait(0.01)
        b = threading.Thread(target=request, args=("b", False))
        b.start()
        b.join()
        assert used["b"] is not used["a"] and len(opens) == 2  # a's idle database is not lent to b
        release.set()
        a.join()
        closed: list[object] = []
        engine = used["a"].engine
        real_close = engine.close
        engine.close = lambda: (closed.append(True), real_close())  # type: ignore[method-assign]
        with deployment.session("ann"):
            pass
        assert closed  # a ended: its database is closed at the next loan
    finally:
        release.set()
        deployment.close()


def test_a_changed_pimento_toml_is_read_again(shop, opens):
    deployment, _secret = _held(shop)
    try:
        with deployment.session("ann") as session:
            assert session.database.settings.ledger.epsilon_cap == "100"
        (shop.parent / "pimento.toml").write_text('[ledger]\nepsilon_cap = "7"\n')
        with deployment.session("ann") as session:
            assert session.database.settings.ledger.epsilon_cap == "7"
        assert len(opens) == 2
    finally:
        deployment.close()


def test_the_lifespan_closes_every_connection_at_shutdown(shop):
    from fastapi.testclient import TestClient

    from pimento.service.app import ServiceOptions, create_app

    deployment, secret = _held(shop)
    with TestClient(create_app(deployment, ServiceOptions(rate=1000.0, burst=1000))) as client:
        r = client.post("/v1/sql", headers={"Authorization": f"Bearer {secret}"}, json={"sql": COUNT, "epsilon": "0.5"})
        assert r.status_code == 200, r.text
        with pytest.raises(duckdb.Error):  # held read-only by the running service
            duckdb.connect(str(shop)).close()
    con = duckdb.connect(str(shop))  # after shutdown nothing of this process holds the file
    try:
        con.execute("INSERT INTO orders VALUES (1000, 1)")
    finally:
        con.close()
