"""A ledger kept open and renewed for each request answers as a new ledger would (issue 28, PERF9).

:meth:`pimento.mechanisms.ledger.Ledger.renew` stands for opening a new object on the same path: the open's
checks, the pages it cached dropped, the chain and the pending charges as a new object knows them; False when
it cannot stand for one. The statement cuts of the same change (the witness's charge compared with the scan
of the same snapshot, the charges' head a scan verified, no pending charges to close) keep their refusals.

Mutants each test fails on: ``renew`` without ``PRAGMA shrink_memory``, without the witness check, without the
emptied-ledger check, without the file identity, without forgetting the chain or the pending charges; the
witness's charge never compared.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3

import pytest

from pimento.config import LedgerSettings
from pimento.errors import LedgerIntegrityError
from pimento.mechanisms import Budget, Ledger, ledger_path
from pimento.mechanisms import ledger_files, ledger_store
from pimento.mechanisms.ledger import Charge, request_key, witness_path


@pytest.fixture
def db(tmp_path) -> str:
    return str(tmp_path / "shop.duckdb")


def make(db: str, **kw) -> Ledger:
    return Ledger(ledger_path(db), LedgerSettings(epsilon_cap="10", analyst_share="1"), **kw)


def key(db: str, i: int) -> str:
    return request_key(database=db, analyst="ann", sql=f"SELECT COUNT(*) FROM t WHERE a = {i}", mode="dp", epsilon="1", delta=None)


def release(ledger: Ledger, db: str, i: int) -> dict:
    k = key(db, i)
    charge = ledger.charge_release("ann", db, Budget.spend("1"), k)
    assert isinstance(charge, Charge)
    return ledger.record_release(k, charge, {"value": 7, "charge_id": charge.id}, {"analyst": "ann", "value": 7})


def surgery(db: str) -> sqlite3.Connection:
    conn = sqlite3.connect(ledger_path(db), isolation_level=None)
    for trigger in ("charges_no_update", "charges_no_delete", "audit_no_update", "audit_no_delete"):
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    return conn


def test_a_renewed_ledger_reads_a_page_changed_under_it_as_a_new_one_does(db):
    """Bytes written into the file by anything but SQLite: SQLite's checks do not see them, a kept connection
    would read the pages it cached; renewed, it reads the file, as a new connection does."""
    ledger = make(db)
    release(ledger, db, 1)
    release(ledger, db, 2)
    ledger._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert ledger.renew()  # reads the charges' root page, now from the file
    page = ledger._conn.execute("PRAGMA page_size").fetchone()[0]
    (root,) = ledger._conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'charges'").fetchone()
    with open(ledger_path(db), "r+b") as fh:
        fh.seek((root - 1) * page)
        fh.write(b"\xa5" * page)
    with pytest.raises(LedgerIntegrityError, match="damaged"):
        make(db)
    with pytest.raises(LedgerIntegrityError, match="damaged"):
        ledger.renew()


def _unreadable_witness(db: str) -> None:
    witness_path(ledger_path(db)).write_text("not json")


def _emptied(db: str) -> None:
    surgery(db).execute("DELETE FROM charges")


@pytest.mark.parametrize("damage", [_unreadable_witness, _emptied], ids=["unreadable witness", "charges emptied"])
def test_renew_refuses_what_opening_refuses_in_the_same_words(db, damage):
    ledger = make(db)
    release(ledger, db, 1)
    assert ledger.renew()
    damage(db)
    with pytest.raises(LedgerIntegrityError) as opened:
        make(db)
    with pytest.raises(LedgerIntegrityError) as renewed:
        ledger.renew()
    assert str(renewed.value) == str(opened.value)


def test_renew_is_false_when_the_path_holds_another_file_or_another_process_asks(db, tmp_path, monkeypatch):
    ledger = make(db)
    release(ledger, db, 1)
    ledger._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert ledger.renew()
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(ledger_path(db), copy)
    os.replace(copy, ledger_path(db))  # the same bytes, another file: a new object would open that one
    assert not ledger.renew()
    ledger.close()
    other = make(db)
    assert other.renew()
    monkeypatch.setattr(ledger_store.os, "getpid", lambda: -1)  # a forked child: its connection is not its own
    assert not other.renew()


def test_a_deleted_ledger_is_refused_by_renew_as_by_opening(db):
    ledger = make(db)
    release(ledger, db, 1)
    for suffix in ("", "-wal", "-shm"):
        ledger_path(db).with_name(ledger_path(db).name + suffix).unlink(missing_ok=True)
    with pytest.raises(LedgerIntegrityError, match="missing or empty"):
        ledger.renew()


def test_a_renewed_ledger_forgets_its_earlier_pending_charges(db):
    """A new object does not know the charges an earlier one left pending: it waits for their payer (here, past the
    pending timeout, closes them as aborted) instead of refusing as the object that made them does."""
    ledger = make(db, pending_timeout_s=0.2)
    pending = ledger.charge_release("ann", db, Budget.spend("1"), key(db, 1))
    assert isinstance(pending, Charge)
    assert ledger.renew()
    again = ledger.charge_release("ann", db, Budget.spend("1"), key(db, 1))
    assert isinstance(again, Charge) and again.id == pending.id + 1
    outcomes = [r.get("outcome") for r in ledger.audit_rows()]
    assert outcomes == ["aborted"]


def test_a_renewed_ledger_starts_from_what_the_process_verified(db):
    """Another object of the process found the chain edited (its verified chain is dropped): a renewed object reads the
    whole chain again, as a new one does, and refuses; it does not extend the prefix it verified itself."""
    ledger = make(db)
    for i in range(3):
        release(ledger, db, i)
    surgery(db).execute("UPDATE charges SET epsilon = '0' WHERE id = 1")
    assert not make(db).verify_audit().ok  # a full read: the process no longer trusts its verified chain
    assert ledger.renew()
    with pytest.raises(LedgerIntegrityError, match="integrity check"):
        release(ledger, db, 9)


def test_a_witness_naming_the_last_charge_with_another_hash_is_refused(db):
    """The fast check compares the witness's charge with the hash its scan read in the same snapshot."""
    ledger = make(db)
    release(ledger, db, 1)
    release(ledger, db, 2)
    path = witness_path(ledger_path(db))
    witness = json.loads(path.read_text())
    assert witness["charges"] == 2
    path.write_text(json.dumps({**witness, "charge_hash": "0" * 64}))
    with pytest.raises(LedgerIntegrityError, match="records charge 2 .*holds another"):
        release(ledger, db, 3)


