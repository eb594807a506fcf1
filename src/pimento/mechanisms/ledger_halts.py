"""Halting a deployment's releases after a failure that followed a charge, and resuming them.

:meth:`Halts.halt` closes the pending charge with its ``failed`` audit row, appends a ``halt`` row
and marks the database halted (a ``halted:<database key>`` row of ``meta``), in one commit. While
a database is halted every ``Ledger.charge_release`` on it raises
:class:`pimento.errors.DeploymentHaltedError` before charging, until the custodian's
:meth:`Halts.resume` (``pimento audit resume``). A halt that cannot be written holds in the
process meanwhile (:data:`_UNRECORDED_HALTS`).
"""

from __future__ import annotations

import json
from typing import Any

from pimento.errors import DeploymentHaltedError
from pimento.mechanisms import audit as _audit
from pimento.mechanisms.ledger_chain import Charge
from pimento.mechanisms.ledger_files import now
from pimento.mechanisms.ledger_identity import database_key
from pimento.mechanisms.ledger_store import LedgerStore, jsonable

__all__ = ["Halts", "halt_marks", "halt_problems"]

#: Prefix of the ``meta`` row that marks a database's releases halted (``halted:<database key>``);
#: its value names the audit row of the halt. ``halted:*`` halts every database of the ledger.
_HALT_KEY = "halted:"
#: Halts this process could not write to its ledger (the ledger was unwritable): (ledger, database key)
#: -> (database, details, charge). Every release there is refused in this process meanwhile, and
#: the halt is written at the next release attempt (:meth:`Halts.halt`).
_UNRECORDED_HALTS: dict[tuple[str, str], tuple[str, dict[str, Any], Charge | None]] = {}


def halt_marks(conn: _audit.Connection) -> dict[str, int]:
    """The halted database keys in the ledger, each with the audit row of its halt (0 if unreadable)."""
    marks = {}
    for name, value in conn.execute("SELECT key, value FROM meta WHERE key LIKE ?", (_HALT_KEY + "%",)).fetchall():
        try:
            seq = int(json.loads(value).get("seq", 0))
        except (TypeError, ValueError, AttributeError):
            seq = 0
        marks[str(name)[len(_HALT_KEY):]] = seq
    return marks


def halt_problems(conn: _audit.Connection) -> list[_audit.AuditProblem]:
    """The halts the audit log leaves in force must be the ones the ledger marks (verify)."""
    in_force: dict[str, int] = {}
    for seq, text in conn.execute("SELECT seq, row FROM audit ORDER BY seq").fetchall():
        try:
            data = json.loads(text)
        except (TypeError, ValueError):
            continue
        if data.get("kind") == "halt":
            in_force.setdefault(str(data.get("database")), seq)
        elif data.get("kind") == "custodian" and data.get("tool") == "resume":
            lifted = (data.get("details") or {}).get("databases") or [data.get("database")]
            for name in lifted:
                in_force.pop(str(name), None)
    marks = halt_marks(conn)
    problems = [
        _audit.AuditProblem(seq, "halt_mismatch", f"the audit log halts the releases on {name} (row {seq}) and no resume follows, but the ledger's halt mark is gone")
        for name, seq in in_force.items()
        if name not in marks
    ]
    problems += [
        _audit.AuditProblem(None, "halt_mismatch", f"the ledger marks the releases on {name} halted, but the audit log holds no halt of them in force")
        for name in marks
        if name not in in_force
    ]
    return problems


