"""The ledger's integrity checks: the fast one before every charge, the full one of ``audit verify``.

Every charge is refused, with :class:`LedgerIntegrityError`, when a fast check fails
(:meth:`IntegrityChecks._fast_check`): the charge chain recomputes (in full the first time a process
looks at the ledger file, and again once its last full read is older than
:data:`.ledger_store.FULL_RESCAN_S`; otherwise the charges added since and the last verified one, the
budget being the sum this process verified), the last audit row recomputes, charges = audited + pending, and the witness
file agrees (the charge it names compared with the row, or, when it names the last charge the scan of the same
snapshot verified, with the hash that scan read: the same stored value, one statement fewer). :meth:`IntegrityChecks.verify_audit` checks everything (``pimento audit verify``);
:meth:`IntegrityChecks.check_file` reads every page of the SQLite file.
"""

from __future__ import annotations

import json

from pimento.errors import LedgerIntegrityError
from pimento.mechanisms import audit as _audit
from pimento.mechanisms.ledger_chain import ChainState
from pimento.mechanisms.ledger_files import damaged
from pimento.mechanisms.ledger_halts import halt_problems
from pimento.mechanisms.ledger_store import LedgerStore
from pimento.mechanisms.ledger_witness import witness_problems

__all__ = ["IntegrityChecks"]


