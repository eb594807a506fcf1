"""A failure after the charge halts the deployment (issue 23, finding 2 and finding 10).

Whether a charged release answers or fails is an output: a failure that depends on the data (a
statement timeout tripped on one database only) is an exact bit the charge does not pay for. So
any failure after the charge -- in ``measure()``, the noise, or storing the answer -- closes the
pending charge with a failure row, writes a ``halt`` row and marks the deployment halted in the
ledger; the request and every later release request of every analyst read one fixed message,
before anything is charged, until the custodian resumes (``pimento audit resume``).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time

import pytest
from ledger_pg_support import LEDGER_BACKENDS, ledger_backend

from pimento.config import LedgerSettings
from pimento.errors import DeploymentHaltedError
from pimento.mechanisms import Budget, Ledger, guarded_release, ledger_path, mechanism_for
from pimento.mechanisms import audit as audit_mod
from pimento.mechanisms import ledger_halts
from pimento.mechanisms.guarded import Measured
from pimento.mechanisms.ledger import request_key

SECRET = "statement timed out after 5 s on CareTeamMember 24"


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "shop.duckdb")


@pytest.fixture(autouse=True)
def _no_halt_left_behind():
    yield
    ledger_halts._UNRECORDED_HALTS.clear()


def make(db: str, *, pending_timeout_s: float = 900.0, **kw) -> Ledger:
    kw.setdefault("epsilon_cap", "10")
    kw.setdefault("analyst_share", "1")  # one analyst may spend the whole database cap here (issue 28 made the default a quarter of it)
    return Ledger(ledger_path(db), LedgerSettings(**kw), pending_timeout_s=pending_timeout_s)


def release(ledger: Ledger, db: str, sql: str = "SELECT COUNT(*) FROM t", analyst: str = "ann", measure=None):
    if measure is None:
        return guarded_release(ledger, mechanism_for("1"), analyst=analyst, database=db, sql=sql, true_value=7, rs=1)
    return guarded_release(ledger, mechanism_for("1"), analyst=analyst, database=db, sql=sql, measure=measure)


def fail(*_args, **_kw) -> Measured:
    raise TimeoutError(SECRET)


def forbid_waiting(monkeypatch) -> None:
    """Make the ledger's waits (for an identical request's payer, or for a lock) fail the test: "it
    does not wait" checked without a clock. Only the ledger modules' ``time`` is replaced."""
    import types

    from pimento.mechanisms import ledger as ledger_mod
    from pimento.mechanisms import ledger_store

    def waited(seconds: float) -> None:
        raise AssertionError(f"the ledger waited ({seconds} s) for a payer that will never answer")

    clock = types.SimpleNamespace(**{name: getattr(time, name) for name in dir(time) if not name.startswith("_")})
    clock.sleep = waited
    monkeypatch.setattr(ledger_mod, "time", clock)
    monkeypatch.setattr(ledger_store, "time", clock)


def test_a_failure_after_the_charge_halts_every_release_until_resumed(db):
    ledger = make(db)
    release(ledger, db, "SELECT COUNT(*) FROM before")
    with pytest.raises(DeploymentHaltedError) as first:
        release(ledger, db, "SELECT COUNT(*) FROM t WHERE gate", measure=fail)
    assert first.value.message == DeploymentHaltedError.MESSAGE and SECRET not in first.value.one_line()
    spent = ledger.spent(db)
    assert spent == Budget.of(2)  # the failed release's charge stands
    rows = ledger.audit_rows()
    failed = [r for r in rows if r.get("outcome") == "failed"]
    halts = [r for r in rows if r.get("kind") == "halt"]
    assert len(failed) == 1 and SECRET in failed[0]["error"] and failed[0]["charge_id"] == 2
    assert len(halts) == 1 and halts[0]["failed_charge"] == 2 and "charge_id" not in halts[0]
    # every later request of every analyst, the cached one included, reads the same text and pays nothing
    other = make(db)
    for analyst, sql in (("ann", "SELECT COUNT(*) FROM before"), ("bob", "SELECT COUNT(*) FROM t WHERE gate"), ("eve", "SELECT 1")):
        with pytest.raises(DeploymentHaltedError) as later:
            release(other, db, sql, analyst=analyst)
        assert later.value.one_line() == first.value.one_line()
    assert other.spent(db) == spent and other.pending() == []
    # read-only queries work while halted
    assert other.summary(db)["spent"]["epsilon"] == "2" and other.remaining(db, "ann").epsilon == 8
    report = other.verify_audit()
    assert report.ok, report.problems
    assert [r["seq"] for r in other.halts(db)] == [halts[0]["seq"]]
    # the custodian resumes (audited); releases go on
    lifted = other.resume(db, "looked at the timeout")
    assert [r["seq"] for r in lifted] == [halts[0]["seq"]]
    resumed = other.audit_rows()[-1]
    assert resumed["kind"] == "custodian" and resumed["tool"] == "resume" and resumed["details"]["note"] == "looked at the timeout"
    assert other.halts(db) == [] and other.resume(db) == []  # a second resume writes nothing
    assert release(other, db, "SELECT COUNT(*) FROM after").charge_id == 3
    assert other.verify_audit().ok


