"""The ledger under tampering, crashes and identical concurrent requests (issue 18, finding 11).

Each attack below gave budget back, or let a release go ahead, on the format-1 ledger
(running totals in a ``totals`` table, no chain over charges, no witness file).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from fractions import Fraction

import pytest
from ledger_pg_support import LEDGER_BACKENDS, ledger_backend

from pimento.config import LedgerSettings
from pimento.errors import BudgetError, InternalError, LedgerIntegrityError, ReleaseAbortedError
from pimento.mechanisms import Budget, Ledger, ledger_path
from pimento.mechanisms import audit as audit_mod
from pimento.mechanisms import ledger_store
from pimento.mechanisms.ledger import database_key, request_key, witness_path
from pimento.mechanisms.ledger_postgres import PgConnection

DEAD_OWNER = "{host}|999999999|1"  # a pid above pid_max: no such process


#: The ledger URL of the current test: None for SQLite (the file beside the database), else a
#: fresh PostgreSQL database (tests/ledger_pg_support.py; skipped without PIMENTO_PG_DSN).
_URL: list[str | None] = [None]


@pytest.fixture(params=LEDGER_BACKENDS, autouse=True)
def backend(request):
    """Every test of this file runs on both ledger backends (those about the SQLite file and its
    witness skip on PostgreSQL, which has neither)."""
    with ledger_backend(request.param) as url:
        _URL[0] = url
        yield request.param
    _URL[0] = None


def sqlite_only(backend: str, why: str = "the SQLite ledger file and its witness") -> None:
    if backend != "sqlite":
        pytest.skip(f"SQLite-only: {why}")


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "shop.duckdb")


def make(db, **kw) -> Ledger:
    kw.setdefault("epsilon_cap", "10")
    kw.setdefault("analyst_share", "1")  # one analyst may spend the whole database cap here (issue 28 made the default a quarter of it)
    return Ledger(_URL[0] or ledger_path(db), LedgerSettings(**kw))


def key(db: str, i: int) -> str:
    return request_key(database=db, analyst="ann", sql=f"SELECT COUNT(*) FROM t WHERE a = {i}", mode="dp", epsilon="1", delta=None)


def release(ledger: Ledger, db: str, i: int, value: int = 7) -> dict:
    """The protocol the release path follows: charge_release, then record_release."""
    k = key(db, i)
    charge = ledger.charge_release("ann", db, Budget.spend("1"), k)
    if isinstance(charge, dict):
        return charge
    return ledger.record_release(k, charge, {"value": value, "charge_id": charge.id}, {"analyst": "ann", "value": value})


def surgery(ledger: Ledger) -> sqlite3.Connection:
    if _URL[0] is not None:
        pg = PgConnection(_URL[0])
        for table in ("charges", "audit"):
            pg.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}")
        return pg  # type: ignore[return-value]
    conn = sqlite3.connect(ledger.path, isolation_level=None)
    for trigger in ("charges_no_update", "charges_no_delete", "audit_no_update", "audit_no_delete"):
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    return conn


def problem_kinds(ledger: Ledger) -> set[str]:
    return {p.kind for p in ledger.verify_audit().problems}


def test_zeroing_the_stored_spend_is_refused_not_refunded(db):
    ledger = make(db, epsilon_cap="2")
    release(ledger, db, 1)
    release(ledger, db, 2)
    conn = surgery(ledger)
    conn.execute("UPDATE charges SET epsilon = '0'")
    if _URL[0] is None and conn.execute("SELECT name FROM sqlite_master WHERE name = 'totals'").fetchone():  # the format-1 running totals
        conn.execute("UPDATE totals SET epsilon = '0'")
    with pytest.raises(LedgerIntegrityError, match="integrity check"):
        release(ledger, db, 3)
    assert "charge_edited" in problem_kinds(ledger)


def test_deleting_a_charge_row_is_detected_and_refused(db):
    ledger = make(db)
    for i in range(3):
        release(ledger, db, i)
    conn = surgery(ledger)
    conn.execute("DELETE FROM charges WHERE id = 2")
    kinds = problem_kinds(ledger)
    assert {"audit_without_charge", "charge_gap"} <= kinds
    with pytest.raises(LedgerIntegrityError):
        release(ledger, db, 9)


def test_deleting_the_last_charge_with_its_audit_row_is_detected(db, backend):
    sqlite_only(backend, 'the witness file detects a rewound ledger')
    ledger = make(db)
    for i in range(3):
        release(ledger, db, i)
    conn = surgery(ledger)
    # a careful attacker removes the last charge, its audit row, and rewinds both heads
    conn.execute("DELETE FROM charges WHERE id = 3")
    conn.execute("DELETE FROM audit WHERE seq = 3")
    conn.execute("DELETE FROM answers WHERE charge_id = 3")
    c2 = conn.execute("SELECT hash FROM charges WHERE id = 2").fetchone()[0]
    a2 = conn.execute("SELECT hash FROM audit WHERE seq = 2").fetchone()[0]
    conn.execute("UPDATE charges_head SET charge_id = 2, hash = ?", (c2,))
    conn.execute("UPDATE audit_head SET seq = 2, hash = ?", (a2,))
    assert problem_kinds(ledger) == {"witness_mismatch"}  # only the witness beside the file still knows
    with pytest.raises(LedgerIntegrityError, match="witness"):
        release(ledger, db, 9)


@pytest.mark.parametrize("how", ["delete", "truncate"])
def test_deleting_or_emptying_the_ledger_file_fails_closed(db, how, backend):
    sqlite_only(backend, 'the ledger file and its witness')
    ledger = make(db, epsilon_cap="1")
    release(ledger, db, 1)  # the whole cap
    ledger.close()
    path = ledger_path(db)
    for suffix in ("", "-wal", "-shm"):
        extra = path.with_name(path.name + suffix)
        if extra.exists():
            if how == "delete" or suffix:
                extra.unlink()
            else:
                extra.write_bytes(b"")
    with pytest.raises(LedgerIntegrityError, match="witness") as info:
        make(db, epsilon_cap="1")
    assert "restore" in (info.value.hint or "")
    assert witness_path(path).exists()
    # the custodian who really means to start over moves the witness away
    witness_path(path).rename(path.with_name("old.head"))
    fresh = make(db, epsilon_cap="1")
    assert fresh.spent(db) == Budget.zero()


def test_emptying_the_tables_fails_closed(db, backend):
    sqlite_only(backend, 'the witness file detects emptied tables')
    ledger = make(db)
    release(ledger, db, 1)
    conn = surgery(ledger)
    for table in ("charges", "audit", "audit_head", "charges_head", "answers"):
        conn.execute(f"DELETE FROM {table}")
    ledger.close()
    with pytest.raises(LedgerIntegrityError, match="holds no charge"):
        make(db)


def test_a_release_is_refused_on_a_log_that_fails_verify(db):
    ledger = make(db)
    release(ledger, db, 1)
    release(ledger, db, 2)
    conn = surgery(ledger)
    conn.execute("UPDATE audit SET row = replace(row, '\"value\":7', '\"value\":8') WHERE seq = 2")
    assert not ledger.verify_audit().ok
    spent = ledger.spent(db)
    with pytest.raises(LedgerIntegrityError, match="nothing was spent"):
        release(ledger, db, 3)
    assert ledger.spent(db) == spent


def test_verify_compares_charges_with_audit_rows(db):
    ledger = make(db)
    for i in range(3):
        release(ledger, db, i)
    assert ledger.verify_audit().ok and ledger.verify_audit().charges == 3
    conn = surgery(ledger)
    # drop the last audit row and rewind audit_head: the audit chain alone is consistent again
    conn.execute("DELETE FROM audit WHERE seq = 3")
    a2 = conn.execute("SELECT hash FROM audit WHERE seq = 2").fetchone()[0]
    conn.execute("UPDATE audit_head SET seq = 2, hash = ?", (a2,))
    assert audit_mod.verify(ledger._conn).ok
    assert "charge_unaudited" in problem_kinds(ledger)


def test_audit_row_budget_must_match_its_charge(db):
    ledger = make(db)
    release(ledger, db, 1)
    conn = surgery(ledger)
    text, prev = conn.execute("SELECT row, prev_hash FROM audit WHERE seq = 1").fetchone()
    forged = text.replace('"charge_epsilon":"1"', '"charge_epsilon":"0.1"')
    assert forged != text
    digest = audit_mod.chain_hash(prev, forged)
    conn.execute("UPDATE audit SET row = ?, hash = ? WHERE seq = 1", (forged, digest))
    conn.execute("UPDATE audit_head SET hash = ?", (digest,))
    assert "charge_mismatch" in problem_kinds(ledger)


def test_identical_concurrent_requests_are_charged_once(db):
    payer = make(db)
    k = key(db, 1)
    charge = payer.charge_release("ann", db, Budget.spend("1"), k)
    assert not isinstance(charge, dict)
    got: list = []

    def wait() -> None:
        with make(db) as waiter:
            got.append(waiter.charge_release("ann", db, Budget.spend("1"), k))

    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(0.3)
    assert thread.is_alive() and not got  # the identical request waits instead of paying
    stored = payer.record_release(k, charge, {"value": 41, "charge_id": charge.id}, {"analyst": "ann", "value": 41})
    thread.join(60)  # bounds a hang only: the waiter sees the answer at its next poll (0.5 s at most)
    assert got == [stored] and stored["value"] == 41
    assert len(payer.charges()) == 1 and payer.spent(db) == Budget.of(1)
    rows = payer.audit_rows()
    assert len(rows) == 1 and rows[0]["value"] == 41 and rows[0]["outcome"] == "released"
    assert payer.verify_audit().ok


def test_a_waiter_takes_over_from_a_dead_payer(db):
    payer = make(db)
    k = key(db, 1)
    charge = payer.charge_release("ann", db, Budget.spend("1"), k)
    payer._conn.execute("UPDATE pending SET owner = ?", (DEAD_OWNER.format(host=os.uname().nodename),))
    waiter = make(db)
    second = waiter.charge_release("ann", db, Budget.spend("1"), k)
    assert not isinstance(second, dict) and second.id == charge.id + 1
    rows = waiter.audit_rows()
    assert [(r["charge_id"], r["outcome"]) for r in rows] == [(charge.id, "aborted")]
    assert "nothing released" in rows[0]["detail"]
    # the late payer cannot release what the log says was never released
    with pytest.raises(ReleaseAbortedError):
        payer.record_release(k, charge, {"value": 1}, {"value": 1})
    payer.record_failure(k, charge, {"value": 1})  # a no-op: the charge keeps its one audit row
    waiter.record_release(k, second, {"value": 2, "charge_id": second.id}, {"value": 2})
    report = waiter.verify_audit()
    assert report.ok and report.charges == 2 and report.pending == 0
    assert waiter.spent(db) == Budget.of(2)  # the aborted charge stays spent


def test_pending_timeout_closes_a_hung_payer(db):
    payer = make(db)
    k = key(db, 1)
    charge = payer.charge_release("ann", db, Budget.spend("1"), k)
    payer._conn.execute("UPDATE pending SET started = started - 100")
    waiter = Ledger(_URL[0] or ledger_path(db), LedgerSettings(epsilon_cap="10", analyst_share="1"), pending_timeout_s=50)
    second = waiter.charge_release("ann", db, Budget.spend("1"), k)
    assert not isinstance(second, dict)
    assert "longer than 50 s" in waiter.audit_rows()[0]["detail"]
    with pytest.raises(BudgetError):
        payer.record_release(k, charge, {"value": 1}, {"value": 1})


def test_close_abandoned_records_the_aborts_and_verify_passes(db):
    ledger = make(db)
    for i in range(3):
        ledger.charge_release("ann", db, Budget.spend("1"), key(db, i))
    assert ledger.verify_audit().ok and ledger.verify_audit().pending == 3  # in flight is not a problem
    ledger._conn.execute("UPDATE pending SET owner = ? WHERE charge_id != 2", (DEAD_OWNER.format(host=os.uname().nodename),))
    assert ledger.close_abandoned() == 2
    report = ledger.verify_audit()
    assert report.ok and report.pending == 1
    assert [r["outcome"] for r in ledger.audit_rows()] == ["aborted", "aborted"]


def test_deleting_a_pending_entry_is_detected(db):
    ledger = make(db)
    ledger.charge_release("ann", db, Budget.spend("1"), key(db, 1))
    ledger._conn.execute("DELETE FROM pending")
    assert "charge_unaudited" in problem_kinds(ledger)
    with pytest.raises(LedgerIntegrityError):
        release(ledger, db, 2)


def test_failure_keeps_the_charge_with_one_audit_row(db):
    ledger = make(db)
    k = key(db, 1)
    charge = ledger.charge_release("ann", db, Budget.spend("1"), k)
    ledger.record_failure(k, charge, {"analyst": "ann", "error": "timeout"})
    assert ledger.spent(db) == Budget.of(1)
    rows = ledger.audit_rows()
    assert len(rows) == 1 and rows[0]["outcome"] == "failed" and rows[0]["charge_id"] == charge.id
    assert ledger.verify_audit().ok
    # the same request again is charged again (nothing was released the first time)
    again = ledger.charge_release("ann", db, Budget.spend("1"), k)
    assert not isinstance(again, dict)


def test_synthetic_charge_and_custodian_rows_are_audited(db):
    ledger = make(db)
    charge = ledger.charge_synthetic(db, Budget.spend("1.6", "1e-6"), copy_id="copy-1", note="synthetic copy")
    assert ledger.synthetic_charge(db, "copy-1") == charge
    assert ledger.synthetic_charge(db, "copy-2") is None
    ledger.record_custodian_action(db, "sensitivity", {"sql": "SELECT 1"})
    rows = ledger.audit_rows()
    assert [r["kind"] for r in rows] == ["synthetic", "custodian"]
    assert rows[0]["copy_id"] == "copy-1" and rows[0]["charge_epsilon"] == "1.6"
    assert ledger.verify_audit().ok


def _forge_last_row(ledger: Ledger) -> None:
    conn = surgery(ledger)
    seq, text, prev = conn.execute("SELECT seq, row, prev_hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    forged = text.replace('"value":7', '"value":70')
    assert forged != text
    conn.execute("UPDATE audit SET row = ?, hash = ? WHERE seq = ?", (forged, audit_mod.chain_hash(prev, forged), seq))


def test_forged_last_row_with_recomputed_hash_is_a_head_mismatch(db):
    ledger = make(db)
    for i in range(3):
        release(ledger, db, i)
    _forge_last_row(ledger)
    assert "head_mismatch" in problem_kinds(ledger)


def test_chain_links_include_the_previous_hash(db):
    ledger = make(db)
    for i in range(4):
        release(ledger, db, i)
    conn = surgery(ledger)
    # rewrite row 1 and its hash, and repoint row 2's stored prev_hash at the new hash
    text, prev = conn.execute("SELECT row, prev_hash FROM audit WHERE seq = 1").fetchone()
    forged = text.replace('"value":7', '"value":70')
    new_hash = audit_mod.chain_hash(prev, forged)
    conn.execute("UPDATE audit SET row = ?, hash = ? WHERE seq = 1", (forged, new_hash))
    conn.execute("UPDATE audit SET prev_hash = ? WHERE seq = 2", (new_hash,))
    assert not ledger.verify_audit().ok  # row 2's hash covers the old row 1 through its prev_hash
    # and each stored hash is sha256(previous row's hash || row), computed here independently
    previous = audit_mod.GENESIS
    for seq, row, stored in ledger._conn.execute("SELECT seq, row, hash FROM audit WHERE seq > 2 ORDER BY seq"):
        previous = ledger._conn.execute("SELECT hash FROM audit WHERE seq = ?", (seq - 1,)).fetchone()[0]
        assert stored == hashlib.sha256((previous + row).encode()).hexdigest()


def test_witness_records_head_and_spend(db, backend):
    sqlite_only(backend, 'the witness file')
    ledger = make(db)
    release(ledger, db, 1)
    witness = json.loads(witness_path(ledger.path).read_text())
    assert witness["charges"] == 1 and witness["audit_rows"] == 1
    assert list(witness["spent"].values()) == [{"epsilon": "1", "delta": "0"}]


FORMAT_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE charges (id INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT NOT NULL, database TEXT NOT NULL, analyst TEXT NOT NULL,
    kind TEXT NOT NULL, epsilon TEXT NOT NULL, delta TEXT NOT NULL, request_key TEXT, note TEXT);
CREATE TABLE totals (database TEXT NOT NULL, analyst TEXT NOT NULL, epsilon TEXT NOT NULL, delta TEXT NOT NULL, PRIMARY KEY (database, analyst));
CREATE TABLE answers (request_key TEXT PRIMARY KEY, charge_id INTEGER NOT NULL, time TEXT NOT NULL, answer TEXT NOT NULL);
CREATE TABLE audit (seq INTEGER PRIMARY KEY, row TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
CREATE TABLE audit_head (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, hash TEXT NOT NULL);
CREATE TRIGGER charges_no_update BEFORE UPDATE ON charges BEGIN SELECT RAISE(ABORT, 'charges are append-only'); END;
CREATE TRIGGER charges_no_delete BEFORE DELETE ON charges BEGIN SELECT RAISE(ABORT, 'charges are append-only'); END;
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
INSERT INTO meta VALUES ('format', '1');
"""


