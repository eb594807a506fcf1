"""What a process remembers about a ledger file across Ledger objects (issue 28, the service's hot path).

The service opens one Ledger per request. The charge chain a process verified, and that the schema is
in place, are kept per ledger identity (file path, device, inode) in :mod:`pimento.mechanisms.ledger_store`;
a cached answer is looked up in one read transaction. These tests check that what is remembered never
hides another writer's charges, a replaced file or a rewritten head, and that the cached answer and the
open need no write lock.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from pimento.config import LedgerSettings
from pimento.errors import LedgerIntegrityError
from pimento.mechanisms import Budget, Ledger, ledger_path
from pimento.mechanisms import ledger_store
from pimento.mechanisms.ledger import request_key, witness_path


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "shop.duckdb")


def make(db: str, **kw) -> Ledger:
    return Ledger(ledger_path(db), LedgerSettings(epsilon_cap="100", analyst_share="1"), **kw)


def key(db: str, i: int) -> str:
    return request_key(database=db, analyst="ann", sql=f"SELECT COUNT(*) FROM t WHERE a = {i}", mode="dp", epsilon="1", delta=None)


def release(ledger: Ledger, db: str, i: int) -> dict:
    k = key(db, i)
    charge = ledger.charge_release("ann", db, Budget.spend("1"), k)
    if isinstance(charge, dict):
        return charge
    return ledger.record_release(k, charge, {"value": i, "charge_id": charge.id}, {"analyst": "ann", "value": i})


def test_a_new_ledger_object_starts_from_the_verified_chain_and_sees_other_writers(db, monkeypatch):
    with make(db) as first:
        release(first, db, 1)
        release(first, db, 2)
    with make(db) as other:  # another writer (any object, this process or another): one more charge
        release(other, db, 3)
    seen: list[int | None] = []
    real = ledger_store.scan_charges

    def spy(conn, verified):
        seen.append(None if verified is None else verified.count)
        return real(conn, verified)

    monkeypatch.setattr(ledger_store, "scan_charges", spy)
    with make(db) as fresh:
        assert fresh.spent(db) == Budget.of(3)
        assert fresh.charges(db)[-1].id == 3
    assert seen and seen[0] == 3  # started from what the process verified, not from nothing


def test_a_charge_by_another_process_is_seen(db):
    with make(db) as ledger:
        release(ledger, db, 1)
        assert ledger.spent(db) == Budget.of(1)
    code = textwrap.dedent(f"""
        from pimento.config import LedgerSettings
        from pimento.mechanisms import Budget, Ledger, ledger_path
        with Ledger(ledger_path({db!r}), LedgerSettings(epsilon_cap="100", analyst_share="1")) as ledger:
            ledger.charge("bob", {db!r}, Budget.spend("2"), kind="synthetic")
    """)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    with make(db) as ledger:
        assert ledger.spent(db) == Budget.of(3)
        assert ledger.remaining(db, "ann").epsilon == 97
        assert ledger.verify_audit().ok


def test_a_rewritten_last_verified_charge_is_caught_by_the_fast_check(db):
    with make(db) as ledger:
        release(ledger, db, 1)
        release(ledger, db, 2)
    conn = sqlite3.connect(ledger_path(db), isolation_level=None)
    conn.execute("DROP TRIGGER IF EXISTS charges_no_update")
    conn.execute("UPDATE charges SET epsilon = '0' WHERE id = 2")
    conn.close()
    with make(db) as ledger, pytest.raises(LedgerIntegrityError):
        release(ledger, db, 3)


def test_a_ledger_file_started_anew_is_not_confused_with_the_old_one(db):
    """The custodian moved the ledger and its witness away: the new file has its schema and nothing
    spent (whatever inode it gets, the remembered chain no longer fits it)."""
    with make(db) as ledger:
        release(ledger, db, 1)
        release(ledger, db, 2)
    for path in (ledger_path(db), witness_path(ledger_path(db))):
        path.unlink()
    for suffix in ("-wal", "-shm"):
        ledger_path(db).with_name(ledger_path(db).name + suffix).unlink(missing_ok=True)
    with make(db) as ledger:
        assert ledger.spent(db) == Budget.zero()
        release(ledger, db, 1)
        assert ledger.spent(db) == Budget.of(1)
        assert ledger.verify_audit().ok


def _hold_write_lock(db: str) -> sqlite3.Connection:
    conn = sqlite3.connect(ledger_path(db), isolation_level=None, timeout=0.1)
    conn.execute("BEGIN IMMEDIATE")
    return conn


def test_opening_the_ledger_again_takes_no_write_lock(db):
    make(db).close()
    lock = _hold_write_lock(db)
    try:
        start = time.monotonic()
        make(db, busy_timeout_s=0.1).close()
        assert time.monotonic() - start < 2.0
    finally:
        lock.execute("ROLLBACK")
        lock.close()


def test_a_cached_answer_takes_no_write_lock_and_leaves_the_witness_alone(db):
    with make(db) as ledger:
        stored = release(ledger, db, 1)
    witness = witness_path(ledger_path(db))
    before = (witness.read_bytes(), witness.stat().st_mtime_ns)
    lock = _hold_write_lock(db)
    try:
        with make(db, busy_timeout_s=0.1) as ledger:
            assert ledger.charge_release("ann", db, Budget.spend("1"), key(db, 1)) == stored
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert (witness.read_bytes(), witness.stat().st_mtime_ns) == before
    with make(db) as ledger:
        assert ledger.spent(db) == Budget.of(1)  # the cached answer was free
        assert ledger.verify_audit().ok


def test_a_cached_answer_on_a_ledger_that_fails_its_check_is_refused(db):
    """The read-only look-up answers only what the locked path would: on a tampered ledger it steps
    aside, and the locked path refuses."""
    with make(db) as ledger:
        release(ledger, db, 1)
    conn = sqlite3.connect(ledger_path(db), isolation_level=None)
    conn.execute("DROP TRIGGER IF EXISTS audit_no_delete")
    conn.execute("DELETE FROM audit WHERE seq = (SELECT MAX(seq) FROM audit)")
    conn.close()
    with make(db) as ledger, pytest.raises(LedgerIntegrityError):
        ledger.charge_release("ann", db, Budget.spend("1"), key(db, 1))


def test_the_witness_written_from_the_transaction_s_chain_matches_a_full_read(db):
    """A charge's transaction writes the witness from the chain it checked plus the charge it appended
    (no second read): the same head and spend that a full read of the ledger gives."""
    with make(db) as ledger:
        release(ledger, db, 1)
        ledger.charge("bob", db, Budget.spend("1/3", "1e-7"), kind="synthetic")
        charge = ledger.charge_release("ann", db, Budget.spend("1/7"), key(db, 2))
        assert not isinstance(charge, dict)
        witness = json.loads(witness_path(ledger_path(db)).read_text())  # written after the charge, before its answer
        full = ledger_store.scan_charges(ledger._conn, None)
        assert (witness["charges"], witness["charge_hash"]) == (full.last_id, full.last_hash) == (3, full.last_hash)
        spent = full.sums[(charge.database, "*")]
        assert witness["spent"][charge.database] == dict(zip(("epsilon", "delta"), spent.to_text()))
        assert ledger._scan().sums == full.sums and ledger._scan().rows.keys() == full.rows.keys()
        ledger.record_release(key(db, 2), charge, {"value": 2, "charge_id": charge.id}, {"analyst": "ann", "value": 2})
        assert ledger.verify_audit().ok
