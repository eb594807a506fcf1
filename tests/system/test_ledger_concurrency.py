"""8 processes race for a budget that admits exactly N releases: exactly N succeed."""

from __future__ import annotations

import multiprocessing
import sqlite3
import sys
from fractions import Fraction
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _release_worker import race  # noqa: E402

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
    ledger = Ledger(ledger_file, LedgerSettings(epsilon_cap=cap))
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