class IntegrityChecks(LedgerStore):
    """The integrity checks of a ledger (a mixin of :class:`pimento.mechanisms.ledger.Ledger`)."""

    def _counts(self) -> tuple[int, int, int]:
        """(audit rows with a charge, distinct charges audited, pending)."""
        audited, distinct = self._conn.execute("SELECT COUNT(charge_id), COUNT(DISTINCT charge_id) FROM audit").fetchone()
        (pending,) = self._conn.execute("SELECT COUNT(*) FROM pending").fetchone()
        return audited, distinct, pending

    def _witness_problems(self, state: ChainState, *, same_snapshot: bool = False) -> list[_audit.AuditProblem]:
        """The witness compared with the ledger; ``same_snapshot``: ``state`` was scanned in the transaction that
        reads now, so the hash of its last charge is the one stored (:func:`.ledger_chain.scan_charges` read it)."""
        if self.witness is None:
            return []
        known = (state.last_id, state.last_hash) if same_snapshot and state.last_id and not state.problems else None
        return witness_problems(self._conn, self.path, self.witness, known=known)

    def _fast_check(self) -> ChainState:
        """The checks run before every charge (inside its transaction); raise LedgerIntegrityError."""
        return self._fast_check_counted()[0]

    def _fast_check_counted(self) -> tuple[ChainState, int]:
        """:meth:`_fast_check`, and the number of pending charges it counted in its snapshot (the transaction's)."""
        state = self._scan()
        problems = [p.detail for p in state.problems]
        audit_problem = _audit.check_head(self._conn)
        if audit_problem:
            problems.append(audit_problem)
        audited, distinct, pending = self._counts()
        if audited != distinct:
            problems.append(f"{audited - distinct} charge(s) have more than one audit row")
        if audited + pending != state.count:
            problems.append(f"{state.count} charges but {audited} audit rows of charges and {pending} pending: rows were deleted")
        problems += [p.detail for p in self._witness_problems(state, same_snapshot=True)]
        if problems:
            raise LedgerIntegrityError(
                f"the budget ledger {self.name} failed its integrity check ({problems[0]}"
                + (f"; and {len(problems) - 1} more" if len(problems) > 1 else "")
                + "): releases are refused; nothing was spent",
                hint="the custodian should run `pimento audit verify --db DB` and restore the ledger from a backup",
            )
        return state, pending

    def check_file(self) -> None:
        """Read every page of the SQLite ledger file (``PRAGMA quick_check``); raise LedgerIntegrityError
        if it is damaged. Run where a full read is affordable: ``pimento serve`` at start, ``audit verify``."""
        if self.postgres:
            return
        found = [str(r[0]) for r in self._conn.execute("PRAGMA quick_check(5)").fetchall()]
        if found != ["ok"]:
            raise damaged(self.name, "; ".join(found))

    def verify_audit(self, *, expect_head: str | None = None) -> _audit.AuditReport:
        """Everything :func:`pimento.mechanisms.audit.verify` checks, plus the ledger: the charge chain
        and its head, one audit row per charge that is not pending (and none for an unknown charge,
        with the charge's budget), and the witness file. Read-only: see :meth:`close_abandoned`."""
        report = _audit.verify(self._conn, expect_head=expect_head)
        state = self._scan(full=True)
        problems = list(report.problems) + state.problems
        pending = {cid for (cid,) in self._conn.execute("SELECT charge_id FROM pending")}
        problems += self._audit_row_problems(state, pending)
        problems += self._answer_problems()
        for cid in pending - set(state.rows):
            problems.append(_audit.AuditProblem(None, "audit_without_charge", f"a pending entry names charge {cid}, which the ledger does not hold"))
        problems += self._witness_problems(state)
        problems += halt_problems(self._conn)
        notes: list[str] = []
        if self.witness is not None and not self.witness.exists() and state.count:
            notes.append(f"no witness file {self.witness.name} (it is written at the next charge)")
        return _audit.AuditReport(
            rows=report.rows, head=report.head, problems=tuple(problems), charges=state.count, pending=len(pending), notes=tuple(notes)
        )

    def _audit_row_problems(self, state: ChainState, pending: set[int]) -> list[_audit.AuditProblem]:
        """One audit row per charge that is not pending, none for an unknown charge or a pending one,
        each with its charge's budget."""
        problems: list[_audit.AuditProblem] = []
        seen: dict[int, int] = {}
        for seq, text, charge_id in self._conn.execute("SELECT seq, row, charge_id FROM audit WHERE charge_id IS NOT NULL ORDER BY seq"):
            seen[charge_id] = seen.get(charge_id, 0) + 1
            row = state.rows.get(charge_id)
            if row is None:
                problems.append(_audit.AuditProblem(seq, "audit_without_charge", f"the row names charge {charge_id}, which the ledger does not hold: a charge was deleted"))
                continue
            try:
                data = json.loads(text)
            except (TypeError, ValueError):
                continue
            eps, dlt = row["budget"].to_text()
            if (data.get("charge_epsilon"), data.get("charge_delta")) != (eps, dlt) and "charge_epsilon" in data:
                problems.append(
                    _audit.AuditProblem(seq, "charge_mismatch", f"the row says charge {charge_id} cost ({data.get('charge_epsilon')}, {data.get('charge_delta')}), the ledger says ({eps}, {dlt})")
                )
            if charge_id in pending:
                problems.append(_audit.AuditProblem(seq, "charge_mismatch", f"charge {charge_id} has an audit row but is still pending"))
        for cid in state.rows:
            n = seen.get(cid, 0)
            if n == 0 and cid not in pending:
                problems.append(_audit.AuditProblem(None, "charge_unaudited", f"charge {cid} has no audit row and is not pending: an audit row was lost or deleted"))
            elif n > 1:
                problems.append(_audit.AuditProblem(None, "charge_audited_twice", f"charge {cid} has {n} audit rows"))
        return problems

    def _answer_problems(self) -> list[_audit.AuditProblem]:
        """Every cached answer has a ``released`` audit row that released its value."""
        problems: list[_audit.AuditProblem] = []
        outcomes = {
            charge_id: json.loads(text)
            for text, charge_id in self._conn.execute("SELECT row, charge_id FROM audit WHERE charge_id IS NOT NULL")
        }
        for key_, charge_id, answer_text in self._conn.execute("SELECT request_key, charge_id, answer FROM answers"):
            row = outcomes.get(charge_id)
            if row is None or row.get("outcome", "released") != "released":
                problems.append(_audit.AuditProblem(None, "answer_unaudited", f"the cached answer of request {str(key_)[:12]} names charge {charge_id}, which has no 'released' audit row"))
                continue
            try:
                answer = json.loads(answer_text)
            except (TypeError, ValueError):
                answer = {}
            exact = answer.get("value_exact")
            if exact is not None and row.get("value") is not None and str(exact) != str(row.get("value")):
                problems.append(_audit.AuditProblem(row.get("seq"), "answer_unaudited", f"the cached answer of charge {charge_id} ({exact}) differs from the value its audit row released ({row.get('value')})"))
        return problems
