"""The clean mark of a stored answer's read (issue 28, PERF7; :mod:`pimento.mechanisms.ledger_clean`).

A ledger object kept open (the service's memo keeps one per thread) answers a repeat of a stored answer's read with
one ``PRAGMA data_version`` and one ``stat`` of the witness while nothing was committed: these tests check that
every way the answer, the halts, the integrity check or the budget could have changed since is seen (another
connection's commit, another process's, this connection's own, a witness replaced, the chain's periodic full
read), and that the result is always what a ledger opened afresh reads.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from pimento.config import LedgerSettings
from pimento.mechanisms import Budget, Ledger, ledger_path
from pimento.mechanisms import ledger_store
from pimento.mechanisms.ledger import database_keys, request_key, witness_path


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "shop.duckdb")


def make(db: str) -> Ledger:
    return Ledger(ledger_path(db), LedgerSettings(epsilon_cap="100", analyst_share="1"))


def key(db: str, i: int) -> str:
    return request_key(database=db, analyst="ann", sql=f"SELECT COUNT(*) FROM t WHERE a = {i}", mode="dp", epsilon="1", delta=None)


def release(ledger: Ledger, db: str, i: int) -> int:
    k = key(db, i)
    charge = ledger.charge_release("ann", db, Budget.spend("1"), k)
    assert not isinstance(charge, dict)
    ledger.record_release(k, charge, {"value": i, "charge_id": charge.id}, {"analyst": "ann", "value": i})
    return charge.id


class Statements:
    """The statements one ledger object's connection runs (sqlite3's trace callback)."""

    def __init__(self, ledger: Ledger) -> None:
        self.seen: list[str] = []
        ledger._conn._conn.set_trace_callback(self.seen.append)

    def during(self, call):
        self.seen.clear()
        result = call()
        return result, list(self.seen)


def read(ledger: Ledger, db: str, i: int):
    """``ledger``'s read of the answer stored for request ``i`` on ``db``, and analyst ann's budget left."""
    return ledger.stored_and_left(database_keys(db), key(db, i), "ann")


@contextmanager
def marked(db: str, *requests: int) -> Iterator[Ledger]:
    """A ledger kept open after ``requests`` were released (by another object, closed since) and the last one read
    once through it: the clean mark set."""
    with make(db) as writer:
        for i in requests:
            release(writer, db, i)
    with make(db) as kept:
        assert read(kept, db, requests[-1]) is not None
        yield kept


def fresh_read(db: str, i: int):
    """What a ledger opened afresh reads: the stored answer clean, and the budget left."""
    with make(db) as ledger:
        return read(ledger, db, i)


def test_a_repeat_with_nothing_committed_is_one_statement_and_the_same_answer(db):
    with make(db) as writer:
        charge_id = release(writer, db, 1)
    with make(db) as kept:
        trace = Statements(kept)
        first, statements = trace.during(lambda: read(kept, db, 1))
        assert first[0]["charge_id"] == charge_id and first[1].epsilon == 99 and len(statements) > 5  # the full read: answer, integrity, halts
        again, statements = trace.during(lambda: read(kept, db, 1))
        assert again == first == fresh_read(db, 1)
        assert statements == ["PRAGMA data_version"]


def test_another_connections_commit_is_seen_and_the_budget_read_again(db):
    with make(db) as writer:
        charge_id = release(writer, db, 1)
    with make(db) as kept, make(db) as other:
        assert read(kept, db, 1)[1].epsilon == 99
        release(other, db, 2)  # another connection commits a charge (and its answer)
        trace = Statements(kept)
        after, statements = trace.during(lambda: read(kept, db, 1))
        assert after == fresh_read(db, 1) and after[0]["charge_id"] == charge_id
        assert after[1].epsilon == 98  # a mark never invalidated would say 99
        assert len(statements) > 1


def test_a_commit_that_leaves_the_witness_as_it_was_is_seen(db):
    """data_version, not the witness file, is what shows another connection's commit: here one that writes no witness
    (a halt mark put in ``meta`` by hand, which every release must honour)."""
    with marked(db, 1) as kept:
        with sqlite3.connect(ledger_path(db)) as raw:
            raw.execute("INSERT INTO meta (key, value) VALUES ('halted:*', '{}')")
        assert read(kept, db, 1) is None


def test_another_processs_halt_refuses_the_marked_answer(db):
    with marked(db, 1) as kept:
        code = textwrap.dedent(f"""
            from pimento.config import LedgerSettings
            from pimento.mechanisms import Ledger, ledger_path
            with Ledger(ledger_path({db!r}), LedgerSettings(epsilon_cap="100", analyst_share="1")) as ledger:
                assert ledger.halt({db!r}, {{"error": "another process halts"}})
        """)
        subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
        assert read(kept, db, 1) is None  # the release path refuses


def test_this_connections_own_commit_is_seen(db, monkeypatch):
    """A halt written through the kept object itself does not move its own data_version: total_changes does (here with
    the witness left as it was, as when its write fails or loses a race: it is written after the commit, best effort)."""
    with make(db) as writer:
        release(writer, db, 1)
    monkeypatch.setattr(ledger_store, "write_witness", lambda *args: None)
    with make(db) as kept:
        assert read(kept, db, 1) is not None
        assert kept.halt(db, {"error": "this connection halts"})
        assert read(kept, db, 1) is None


def test_a_witness_changed_without_a_commit_is_read_again(db):
    witness = witness_path(ledger_path(db))
    with marked(db, 1) as kept:
        recorded = json.loads(witness.read_text())
        witness.write_text(json.dumps({**recorded, "charge_hash": "0" * 64}))  # names a charge the ledger does not hold
        assert read(kept, db, 1) is None  # the fast check fails


def test_a_kept_object_reads_the_whole_chain_again_after_the_rescan_period(db, monkeypatch):
    """An early charge edited behind the triggers' back (it never lowers the budget a process verified) is refused by a
    ledger object kept open once its last full read of the chain is older than FULL_RESCAN_S, as by a new one."""
    with marked(db, 1, 2) as kept:
        with sqlite3.connect(ledger_path(db)) as raw:
            raw.execute("DROP TRIGGER charges_no_update")
            raw.execute("UPDATE charges SET epsilon = '0.5' WHERE id = 1")
        real = time.monotonic
        monkeypatch.setattr(ledger_store.time, "monotonic", lambda: real() + ledger_store.FULL_RESCAN_S + 1)
        assert read(kept, db, 2) is None


def test_the_mark_is_per_request_key_and_an_unknown_analyst_is_refused(db):
    with marked(db, 1) as kept:
        assert read(kept, db, 7) is None  # never stored
        with pytest.raises(Exception, match="invalid analyst"):
            kept.stored_and_left(database_keys(db), key(db, 1), "*")
