"""The answer cache: an identical request gets the answer stored for it, free.

A released answer is stored with its audit row in one transaction (:meth:`AnswerCache.record_release`);
a failure after the charge gets its ``failed`` audit row (:meth:`AnswerCache.record_failure`).
Identical means the same :func:`request_key`: database, analyst, SQL, mode, epsilon and delta.
Re-publishing a stored output is post-processing and costs nothing (PROOF.md, section 7).
"""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction
from typing import Any

from pimento.errors import ReleaseAbortedError
from pimento.mechanisms import audit as _audit
from pimento.mechanisms.budget import format_number, parse_number
from pimento.mechanisms.ledger_chain import Charge
from pimento.mechanisms.ledger_files import now
from pimento.mechanisms.ledger_identity import database_key
from pimento.mechanisms.ledger_store import LedgerStore

__all__ = ["AnswerCache", "request_key"]


def request_key(*, database: str, analyst: str, sql: str, mode: str, epsilon: Fraction | Any, delta: Any) -> str:
    """Hash identifying an identical request for the answer cache."""
    payload = {
        "database": database_key(database),
        "analyst": analyst,
        "sql": " ".join(sql.split()),
        "mode": mode,
        "epsilon": format_number(parse_number(epsilon, name="epsilon")),
        "delta": format_number(parse_number(delta, name="delta")) if delta is not None else None,
    }
    return hashlib.sha256(_audit.canonical_json(payload).encode()).hexdigest()


class AnswerCache(LedgerStore):
    """Storing answers and failures, and the cache of answers (a mixin of :class:`pimento.mechanisms.ledger.Ledger`)."""

    @property
    def answer_cache(self) -> bool:
        return self.settings.answer_cache

    def _stored_answer(self, request_key: str) -> dict[str, Any] | None:
        """The answer stored for ``request_key``, whether or not the cache is on."""
        row = self._conn.execute("SELECT answer FROM answers WHERE request_key = ?", (request_key,)).fetchone()
        return json.loads(row[0]) if row is not None else None

    def cached_answer(self, request_key: str) -> dict[str, Any] | None:
        """The answer stored for an identical earlier request, if the cache is on and has one."""
        if not self.answer_cache:
            return None
        return self._stored_answer(request_key)

    def record_release(self, request_key: str, charge: Charge, answer: dict[str, Any], audit_row: dict[str, Any]) -> dict[str, Any]:
        """Store the answer in the cache and append its audit row, in one transaction; return the answer.

        Raises :class:`ReleaseAbortedError` (nothing written, answer withheld) if the charge was
        closed as aborted meanwhile. If the cache already holds an answer for ``request_key``
        (only possible through ``charge``, which does not wait for identical requests),
        that answer is returned and the audit row says this value was withheld.
        """

        def body() -> dict[str, Any]:
            if not self._close_pending(charge):
                raise ReleaseAbortedError(
                    f"charge {charge.id} was closed as aborted before its answer was stored (its process looked gone or it took longer "
                    f"than {self.pending_timeout_s:g} s): the answer is withheld, the charge stays"
                )
            if self.answer_cache:
                stored = self._stored_answer(request_key)
                if stored is not None:
                    self._append_audit({**audit_row, "outcome": "withheld", "detail": "an identical request stored its answer first"}, charge)
                    return stored
                self._conn.execute(
                    "INSERT INTO answers (request_key, charge_id, time, answer) VALUES (?, ?, ?, ?)",
                    (request_key, charge.id, now(), json.dumps(answer, sort_keys=True)),
                )
            self._append_audit({**audit_row, "outcome": "released"}, charge)
            return answer

        return self._write(body)

    def record_failure(self, request_key: str, charge: Charge, audit_row: dict[str, Any]) -> None:
        """Record, for the custodian, that a charged release failed after its charge (the charge stays).

        A charge already closed as aborted keeps its one audit row: nothing is written then.
        """

        def body() -> None:
            if self._close_pending(charge):
                self._append_audit({**audit_row, "outcome": "failed"}, charge)

        self._write(body)