@pytest.mark.parametrize("stage", ["noise", "formatting", "remaining"])
def test_a_failure_anywhere_after_the_charge_halts(db, monkeypatch, stage):
    """Not only measure(): the noise, building the audit row, and the budget read after storing."""
    ledger = make(db)
    mechanism = mechanism_for("1")
    if stage == "noise":
        monkeypatch.setattr(type(mechanism), "release", lambda *a, **k: (_ for _ in ()).throw(OverflowError(SECRET)))
    elif stage == "formatting":
        monkeypatch.setattr("pimento.mechanisms.guarded.format_number", lambda *a: (_ for _ in ()).throw(ValueError(SECRET)))
    else:
        monkeypatch.setattr(Ledger, "remaining", lambda *a: (_ for _ in ()).throw(sqlite3.OperationalError(SECRET)))
    with pytest.raises(DeploymentHaltedError):
        guarded_release(ledger, mechanism, analyst="ann", database=db, sql="q", true_value=1, rs=1)
    monkeypatch.undo()
    assert ledger.halts(db) and ledger.pending() == [] and ledger.verify_audit().ok


def test_a_failing_record_release_closes_the_pending_charge_and_a_retry_neither_waits_nor_pays(db, monkeypatch):
    """Finding 10: storing the answer fails once (a full disk); the retry used to wait up to 900 s, then pay again."""
    ledger = make(db)
    real = audit_mod.append
    calls = []

    def full_disk_once(conn, row):
        if not calls:
            calls.append(row)
            raise sqlite3.OperationalError("database or disk is full")
        return real(conn, row)

    monkeypatch.setattr(audit_mod, "append", full_disk_once)
    with pytest.raises(DeploymentHaltedError):
        release(ledger, db)
    assert calls and calls[0]["outcome"] == "released"  # it was the answer's store that failed
    assert ledger.pending() == []  # the pending entry is closed (with its failure row)
    assert ledger.spent(db) == Budget.of(1)
    retry = make(db, pending_timeout_s=900)
    forbid_waiting(monkeypatch)
    with pytest.raises(DeploymentHaltedError):
        release(retry, db)  # the identical request: refused at once, without waiting for its payer
    assert retry.spent(db) == Budget.of(1) and len(retry.charges()) == 1  # not charged a second time
    assert retry.verify_audit().ok


def test_a_ledger_that_cannot_be_written_at_all_still_halts_and_records_it_later(db, monkeypatch):
    """The answer and the halt both fail to be written: this process refuses every release (no wait,
    no second charge) and writes the halt, closing the stranded pending charge, once it can."""
    ledger = make(db)
    monkeypatch.setattr(audit_mod, "append", lambda conn, row: (_ for _ in ()).throw(sqlite3.OperationalError("disk I/O error")))
    with pytest.raises(DeploymentHaltedError):
        release(ledger, db)
    assert len(ledger.pending()) == 1  # nothing could be written: the charge is still pending
    retry = make(db, pending_timeout_s=900)
    forbid_waiting(monkeypatch)
    with pytest.raises(DeploymentHaltedError):
        release(retry, db)  # refused at once, without waiting for the stranded payer
    assert len(retry.charges()) == 1
    monkeypatch.undo()  # the disk has room again
    with pytest.raises(DeploymentHaltedError):
        release(retry, db, "SELECT COUNT(*) FROM another")
    assert retry.pending() == [] and len(retry.charges()) == 1
    assert [r.get("outcome") or r.get("kind") for r in retry.audit_rows()] == ["failed", "halt"]
    assert make(db).halts(db)  # now on disk: every process sees it
    assert retry.verify_audit().ok
    retry.resume(db)
    assert release(retry, db, "SELECT COUNT(*) FROM another").charge_id == 2


