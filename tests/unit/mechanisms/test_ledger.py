from __future__ import annotations

import sqlite3
import threading
from fractions import Fraction

import psycopg
import pytest
from ledger_pg_support import LEDGER_BACKENDS, ledger_backend

from pimento.config import LedgerSettings, settings_from_dict
from pimento.errors import BudgetError, PrivacyParameterError
from pimento.mechanisms import Budget, Ledger, guarded_release, ledger_path, mechanism_for

#: The ledger URL of the current test: None for SQLite (the file beside the database), else a
#: fresh PostgreSQL database (tests/pg_support.py; skipped without PIMENTO_PG_DSN).
_URL: list[str | None] = [None]


@pytest.fixture(params=LEDGER_BACKENDS, autouse=True)
def backend(request):
    """Every test of this file runs on both ledger backends."""
    with ledger_backend(request.param) as url:
        _URL[0] = url
        yield request.param
    _URL[0] = None


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "shop.duckdb")


def make(db, **kw) -> Ledger:
    kw.setdefault("analyst_share", "1")  # one analyst may spend the whole database cap here (issue 28 made the default a quarter of it)
    return Ledger(_URL[0] or ledger_path(db), LedgerSettings(**kw))


def _other_connection(ledger):
    """A second connection to the ledger's store, with the errors the backend raises on refusal."""
    if _URL[0] is None:
        return sqlite3.connect(ledger.path), sqlite3.DatabaseError

    return psycopg.connect(_URL[0], autocommit=True), psycopg.Error


def test_ledger_file_sits_beside_the_database_in_wal_mode(db, backend):
    if backend != "sqlite":
        pytest.skip("SQLite-only: the ledger file and its journal mode")
    ledger = make(db)
    assert ledger.path.name == "shop.duckdb.ledger.sqlite"
    assert ledger._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert ledger._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_settings_path_is_relative_to_pimento_toml(tmp_path, db, backend):
    if backend != "sqlite":
        pytest.skip("SQLite-only: the ledger file path")
    settings = settings_from_dict({"ledger": {"path": "budget/ledger.sqlite"}}, base_dir=str(tmp_path))
    assert ledger_path(db, settings) == tmp_path / "budget" / "ledger.sqlite"


def test_charges_are_exact_and_persisted(db):
    ledger = make(db, epsilon_cap="1")
    for _ in range(10):
        ledger.charge("ann", db, Budget.spend("0.1"))
    assert ledger.spent(db) == Budget.of(1)
    with pytest.raises(BudgetError, match="nothing was spent"):
        ledger.charge("ann", db, Budget.spend("0.000001"))  # the smallest epsilon one release may spend
    other = _other_connection(ledger)[0]
    stored = other.execute("SELECT epsilon FROM charges").fetchall()
    other.close()
    assert {row[0] for row in stored} == {"0.1"}
    reopened = make(db, epsilon_cap="1")
    assert reopened.spent(db, "ann") == Budget.of(1)


def test_refused_request_spends_nothing(db):
    ledger = make(db, epsilon_cap="1", delta_cap="1e-6")
    ledger.charge("ann", db, Budget.spend("0.5", "1e-6"))
    before = ledger.charges()
    with pytest.raises(BudgetError) as info:
        ledger.charge("ann", db, Budget.spend("0.1", "1e-9"))  # epsilon fits, delta does not
    assert "0.5" in info.value.message  # says what is left
    assert ledger.charges() == before
    assert ledger.spent(db) == Budget.of("0.5", "1e-6")


def test_analyst_cap_is_separate_from_database_cap(db):
    ledger = make(db, epsilon_cap="3", analyst_epsilon_cap="1")
    ledger.charge("ann", db, Budget.spend("1"))
    with pytest.raises(BudgetError, match="analyst 'ann'"):
        ledger.charge("ann", db, Budget.spend("0.1"))
    ledger.charge("bob", db, Budget.spend("1"))
    assert ledger.remaining(db, "carl") == Budget.of(1, "1e-5")
    assert ledger.remaining(db, "ann") == Budget.of(0, "1e-5")


def test_unknown_analyst_is_refused_and_spends_nothing(db):
    ledger = make(db, analysts=["ann"])
    with pytest.raises(BudgetError, match="unknown analyst 'mallory'"):
        ledger.charge("mallory", db, Budget.spend("0.1"))
    assert ledger.charges() == []
    ledger.charge("ann", db, Budget.spend("0.1"))


@pytest.mark.parametrize("name", ["", "*", " ann", "<synthetic>"])
def test_reserved_or_blank_analyst_names_are_refused(db, name):
    with pytest.raises(BudgetError):
        make(db).charge(name, db, Budget.spend("0.1"))


