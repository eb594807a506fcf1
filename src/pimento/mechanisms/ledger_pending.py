"""Pending charges: a charge waits, under its request key, for its answer or failure to be recorded.

An identical request that arrives meanwhile waits for that answer instead of paying again. A
pending entry whose process is gone (:func:`.ledger_owner.owner_alive`) or that is older than
``pending_timeout_s`` is closed with an audit row "aborted, nothing released", and the late
payer's answer is withheld (:class:`ReleaseAbortedError` from ``record_release``).
"""

from __future__ import annotations

import time
from typing import Any

from pimento.mechanisms import audit as _audit
from pimento.mechanisms.ledger_chain import ChainState, Charge
from pimento.mechanisms.ledger_files import now
from pimento.mechanisms.ledger_owner import owner_alive
from pimento.mechanisms.ledger_store import LedgerStore

__all__ = ["PendingCharges"]


class PendingCharges(LedgerStore):
    """Closing abandoned pending charges (a mixin of :class:`pimento.mechanisms.ledger.Ledger`)."""

    def _stale(self, started: float, owner: str) -> str | None:
        """Why a pending charge is considered abandoned, or None while it may still answer."""
        alive = owner_alive(owner)
        if alive is False:
            return "the process that paid for it ended before storing an answer"
        if time.time() - started > self.pending_timeout_s:
            return f"it stayed pending longer than {self.pending_timeout_s:g} s"
        return None

    def _abort(self, charge_id: int, request_key_: str | None, reason: str, state: ChainState) -> None:
        row = state.rows.get(charge_id)
        self._conn.execute("DELETE FROM pending WHERE charge_id = ?", (charge_id,))
        audit_row = {
            "time": now(), "kind": row["kind"] if row else "release", "outcome": "aborted",
            "detail": f"aborted, nothing released: {reason}", "request_key": request_key_,
            "analyst": row["analyst"] if row else None, "database": row["database"] if row else None,
        }
        if row is not None:
            self._append_audit(audit_row, Charge(charge_id, row["time"], row["database"], row["analyst"], row["kind"], row["budget"], request_key_))
        else:
            _audit.append(self._conn, {**audit_row, "charge_id": charge_id})

    def _reap(self, state: ChainState) -> int:
        """Close every abandoned pending charge (inside the open transaction); returns how many."""
        closed = 0
        for cid, key, started, owner in self._conn.execute("SELECT charge_id, request_key, started, owner FROM pending ORDER BY charge_id").fetchall():
            reason = self._stale(started, owner)
            if reason:
                self._abort(cid, key, reason, state)
                closed += 1
        return closed

    def close_abandoned(self) -> int:
        """Close, with an audit row "aborted, nothing released", every pending charge whose process is
        gone or that is older than the pending timeout. Returns how many were closed."""
        (n,) = self._conn.execute("SELECT COUNT(*) FROM pending").fetchone()
        if not n:
            return 0
        return self._write(lambda: self._reap(self._scan()))

    def pending(self) -> list[dict[str, Any]]:
        """The charges that wait for their answer or failure to be recorded."""
        return [
            {"charge_id": cid, "request_key": key, "started": started, "owner": owner}
            for cid, key, started, owner in self._conn.execute("SELECT charge_id, request_key, started, owner FROM pending ORDER BY charge_id")
        ]