def test_a_format_1_ledger_is_migrated(db, backend):
    sqlite_only(backend, 'format 1 existed only as SQLite files')

    path = ledger_path(db)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(FORMAT_1)
    dbk = database_key(db)
    conn.execute("INSERT INTO charges VALUES (1, 't', ?, 'ann', 'release', '0.5', '0', 'k1', NULL)", (dbk,))
    conn.execute("INSERT INTO charges VALUES (2, 't', ?, 'ann', 'release', '0.25', '0', 'k2', NULL)", (dbk,))
    conn.execute("INSERT INTO charges VALUES (3, 't', ?, 'ann', 'release', '0.25', '0', 'k3', NULL)", (dbk,))
    conn.execute("INSERT INTO answers VALUES ('k3', 3, 't', ?)", (json.dumps({"value": 12, "value_exact": "12"}),))
    conn.execute("INSERT INTO totals VALUES (?, '*', '0', '0')", (dbk,))  # a tampered running total is ignored
    row = audit_mod.canonical_json({"analyst": "ann", "charge_id": 1, "value": "3", "seq": 1})
    digest = audit_mod.chain_hash(audit_mod.GENESIS, row)
    conn.execute("INSERT INTO audit VALUES (1, ?, ?, ?)", (row, audit_mod.GENESIS, digest))
    conn.execute("INSERT INTO audit_head VALUES (1, 1, ?)", (digest,))
    conn.close()
    ledger = make(db)
    assert ledger.spent(db) == Budget.of("1")
    rows = ledger.audit_rows()
    assert [(r["charge_id"], r.get("outcome")) for r in rows] == [(1, None), (2, "unrecorded before format 2"), (3, "released")]
    assert rows[2]["value"] == "12"
    report = ledger.verify_audit()
    assert report.ok, report.problems
    release(ledger, db, 5)
    assert ledger.verify_audit().ok