def test_synthetic_spend_counts_against_the_database_cap(db):
    ledger = make(db, epsilon_cap="2")
    ledger.charge_synthetic(db, Budget.spend("1.5"), note="MST synthetic copy")
    with pytest.raises(BudgetError, match="database budget"):
        ledger.charge("ann", db, Budget.spend("1"))
    assert ledger.remaining(db, "ann").epsilon == Fraction(1, 2)


def test_totals_equal_the_sum_of_charges(db):
    ledger = make(db, epsilon_cap="100")
    for eps in ["0.1", "1/3", "0.25", "2"]:
        ledger.charge("ann", db, Budget.spend(eps))
    ledger.charge("bob", db, Budget.spend("1/7", "1e-7"))
    total = Budget.zero()
    for c in ledger.charges(db):
        total = total + c.budget
    assert ledger.spent(db) == total
    assert ledger.summary(db)["spent"]["epsilon"] == Budget.of(total.epsilon).to_text()[0]
    if _URL[0] is None:
        assert not ledger._conn.execute("SELECT name FROM sqlite_master WHERE name = 'totals'").fetchone()  # no second copy to tamper with
    else:
        assert ledger._conn.execute("SELECT to_regclass('totals')").fetchone()[0] is None


def test_identical_request_returns_the_cached_answer_at_no_cost(db):
    ledger = make(db, epsilon_cap="1")
    mech = mechanism_for("0.6")
    first = guarded_release(ledger, mech, analyst="ann", database=db, sql="SELECT COUNT(*) FROM t", true_value=10, rs=1)
    again = guarded_release(ledger, mech, analyst="ann", database=db, sql="SELECT  COUNT(*)\nFROM t", true_value=10, rs=1)
    assert not first.cached and again.cached
    assert again.release == first.release
    assert ledger.spent(db) == Budget.of("0.6")
    # different parameters are a different request
    with pytest.raises(BudgetError):
        guarded_release(ledger, mechanism_for("0.5"), analyst="ann", database=db, sql="SELECT COUNT(*) FROM t", true_value=10, rs=1)


def test_cache_can_be_turned_off(db):
    ledger = make(db, epsilon_cap="1", answer_cache=False)
    mech = mechanism_for("0.5")
    for _ in range(2):
        guarded_release(ledger, mech, analyst="ann", database=db, sql="SELECT COUNT(*) FROM t", true_value=10, rs=1)
    assert ledger.spent(db) == Budget.of(1)
    with pytest.raises(BudgetError):
        guarded_release(ledger, mech, analyst="ann", database=db, sql="SELECT COUNT(*) FROM t", true_value=10, rs=1)


def test_invalid_parameters_spend_nothing(db):
    ledger = make(db)
    with pytest.raises(PrivacyParameterError):
        guarded_release(ledger, mechanism_for("-1"), analyst="ann", database=db, sql="q", true_value=1, rs=1)
    assert ledger.charges() == []


def test_charges_table_is_append_only(db):
    ledger = make(db)
    ledger.charge("ann", db, Budget.spend("0.1"))
    ledger.record_custodian_action(db, "test", {})  # an audit row to try to change
    conn, refused = _other_connection(ledger)
    with pytest.raises(refused, match="append-only"):
        conn.execute("UPDATE charges SET epsilon = '0'")
    with pytest.raises(refused, match="append-only"):
        conn.execute("DELETE FROM charges")
    with pytest.raises(refused, match="append-only"):
        conn.execute("DELETE FROM audit")
    conn.close()


def test_summary_lists_caps_spent_and_left(db):
    ledger = make(db, epsilon_cap="2", analysts=["ann", "bob"])
    ledger.charge("ann", db, Budget.spend("0.5", "1e-6"))
    s = ledger.summary(db)
    assert s["cap"]["epsilon"] == "2" and s["spent"]["epsilon"] == "0.5" and s["left"]["epsilon"] == "1.5"
    rows = {a["analyst"]: a for a in s["analysts"]}
    assert rows["ann"]["spent"]["delta"] == "0.000001" and rows["bob"]["spent"]["epsilon"] == "0"


def test_concurrent_writers_never_overspend(db):
    """Eight writers, each with its own Ledger (its own connection), race for a cap of 5: exactly 50
    charges of 0.1 succeed on either backend (SQLite: BEGIN IMMEDIATE; PostgreSQL: the advisory lock)."""
    make(db, epsilon_cap="5").close()  # the schema, made once
    ok: list[int] = []
    refused: list[int] = []
    lock = threading.Lock()

    def writer() -> None:
        ledger = make(db, epsilon_cap="5")
        try:
            for _ in range(10):
                try:
                    ledger.charge("ann", db, Budget.spend("0.1"))
                    with lock:
                        ok.append(1)
                except BudgetError:
                    with lock:
                        refused.append(1)
        finally:
            ledger.close()

    threads = [threading.Thread(target=writer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ok) == 50 and len(refused) == 30
    assert make(db, epsilon_cap="5").spent(db) == Budget.of(5)
