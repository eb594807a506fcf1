from __future__ import annotations

import hashlib
import json
import sqlite3

import pytest

from pimento.config import LedgerSettings
from pimento.mechanisms import Ledger, audit, guarded_release, ledger_path, mechanism_for


@pytest.fixture
def ledger(tmp_path):
    db = str(tmp_path / "clinic.duckdb")
    led = Ledger(ledger_path(db), LedgerSettings(epsilon_cap="100"))
    for i in range(5):
        guarded_release(led, mechanism_for("1"), analyst="ann", database=db, sql=f"SELECT COUNT(*) FROM v WHERE a = {i}", true_value=1000 + i, rs=2, question=f"how many {i}?")
    return led


def surgery(ledger: Ledger) -> sqlite3.Connection:
    conn = sqlite3.connect(ledger.path, isolation_level=None)
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("DROP TRIGGER audit_no_delete")
    return conn


def kinds(ledger: Ledger, **kw) -> set[str]:
    return {p.kind for p in ledger.verify_audit(**kw).problems}


def test_intact_log_verifies_and_never_holds_the_true_answer(ledger):
    report = ledger.verify_audit()
    assert report.ok and report.rows == 5
    rows = ledger.audit_rows()
    assert [r["seq"] for r in rows] == [1, 2, 3, 4, 5]
    assert {"time", "analyst", "question", "sql", "mode", "epsilon", "delta", "scale", "value"} <= set(rows[0])
    assert not any("true" in key for row in rows for key in row)
    cached = [ledger.cached_answer(key) for (key,) in ledger._conn.execute("SELECT request_key FROM answers")]
    assert sorted(str(c["value"]) for c in cached) == sorted(r["value"] for r in rows)


def test_update_and_delete_are_refused(ledger):
    conn = sqlite3.connect(ledger.path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE audit SET row = '{}' WHERE seq = 2")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM audit WHERE seq = 2")


def test_edited_row_is_detected(ledger):
    conn = surgery(ledger)
    text = conn.execute("SELECT row FROM audit WHERE seq = 3").fetchone()[0]
    edited = json.loads(text)
    edited["epsilon"] = "0.001"
    conn.execute("UPDATE audit SET row = ? WHERE seq = 3", (json.dumps(edited, sort_keys=True, separators=(",", ":")),))
    assert "edited" in kinds(ledger)


def test_edit_with_recomputed_hash_breaks_the_next_link(ledger):
    conn = surgery(ledger)
    seq, text, prev = conn.execute("SELECT seq, row, prev_hash FROM audit WHERE seq = 2").fetchone()
    edited = text.replace('"analyst":"ann"', '"analyst":"bob"')
    conn.execute("UPDATE audit SET row = ?, hash = ? WHERE seq = 2", (edited, hashlib.sha256((prev + edited).encode()).hexdigest()))
    assert kinds(ledger) == {"broken_link"}


def test_deleted_middle_row_is_detected(ledger):
    conn = surgery(ledger)
    conn.execute("DELETE FROM audit WHERE seq = 2")
    assert {"gap", "broken_link"} <= kinds(ledger)


def test_reordered_rows_are_detected(ledger):
    conn = surgery(ledger)
    a = conn.execute("SELECT row, prev_hash, hash FROM audit WHERE seq = 2").fetchone()
    b = conn.execute("SELECT row, prev_hash, hash FROM audit WHERE seq = 4").fetchone()
    conn.execute("UPDATE audit SET row = ?, prev_hash = ?, hash = ? WHERE seq = 2", b)
    conn.execute("UPDATE audit SET row = ?, prev_hash = ?, hash = ? WHERE seq = 4", a)
    assert {"reordered", "broken_link"} <= kinds(ledger)


def test_truncated_tail_is_detected_by_the_head(ledger):
    head = ledger.verify_audit().head
    conn = surgery(ledger)
    conn.execute("DELETE FROM audit WHERE seq = 5")
    assert "head_mismatch" in kinds(ledger)
    # an attacker who also rewrites audit_head is caught by a head kept elsewhere
    prev = conn.execute("SELECT hash FROM audit WHERE seq = 4").fetchone()[0]
    conn.execute("UPDATE audit_head SET seq = 4, hash = ?", (prev,))
    chain_only = audit.verify(ledger._conn, expect_head=head)
    assert {p.kind for p in chain_only.problems} == {"head_mismatch"}  # the chain alone needs a head kept elsewhere
    assert {p.kind for p in audit.verify(ledger._conn).problems} == set()
    # the ledger also sees a charge without its audit row, and the witness file beside it
    assert {"charge_unaudited", "witness_mismatch"} <= kinds(ledger)