def test_an_edited_early_charge_never_lowers_the_budget(db, monkeypatch):
    """A process remembers the charges it verified (every Ledger object of it on this file): an edit of
    an early row cannot give its process budget back; ``audit verify`` sees the edit at once, and the
    fast check of a fresh Ledger once the process's full scan is older than ``FULL_RESCAN_S`` (a new
    process, every CLI run, reads the whole chain at its first look)."""
    ledger = make(db, epsilon_cap="3")
    for i in range(3):
        release(ledger, db, i)
    conn = surgery(ledger)
    conn.execute("UPDATE charges SET epsilon = '0' WHERE id = 1")
    assert ledger.spent(db) == Budget.of(3)
    with pytest.raises(BudgetError):
        release(ledger, db, 9)
    with pytest.raises(BudgetError):  # a fresh object of this process: the verified sum, not the edited one
        release(make(db, epsilon_cap="3"), db, 9)
    with monkeypatch.context() as m:
        m.setattr(ledger_store, "FULL_RESCAN_S", 0.0)  # this process, once its full scan is old
        with pytest.raises(LedgerIntegrityError):
            release(make(db, epsilon_cap="3"), db, 9)
    assert "charge_edited" in problem_kinds(make(db, epsilon_cap="3"))  # audit verify reads everything
    monkeypatch.setattr(ledger_store, "_VERIFIED", {})  # a new process
    with pytest.raises(LedgerIntegrityError):
        release(make(db, epsilon_cap="3"), db, 9)


