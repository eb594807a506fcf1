"""Processes race for a budget: exactly what the cap admits is spent, once per released value."""

from __future__ import annotations

import multiprocessing
import sqlite3
import sys
from fractions import Fraction
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _release_worker import race, race_mixed  # noqa: E402

from pimento.config import LedgerSettings  # noqa: E402
from pimento.mechanisms import Budget, Ledger  # noqa: E402


@pytest.mark.slow
def test_eight_processes_spend_exactly_the_cap(tmp_path):
    db = str(tmp_path / "race.duckdb")
    ledger_file = str(tmp_path / "race.ledger.sqlite")
    cap, eps, admitted = "1.2", "0.1", 12  # 12 * 0.1 == 1.2 exactly; with floats the 12th would fail
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(8) as pool:
        results = pool.starmap(race, [(ledger_file, db, w, 4, cap, eps) for w in range(8)])
    successes = sum(ok for ok, _ in results)
    refusals = sum(no for _, no in results)
    assert successes == admitted and successes + refusals == 32
    ledger = Ledger(ledger_file, LedgerSettings(epsilon_cap=cap, analyst_share="1"))
    charges = ledger.charges(db)
    assert len(charges) == admitted
    total = sum((c.budget for c in charges), Budget.zero())
    assert total == Budget.of(cap) == ledger.spent(db)
    assert ledger.verify_audit().rows == admitted and ledger.verify_audit().ok
    per_analyst = {}
    for c in charges:
        per_analyst[c.analyst] = per_analyst.get(c.analyst, Fraction(0)) + c.budget.epsilon
    assert all(ledger.spent(db, a).epsilon == v for a, v in per_analyst.items())
    conn = sqlite3.connect(ledger_file)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    ledger.close()


@pytest.mark.slow
def test_identical_and_different_requests_race_one_charge_per_released_value(tmp_path, monkeypatch):
    """8 processes send overlapping requests (12 distinct queries, each sent by 4 workers) for a cap
    that admits 10: zero overspend, one charge per distinct released value, identical requests
    get one answer, every answer has exactly one charge and one audit row."""
    db = str(tmp_path / "mixed.duckdb")
    ledger_file = str(tmp_path / "mixed.ledger.sqlite")
    cap, eps, distinct = "1", "0.1", 12
    monkeypatch.setenv("PIMENTO_TEST_PAUSE", "after_charge:0.05")  # widen the window between charge and answer
    plans = []
    for w in range(8):
        queries = [(w + 2 * j) % distinct for j in range(6)]
        plans.append(queries if w % 2 else list(reversed(queries)))
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(8) as pool:
        results = pool.starmap(race_mixed, [(ledger_file, db, w, plans[w], cap, eps) for w in range(8)])
    answers = [a for r in results for a in r if "refused" not in a]
    refused = [a for r in results for a in r if "refused" in a]
    assert len(answers) + len(refused) == 48
    ledger = Ledger(ledger_file, LedgerSettings(epsilon_cap=cap, analyst_share="1"))
    charges = {c.id: c for c in ledger.charges(db)}
    assert len(charges) == 10 and ledger.spent(db) == Budget.of(cap)  # the whole cap, not more
    by_query: dict[int, set] = {}
    for a in answers:
        by_query.setdefault(a["q"], set()).add((a["charge_id"], a["value"]))
    assert all(len(v) == 1 for v in by_query.values()), by_query  # identical requests: one answer
    assert {a["q"] for a in refused}.isdisjoint(by_query)  # a query is answered for all or refused for all
    released = {next(iter(v)) for v in by_query.values()}
    assert len(released) == len(by_query) == len(charges)  # one charge per distinct released value
    assert {cid for cid, _ in released} == set(charges)
    assert sum(not a["cached"] for a in answers) == len(charges)  # only the payer is not served from the cache
    rows = [r for r in ledger.audit_rows() if r.get("charge_id") is not None]
    assert sorted(r["charge_id"] for r in rows) == sorted(charges)  # exactly one audit row per charge
    audited = {r["charge_id"]: (r["outcome"], r["value"]) for r in rows}
    assert all(audited[cid] == ("released", value) for cid, value in released)
    report = ledger.verify_audit()
    assert report.ok and report.pending == 0, report.problems
    ledger.close()