def test_a_request_waiting_for_an_identical_payer_is_refused_when_the_payer_halts(db):
    payer = make(db)
    k = request_key(database=db, analyst="ann", sql="SELECT COUNT(*) FROM t", mode="dp", epsilon="1", delta=None)
    charge = payer.charge_release("ann", db, Budget.spend("1"), k)
    outcome: list[object] = []

    def wait() -> None:
        try:
            outcome.append(release(make(db), db))
        except DeploymentHaltedError as exc:
            outcome.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.3)
    assert waiter.is_alive()  # it waits for the payer's answer
    assert payer.halt(db, {"error": SECRET}, charge=charge) is True
    waiter.join(60)  # bounds a hang only: the waiter sees the halt at its next poll (0.5 s at most)
    assert len(outcome) == 1 and isinstance(outcome[0], DeploymentHaltedError)
    assert len(payer.charges()) == 1 and payer.verify_audit().ok


def test_an_aborted_late_payer_halts_too(db, monkeypatch):
    """A release that outlives the pending timeout is closed as aborted by another request; when it
    finally tries to store its answer, that failure (its timing depends on the data) halts as well."""
    ledger = make(db, pending_timeout_s=0.2)

    def slow() -> Measured:
        time.sleep(0.4)
        make(db, pending_timeout_s=0.2).close_abandoned()
        return Measured(5, 1)

    with pytest.raises(DeploymentHaltedError):
        release(ledger, db, measure=slow)
    rows = ledger.audit_rows()
    assert [r.get("outcome") or r.get("kind") for r in rows] == ["aborted", "halt"]
    assert "ReleaseAbortedError" in rows[1]["details"]["error"] and ledger.verify_audit().ok


def test_halt_without_a_charge_for_the_split_modes_authorized_part(db):
    """``Ledger.halt(database, details)``: what release/session.py calls when a step after a cached charge fails."""
    ledger = make(db)
    release(ledger, db)
    assert ledger.halt(db, {"error": SECRET, "charge_id": 1}) is True
    with pytest.raises(DeploymentHaltedError):
        release(ledger, db)  # even the cached answer is refused while halted
    assert ledger.verify_audit().ok and len(ledger.charges()) == 1
    ledger.resume(db)
    assert release(ledger, db).cached


def test_a_deleted_halt_mark_is_found_by_verify(db):
    ledger = make(db)
    with pytest.raises(DeploymentHaltedError):
        release(ledger, db, measure=fail)
    ledger._conn.execute("DELETE FROM meta WHERE key LIKE 'halted:%'")
    assert "halt_mismatch" in {p.kind for p in ledger.verify_audit().problems}
    ledger._conn.execute("INSERT INTO meta (key, value) VALUES ('halted:deployment:forged', '{}')")
    assert len([p for p in ledger.verify_audit().problems if p.kind == "halt_mismatch"]) == 2


def test_ledger_witness_and_deployment_files_are_created_owner_only(tmp_path):
    """Finding 9: the ledger holds exact RS, T_E, CRS and engine texts; it was created 0644."""
    data = tmp_path / "shop.duckdb"
    data.write_bytes(b"")
    old = os.umask(0o022)
    try:
        ledger = Ledger(ledger_path(str(data)), LedgerSettings(epsilon_cap="10", analyst_share="1"))
        release(ledger, str(data))
        files = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir() if p.name != "shop.duckdb"}
        ledger.close()
    finally:
        os.umask(old)
    assert set(files) >= {
        "shop.duckdb.ledger.sqlite", "shop.duckdb.ledger.sqlite-wal", "shop.duckdb.ledger.sqlite-shm",
        "shop.duckdb.pimento-witness.json", "shop.duckdb.pimento-deployment.json",
    }, files
    assert all(mode == 0o600 for mode in files.values()), {k: oct(v) for k, v in files.items()}


@pytest.mark.parametrize("backend", LEDGER_BACKENDS)
def test_halt_refuse_verify_and_resume_on_each_backend(db, backend):
    """The halt mark lives in the ledger's ``meta`` table: the same statements on SQLite and PostgreSQL."""
    with ledger_backend(backend) as url:
        ledger = Ledger(url or ledger_path(db), LedgerSettings(epsilon_cap="10", analyst_share="1"))
        release(ledger, db, "SELECT COUNT(*) FROM before")
        with pytest.raises(DeploymentHaltedError):
            release(ledger, db, measure=fail)
        other = Ledger(url or ledger_path(db), LedgerSettings(epsilon_cap="10", analyst_share="1"))
        with pytest.raises(DeploymentHaltedError):
            release(other, db, "SELECT COUNT(*) FROM before", analyst="bob")
        assert other.verify_audit().ok and len(other.halts(db)) == 1 and len(other.charges()) == 2
        assert [r["failed_charge"] for r in other.resume(db, "ok")] == [2]
        assert release(other, db, "SELECT COUNT(*) FROM after").charge_id == 3 and other.verify_audit().ok
        ledger.close()
        other.close()