def test_a_tampered_cached_answer_is_detected(db):
    ledger = make(db)
    k = key(db, 1)
    charge = ledger.charge_release("ann", db, Budget.spend("1"), k)
    ledger.record_release(k, charge, {"value": 7, "value_exact": "7", "charge_id": charge.id}, {"analyst": "ann", "value": "7"})
    assert ledger.verify_audit().ok
    ledger._conn.execute("UPDATE answers SET answer = ?", (json.dumps({"value": 9, "value_exact": "9", "charge_id": charge.id}),))
    assert "answer_unaudited" in problem_kinds(ledger)


def test_restoring_an_older_copy_of_the_ledger_is_refused(db, tmp_path, backend):
    sqlite_only(backend, 'the ledger file and its witness')
    ledger = make(db, epsilon_cap="3")
    release(ledger, db, 1)
    backup = tmp_path / "backup.sqlite"
    with sqlite3.connect(backup) as copy:
        ledger._conn.backup(copy)
    release(ledger, db, 2)
    release(ledger, db, 3)  # the whole cap
    ledger.close()
    for suffix in ("-wal", "-shm"):
        ledger_path(db).with_name(ledger_path(db).name + suffix).unlink(missing_ok=True)
    ledger_path(db).write_bytes(backup.read_bytes())  # roll back to 1 charge
    with pytest.raises(LedgerIntegrityError, match="witness"):
        release(make(db, epsilon_cap="3"), db, 4)


def test_custodian_details_of_any_type_are_recorded(db):
    ledger = make(db)
    ledger.record_custodian_action(db, "sensitivity", {"rs": Fraction(1, 3), "ratio": float("nan"), "path": ledger.path, "k": (1, 2)})
    details = ledger.audit_rows()[0]["details"]
    assert details == {"rs": "1/3", "ratio": "nan", "path": str(ledger.path), "k": [1, 2]}
    assert ledger.verify_audit().ok


@pytest.mark.parametrize("text", ["not json", '{"charges": "many"}', "[1, 2]"])
def test_an_unreadable_witness_fails_closed(db, text, backend):
    sqlite_only(backend, 'the witness file')
    ledger = make(db)
    release(ledger, db, 1)
    ledger.close()
    witness_path(ledger_path(db)).write_text(text)
    with pytest.raises(LedgerIntegrityError, match="unreadable"):
        make(db)


def test_an_identical_request_through_the_same_ledger_object_does_not_hang(db):
    ledger = make(db)
    k = key(db, 1)
    ledger.charge_release("ann", db, Budget.spend("1"), k)
    with pytest.raises(InternalError, match="never recorded"):
        ledger.charge_release("ann", db, Budget.spend("1"), k)