class Halts(LedgerStore):
    """Halting and resuming the releases on a database (a mixin of :class:`pimento.mechanisms.ledger.Ledger`)."""

    def halt(self, database: str, details: dict[str, Any], *, charge: Charge | None = None) -> bool:
        """Halt the releases on ``database`` after a failure that followed a charge; the caller then
        raises :class:`DeploymentHaltedError` (whatever this returns).

        In one transaction: the pending entry of ``charge`` (when given and still open) is closed
        with its audit row ``failed`` holding ``details`` (the custodian's: engine text and all), an
        audit row of kind ``halt`` is appended, and the database is marked halted in the ledger. From
        then on every ``charge_release`` on the database, of every analyst and every process,
        raises :class:`DeploymentHaltedError` before charging anything, until :meth:`resume`.

        Never raises: when the ledger cannot be written (full disk, locked, damaged), the halt holds
        in this process (its releases on the database are refused) and is written, closing the
        pending entry of ``charge``, at the next release attempt. Returns whether it is on disk.
        """
        try:
            key = charge.database if charge is not None else database_key(database)
        except Exception:  # noqa: BLE001 - the database cannot be named: halt every database of this ledger
            key = "*"
        slot = (self._ledger_id, key)
        _UNRECORDED_HALTS[slot] = (database, details, charge)
        try:
            self._write(lambda: self._halt_in_txn(key, details, charge))
        except Exception:  # noqa: BLE001 - the halt holds in this process until it can be written
            return False
        _UNRECORDED_HALTS.pop(slot, None)
        return True

    def _halt_in_txn(self, key: str, details: dict[str, Any], charge: Charge | None) -> None:
        row = jsonable(details)
        if charge is not None and self._close_pending(charge):
            self._append_audit({**row, "outcome": "failed", "detail": "failed after its charge: releases on the deployment are halted"}, charge)
        seq, _ = _audit.append(
            self._conn, {"time": now(), "kind": "halt", "database": key, "failed_charge": charge.id if charge else None, "details": row}
        )
        self._conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
            (_HALT_KEY + key, _audit.canonical_json({"seq": seq, "time": now()})),
        )

    def _write_unrecorded_halts(self) -> None:
        """Try again to write the halts this process could not write to this ledger."""
        for (ledger_id, _key), (database, details, charge) in list(_UNRECORDED_HALTS.items()):
            if ledger_id == self._ledger_id:
                self.halt(database, details, charge=charge)

    def _refuse_if_halted(self, key: str) -> None:
        """Raise :class:`DeploymentHaltedError` when the releases on ``key`` are halted (in the ledger or in this process)."""
        if self._halted_in_process(key):
            raise DeploymentHaltedError()
        if self._conn.execute("SELECT 1 FROM meta WHERE key IN (?, ?)", (_HALT_KEY + key, _HALT_KEY + "*")).fetchone() is not None:
            raise DeploymentHaltedError()

    def _halted_in_process(self, key: str) -> bool:
        """Whether this process holds a halt of the releases on ``key`` it could not write yet (:data:`_UNRECORDED_HALTS`)."""
        return (self._ledger_id, key) in _UNRECORDED_HALTS or (self._ledger_id, "*") in _UNRECORDED_HALTS

    def _halt_marks(self) -> dict[str, int]:
        """The halted database keys in the ledger, each with the audit row of its halt (0 if unreadable)."""
        return halt_marks(self._conn)

    def halts(self, database: str) -> list[dict[str, Any]]:
        """The audit rows of the halts in force on ``database``, oldest first; empty when its releases are not halted."""
        key = database_key(database)
        marks = {k: v for k, v in self._halt_marks().items() if k in (key, "*")}
        if not marks:
            return []
        since = min(marks.values())
        rows = []
        for text, digest in self._conn.execute("SELECT row, hash FROM audit WHERE seq >= ? ORDER BY seq", (since,)).fetchall():
            try:
                row = {**json.loads(text), "hash": digest}
            except (TypeError, ValueError):
                continue
            if row.get("kind") == "halt" and row.get("database") in marks:
                rows.append(row)
        return rows or [{"kind": "halt", "database": key, "detail": "marked halted; its halt row was not found in the audit log"}]

    def resume(self, database: str, note: str | None = None) -> list[dict[str, Any]]:
        """Custodian: lift the halt of ``database``, with an audit row (kind ``custodian``, tool
        ``resume``, the ``note`` and the halts lifted). Returns the audit rows of the halts it lifted;
        empty (and nothing written) when the releases on ``database`` were not halted."""
        key = database_key(database)

        def body() -> list[dict[str, Any]]:
            lifted = self.halts(database)
            marks = [k for k in self._halt_marks() if k in (key, "*")]
            if not marks:
                return []
            for mark in marks:
                self._conn.execute("DELETE FROM meta WHERE key = ?", (_HALT_KEY + mark,))
            details = {"note": note, "databases": marks, "halts": [r.get("seq") for r in lifted]}
            _audit.append(self._conn, {"time": now(), "kind": "custodian", "tool": "resume", "database": key, "details": details})
            return lifted

        lifted = self._write(body)
        for slot in [s for s in _UNRECORDED_HALTS if s[0] == self._ledger_id and s[1] in (key, "*")]:
            _UNRECORDED_HALTS.pop(slot, None)
        return lifted
