from __future__ import annotations

import sqlite3
from fractions import Fraction

import pytest

from pimento.config import LedgerSettings, settings_from_dict
from pimento.errors import BudgetError, PrivacyParameterError
from pimento.mechanisms import Budget, Ledger, guarded_release, ledger_path, mechanism_for


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "shop.duckdb")


def make(db, **kw) -> Ledger:
    return Ledger(ledger_path(db), LedgerSettings(**kw))


def test_ledger_file_sits_beside_the_database_in_wal_mode(db):
    ledger = make(db)
    assert ledger.path.name == "shop.duckdb.ledger.sqlite"
    assert ledger._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert ledger._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_settings_path_is_relative_to_pimento_toml(tmp_path, db):
    settings = settings_from_dict({"ledger": {"path": "budget/ledger.sqlite"}}, base_dir=str(tmp_path))
    assert ledger_path(db, settings) == tmp_path / "budget" / "ledger.sqlite"


def test_charges_are_exact_and_persisted(db):
    ledger = make(db, epsilon_cap="1")
    for _ in range(10):
        ledger.charge("ann", db, Budget.spend("0.1"))
    assert ledger.spent(db) == Budget.of(1)
    with pytest.raises(BudgetError, match="nothing was spent"):
        ledger.charge("ann", db, Budget.spend("0.0000001"))
    stored = sqlite3.connect(ledger.path).execute("SELECT epsilon FROM charges").fetchall()
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
    assert not ledger._conn.execute("SELECT name FROM sqlite_master WHERE name = 'totals'").fetchone()  # no second copy to tamper with


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
    conn = sqlite3.connect(ledger.path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE charges SET epsilon = '0'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM charges")


def test_summary_lists_caps_spent_and_left(db):
    ledger = make(db, epsilon_cap="2", analysts=["ann", "bob"])
    ledger.charge("ann", db, Budget.spend("0.5", "1e-6"))
    s = ledger.summary(db)
    assert s["cap"]["epsilon"] == "2" and s["spent"]["epsilon"] == "0.5" and s["left"]["epsilon"] == "1.5"
    rows = {a["analyst"]: a for a in s["analysts"]}
    assert rows["ann"]["spent"]["delta"] == "0.000001" and rows["bob"]["spent"]["epsilon"] == "0"
