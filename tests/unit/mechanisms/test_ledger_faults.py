"""Ledger faults (issue 23, finding 11) and the mutants of its integrity checks that survived.

A damaged ledger file (a page overwritten, bytes that are not SQLite) is a clear
LedgerIntegrityError wherever it shows (open, a charge, ``check_file``, verify): ``pimento audit
verify`` says so with exit status 2 instead of "a bug in Pimento" (70). ``pimento audit resume``
lifts a halt (an audited custodian action) and prints what halted it.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from db_support import SHOP, duckdb_file, overwrite_root_page
from typer.testing import CliRunner

from pimento.cli.app import app
from pimento.config import LedgerSettings
from pimento.errors import DeploymentHaltedError, LedgerIntegrityError
from pimento.mechanisms import Budget, Ledger, guarded_release, ledger_path, mechanism_for
from pimento.mechanisms import ledger_halts
from pimento.mechanisms.guarded import Measured
from pimento.mechanisms.ledger import request_key, witness_path
from pimento.mechanisms.ledger_owner import owner_alive

SECRET = "Conversion Error: 'Ana Baker' is not INT32"


@pytest.fixture
def db(tmp_path) -> str:
    path = duckdb_file(tmp_path / "shop.duckdb", SHOP)
    (tmp_path / "pimento.toml").write_text('[ledger]\nepsilon_cap = "1000"\n')
    return str(path)


@pytest.fixture(autouse=True)
def _no_halt_left_behind():
    yield
    ledger_halts._UNRECORDED_HALTS.clear()


def make(db: str) -> Ledger:
    return Ledger(ledger_path(db), LedgerSettings(epsilon_cap="1000"))


def release(ledger: Ledger, db: str, i: int = 0, measure=None):
    sql = f"SELECT COUNT(*) FROM orders WHERE oid = {i} /* {'x' * 800} */"
    if measure is not None:
        return guarded_release(ledger, mechanism_for("1"), analyst="ann", database=db, sql=sql, measure=measure)
    return guarded_release(ledger, mechanism_for("1"), analyst="ann", database=db, sql=sql, true_value=i, rs=1)


def runner() -> CliRunner:
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 keeps stderr apart already
        return CliRunner()


def _output(result) -> str:
    err = getattr(result, "stderr", "") if getattr(result, "stderr_bytes", None) is not None else ""
    return " ".join((result.output + err).split())


def _filled(db: str, n: int = 40) -> Path:
    with make(db) as ledger:
        for i in range(n):
            release(ledger, db, i)
    return ledger_path(db)


def test_a_file_that_is_not_a_ledger_is_refused_at_open(db):
    path = _filled(db, 3)
    with open(path, "r+b") as fh:
        fh.write(b"\x00" * 100)  # the header
    with pytest.raises(LedgerIntegrityError, match="damaged or is not a ledger file"):
        make(db)


def test_bytes_overwritten_in_the_middle_are_reported_by_check_file_verify_and_the_cli(db):
    path = _filled(db)
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.seek(size // 2)
        fh.write(b"\xff" * 8192)
    for look in (Ledger.check_file, Ledger.verify_audit):  # refused at open or by the look itself
        with pytest.raises(LedgerIntegrityError, match="damaged"), make(db) as ledger:
            look(ledger)
    result = runner().invoke(app, ["audit", "verify", "--db", db])
    assert result.exit_code == 2, result.output  # a user error, not "a bug in Pimento" (70)
    text = _output(result)
    assert "damaged" in text and "bug in Pimento" not in text and "Traceback" not in text
    as_json = runner().invoke(app, ["audit", "verify", "--db", db, "--json"])
    assert as_json.exit_code == 2 and json.loads(as_json.stdout)["error"]["type"] == "LedgerIntegrityError"


def test_a_damaged_charges_page_refuses_the_charge_with_an_integrity_error(db):
    path = _filled(db)
    overwrite_root_page(path, "charges")
    with pytest.raises(LedgerIntegrityError, match="damaged"):
        with make(db) as ledger:
            release(ledger, db, 999)


def test_audit_resume_prints_what_halted_and_is_audited(db):
    with make(db) as ledger:
        release(ledger, db, 1)

        def fail() -> Measured:
            raise RuntimeError(SECRET)

        with pytest.raises(DeploymentHaltedError):
            release(ledger, db, 2, measure=fail)
    shown = runner().invoke(app, ["audit", "show", "--db", db])
    assert shown.exit_code == 0 and "halted" in shown.output
    result = runner().invoke(app, ["audit", "resume", "--db", db, "--note", "checked the engine error"])
    assert result.exit_code == 0, result.output
    assert "Ana Baker" in " ".join(result.output.split()) and "resumed" in result.output
    with make(db) as ledger:
        row = ledger.audit_rows()[-1]
        assert (row["kind"], row["tool"], row["details"]["note"]) == ("custodian", "resume", "checked the engine error")
        assert ledger.halts(db) == [] and ledger.verify_audit().ok
        release(ledger, db, 3)
    again = runner().invoke(app, ["audit", "resume", "--db", db, "--json"])
    assert again.exit_code == 0 and json.loads(again.stdout) == {"resumed": False, "halts": []}


# ----------------------------------------------------------------------------- surviving mutants


def test_a_pending_charge_of_another_host_is_not_reaped_by_a_pid_check(db):
    """The pid in the owner token is another machine's: no local pid check may call it dead."""
    owner = "another-host.invalid|999999999|1"  # no such pid here, but it is not ours to check
    assert owner_alive(owner) is None
    with make(db) as ledger:
        k = request_key(database=db, analyst="ann", sql="q", mode="dp", epsilon="1", delta=None)
        ledger.charge_release("ann", db, Budget.spend("1"), k)
        ledger._conn.execute("UPDATE pending SET owner = ?", (owner,))
        assert ledger._stale(__import__("time").time(), owner) is None
        assert ledger.close_abandoned() == 0 and len(ledger.pending()) == 1


def test_a_witness_whose_charge_hash_differs_is_refused(db):
    with make(db) as ledger:
        release(ledger, db, 1)
        release(ledger, db, 2)
    witness = witness_path(ledger_path(db))
    data = json.loads(witness.read_text())
    data["charge_hash"] = "f" * 64  # same count of charges, another chain
    witness.write_text(json.dumps(data))
    with make(db) as ledger:
        assert "witness_mismatch" in {p.kind for p in ledger.verify_audit().problems}
        with pytest.raises(LedgerIntegrityError, match="witness"):
            release(ledger, db, 3)


def test_a_witness_whose_audit_hash_differs_is_refused(db):
    with make(db) as ledger:
        release(ledger, db, 1)
    witness = witness_path(ledger_path(db))
    data = json.loads(witness.read_text())
    data["audit_hash"] = "e" * 64
    witness.write_text(json.dumps(data))
    with make(db) as ledger, pytest.raises(LedgerIntegrityError, match="witness"):
        release(ledger, db, 3)


def test_two_audit_rows_with_their_charge_ids_swapped_fail_verify(db):
    """Same cost, so only the audit row's own charge_id can tell which charge it accounts for."""
    with make(db) as ledger:
        release(ledger, db, 1)
        release(ledger, db, 2)
        assert ledger.verify_audit().ok
    conn = sqlite3.connect(ledger_path(db), isolation_level=None)
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("UPDATE audit SET charge_id = CASE charge_id WHEN 1 THEN 2 WHEN 2 THEN 1 END")
    conn.close()
    with make(db) as ledger:
        problems = ledger.verify_audit().problems
    assert {p.kind for p in problems} >= {"edited"} and any("charge_id column" in p.detail for p in problems)