def test_a_fresh_release_on_a_renewed_ledger_runs_no_open_statement(db, monkeypatch):
    """The statements of one fresh release on a renewed ledger: no connection set-up (PRAGMA journal_mode, synchronous,
    busy_timeout), the open's count of charges an EXISTS; 42 against 47 on a new object before PERF9."""
    ledger = make(db)
    release(ledger, db, 1)
    seen: list[str] = []
    execute = ledger_files.SqliteConnection.execute

    def logged(self, sql, params=(), /):
        seen.append(" ".join(sql.split()))
        return execute(self, sql, params)

    monkeypatch.setattr(ledger_files.SqliteConnection, "execute", logged)
    assert ledger.renew()
    release(ledger, db, 2)
    ledger.remaining(db, "ann")
    assert not [s for s in seen if s.startswith(("PRAGMA journal_mode", "PRAGMA synchronous", "PRAGMA busy_timeout"))]
    assert "SELECT COUNT(*) FROM charges" not in seen
    assert len(seen) == 42, seen


def test_a_witness_that_lags_behind_is_still_no_alarm(db):
    """A witness naming an earlier charge (writers race after their commits) is compared with that charge's row."""
    ledger = make(db)
    release(ledger, db, 1)
    release(ledger, db, 2)
    (charge_hash,) = ledger._conn.execute("SELECT hash FROM charges WHERE id = 1").fetchone()
    (audit_hash,) = ledger._conn.execute("SELECT hash FROM audit WHERE seq = 1").fetchone()
    path = witness_path(ledger_path(db))
    witness = json.loads(path.read_text())
    path.write_text(json.dumps({**witness, "charges": 1, "charge_hash": charge_hash, "audit_rows": 1, "audit_hash": audit_hash}))
    assert release(ledger, db, 3)["charge_id"] == 3
