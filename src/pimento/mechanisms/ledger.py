"""The privacy-budget ledger: a SQLite file (WAL) beside the database.

Every spend is checked and charged in one ``BEGIN IMMEDIATE`` transaction with
``synchronous = FULL``: when a charge returns, it is on disk, and a refused request has
written nothing. Budgets are stored as exact text (``"1/10"``, ``"0.000001"``) and compared
as Fractions. Caps come from ``[ledger]`` in pimento.toml
(:class:`pimento.config.LedgerSettings`): a total per database, and per analyst.

The release protocol (:func:`pimento.mechanisms.guarded.guarded_release`) is:
:meth:`Ledger.charge_release` (cache look-up and charge, one commit) -> draw the noise ->
:meth:`Ledger.record_release` (the answer in the cache and its audit row, one commit) ->
return; or, after any failure after the charge, :meth:`Ledger.halt`: the pending charge closed
with its ``failed`` audit row, a ``halt`` row, and the database marked halted, one commit,
until the custodian's :meth:`Ledger.resume` (``pimento audit resume``). Invariants, checked by
:meth:`Ledger.verify_audit` (``pimento audit verify``):

- one charge per released value: a charge leaves a ``pending`` entry for its request key;
  an identical request that arrives meanwhile waits for that answer instead of paying again;
  a pending entry whose process is gone (or older than ``pending_timeout_s``) is closed with
  an audit row "aborted, nothing released", and the late payer's answer is withheld;
- one audit row per charge, written in the same transaction that stores the answer, the
  failure, the abort or (synthetic copy) the charge itself;
- the budget is the sum of the charges, which are append-only and hash-chained;
- every charge is refused, with :class:`pimento.errors.LedgerIntegrityError`, when a fast
  check fails (:mod:`.ledger_integrity`);
- a witness file beside the database outlives the ledger file: deleting the ledger file or
  some of its rows does not give budget back.

A crash can lose an answer that was paid for, never return one that was not. A damaged file
(a malformed page, bytes that are not SQLite) raises :class:`pimento.errors.LedgerIntegrityError`
wherever the damage is read; :meth:`Ledger.check_file` reads every page (``serve`` at start, ``audit verify``).
The ledger file, the witness and the deployment file are created with mode 0600.

Tables: ``charges``, ``charges_head``, ``pending``, ``answers`` (the answer cache),
``audit`` and ``audit_head`` (see :mod:`.audit`), ``meta`` (format, halts).

The concerns live in modules of their own, :class:`Ledger` composes them:

- :mod:`.ledger_store`: opening the file or server, the schema, the one write transaction;
- :mod:`.ledger_chain`: :class:`Charge` and the hash chain whose sum is the budget;
- :mod:`.ledger_identity`: which deployment a database is (:func:`database_key`, :func:`ledger_path`);
- :mod:`.ledger_witness`: the witness file; :mod:`.ledger_files`: private files, damaged files;
- :mod:`.ledger_integrity`: the fast check before every charge and ``audit verify``;
- :mod:`.ledger_pending` and :mod:`.ledger_owner`: pending charges and their payers' liveness;
- :mod:`.ledger_answers`: storing answers and failures, the answer cache (:func:`request_key`);
- :mod:`.ledger_clean`: reading a stored answer clean, and the mark that lets a repeat skip the read;
- :mod:`.ledger_halts`: halting and resuming a deployment's releases;
- :mod:`.ledger_migrate`, :mod:`.ledger_schema`, :mod:`.ledger_postgres`: formats, tables, PostgreSQL.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

from pimento.config import Settings
from pimento.errors import BudgetError, InternalError
from pimento.mechanisms import audit as _audit
from pimento.mechanisms.budget import Budget
from pimento.mechanisms.ledger_answers import AnswerCache, request_key
from pimento.mechanisms.ledger_chain import DATABASE_SCOPE, SYNTHETIC_ANALYST, ChainState, Charge, charge_text
from pimento.mechanisms.ledger_clean import CleanReads
from pimento.mechanisms.ledger_files import now
from pimento.mechanisms.ledger_halts import _UNRECORDED_HALTS, Halts  # noqa: F401 - tests reset _UNRECORDED_HALTS through this module
from pimento.mechanisms.ledger_identity import KEY_PREFIX, database_key, database_keys, deployment_file, deployment_id, ledger_path
from pimento.mechanisms.ledger_integrity import IntegrityChecks
from pimento.mechanisms.ledger_pending import PendingCharges
from pimento.mechanisms.ledger_store import jsonable
from pimento.mechanisms.ledger_witness import check_witness, witness_path

__all__ = [
    "DATABASE_SCOPE",
    "SYNTHETIC_ANALYST",
    "Charge",
    "Ledger",
    "check_witness",
    "database_key",
    "database_keys",
    "deployment_file",
    "deployment_id",
    "ledger_path",
    "request_key",
    "witness_path",
]


class Ledger(CleanReads, AnswerCache, Halts, PendingCharges, IntegrityChecks):
    """A budget ledger stored in one SQLite file (or a PostgreSQL database); safe to share between processes.

    Open one per process (or thread); connections are not shared.
    ``pending_timeout_s``: how long an identical request waits for a payer whose process cannot
    be checked (another host) or is still alive, before the payer's charge is closed as aborted.
    """

    @classmethod
    def for_database(cls, database: str, settings: Settings | None = None) -> Ledger:
        """The ledger of ``database`` as pimento.toml configures it: ``[ledger] url`` (PostgreSQL,
        shared by several processes or machines) or the SQLite file :func:`ledger_path`."""
        settings = settings or Settings()
        if settings.ledger.url:
            return cls(os.path.expandvars(settings.ledger.url), settings.ledger)
        return cls(ledger_path(database, settings), settings.ledger)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ caps and totals

    def database_cap(self) -> Budget:
        return self._db_cap

    def analyst_cap(self, analyst: str) -> Budget:
        self._check_analyst(analyst)
        return self._analyst_cap

    def spent(self, database: str, analyst: str | None = None) -> Budget:
        """Total charged on ``database`` (by ``analyst`` if given): the sum of its charges."""
        keys = database_keys(database)
        return self._total(self._sums(keys[0]), keys, analyst or DATABASE_SCOPE)

    def remaining(self, database: str, analyst: str) -> Budget:
        """What ``analyst`` may still spend on ``database``: the smaller of the two caps' remainders, per part."""
        keys = database_keys(database)
        return self._left(self._scan(), keys, analyst, self.analyst_cap(analyst))

    # ------------------------------------------------------------------ charging

    def charge(
        self,
        analyst: str,
        database: str,
        budget: Budget,
        request_key: str | None = None,
        *,
        kind: str = "release",
        note: str | None = None,
    ) -> Charge:
        """Check the caps and record the spend, atomically and durably; refuse with BudgetError otherwise.

        The charge is pending until :meth:`record_release` or :meth:`record_failure` closes it
        (no answer-cache look-up here: :meth:`charge_release` is the release path's call).
        """
        if kind == "synthetic":
            return self.charge_synthetic(database, budget, note=note)
        self._check_analyst(analyst)
        budget.as_spend()
        key, *aliases = database_keys(database)

        def body() -> Charge:
            state = self._fast_check()
            self._refuse_if_halted(key)
            return self._charge_in_txn(state, analyst, key, budget, request_key, kind, note, aliases=tuple(aliases))

        return self._write(body)

    def charge_synthetic(self, database: str, budget: Budget, *, copy_id: str | None = None, note: str | None = None) -> Charge:
        """Charge the generation of a synthetic copy of ``database`` against the database cap.

        Call it before anything of the copy is written. The charge records ``copy_id`` (the id
        stored in the copy's ``_pimento_synth_meta``) as its request key, and its audit row is
        written in the same transaction. Returns the charge.
        """
        budget.as_spend()
        key, *aliases = database_keys(database)
        copy_id = copy_id or str(uuid.uuid4())

        def body() -> Charge:
            state = self._fast_check()
            charge = self._charge_in_txn(state, SYNTHETIC_ANALYST, key, budget, copy_id, "synthetic", note, pending=False, aliases=tuple(aliases))
            self._append_audit(
                {"time": charge.time, "kind": "synthetic", "outcome": "charged", "database": key, "copy_id": copy_id, "note": note},
                charge,
            )
            return charge

        return self._write(body)

    def synthetic_charge(self, database: str, copy_id: str) -> Charge | None:
        """The charge of the synthetic copy ``copy_id`` in this ledger for ``database``, or None."""
        keys = database_keys(database)
        row = self._conn.execute(
            "SELECT id, time, database, analyst, kind, epsilon, delta, request_key FROM charges WHERE kind = 'synthetic' AND request_key = ? "
            f"AND database IN ({', '.join('?' * len(keys))})",
            (copy_id, *keys),
        ).fetchone()
        return Charge(row[0], row[1], row[2], row[3], row[4], Budget.from_text(row[5], row[6]), row[7]) if row else None

    def _charge_in_txn(
        self,
        state: ChainState,
        analyst: str,
        key: str,
        budget: Budget,
        request_key: str | None,
        kind: str,
        note: str | None,
        *,
        pending: bool = True,
        aliases: tuple[str, ...] = (),
    ) -> Charge:
        keys = (key, *(a for a in aliases if a != key))
        db_total = self._total(state.sums, keys, DATABASE_SCOPE)
        if not (db_total + budget).fits_within(self._db_cap):
            left = self._db_cap.minus(db_total)
            raise BudgetError(
                f"database budget exhausted: this request costs {budget} but only {left} is left of the cap {self._db_cap}; nothing was spent"
            )
        if kind != "synthetic":
            an_total = self._total(state.sums, keys, analyst)
            if not (an_total + budget).fits_within(self._analyst_cap):
                left = self._analyst_cap.minus(an_total)
                raise BudgetError(
                    f"budget of analyst {analyst!r} exhausted: this request costs {budget} but only {left} is left of the cap {self._analyst_cap}; nothing was spent"
                )
        time_ = now()
        eps, dlt = budget.to_text()
        cid = state.last_id + 1
        row = {"id": cid, "time": time_, "database": key, "analyst": analyst, "kind": kind, "epsilon": eps, "delta": dlt, "request_key": request_key, "note": note}
        digest = _audit.chain_hash(state.last_hash, charge_text(row))
        self._txn_state = state.appended(row, budget, digest)
        self._conn.execute(
            "INSERT INTO charges (id, time, database, analyst, kind, epsilon, delta, request_key, note, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (cid, time_, key, analyst, kind, eps, dlt, request_key, note, state.last_hash, digest),
        )
        self._conn.execute(
            "INSERT INTO charges_head (id, charge_id, hash) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET charge_id = excluded.charge_id, hash = excluded.hash",
            (cid, digest),
        )
        if pending:
            self._conn.execute(
                "INSERT INTO pending (charge_id, request_key, started, owner) VALUES (?, ?, ?, ?)", (cid, request_key, time.time(), self._owner)
            )
            self._mine.add(cid)
        return Charge(cid, time_, key, analyst, kind, budget, request_key)

    def charge_release(self, analyst: str, database: str, budget: Budget, request_key: str) -> Charge | dict[str, Any]:
        """Charge one release, or return the answer an identical earlier request stored (free).

        In one transaction: the fast integrity check (refusal: :class:`pimento.errors.LedgerIntegrityError`),
        the halt (refusal: :class:`pimento.errors.DeploymentHaltedError`, also for a cached answer),
        abandoned pending charges closed, the answer cache looked up, and -- when an identical
        request is pending -- nothing: this call then waits (polling) for that answer, so that
        identical requests are charged once. Otherwise the caps are checked and the charge is
        made, pending under ``request_key``; the caller must end with :meth:`record_release` or
        :meth:`record_failure` for it. Returns the stored answer dict or the new :class:`Charge`.

        An answer already stored is first looked for in one read transaction (:meth:`_stored_if_clean`),
        without the write lock or a witness write; only when that finds none, or finds anything amiss,
        does the transaction above decide.
        """
        self._check_analyst(analyst)
        budget.as_spend()
        key, *aliases = database_keys(database)
        wait = 0.02
        self._write_unrecorded_halts()
        if self.answer_cache:
            stored = self._stored_if_clean(key, request_key)
            if stored is not None:
                return stored

        def body() -> Charge | dict[str, Any] | None:
            state, pending = self._fast_check_counted()
            self._refuse_if_halted(key)
            if pending and self._reap(state):  # none pending in this transaction's snapshot: none to close
                state = self._scan()
            if self.answer_cache:
                stored = self._stored_answer(request_key)
                if stored is not None:
                    return stored
                waiting = self._conn.execute("SELECT charge_id FROM pending WHERE request_key = ?", (request_key,)).fetchone()
                if waiting is not None:
                    if waiting[0] in self._mine:
                        raise InternalError(
                            f"an identical request was charged (charge {waiting[0]}) through this ledger object and its answer or failure was "
                            "never recorded: waiting for it would never end"
                        )
                    return None  # an identical request is paying: wait for its answer
            return self._charge_in_txn(state, analyst, key, budget, request_key, "release", None, aliases=tuple(aliases))

        while True:
            outcome = self._write(body)
            if outcome is not None:
                return outcome
            time.sleep(wait)
            wait = min(wait * 1.5, 0.5)

    def _stored_if_clean(self, key: str, request_key: str) -> dict[str, Any] | None:
        """The answer stored for ``request_key`` if, in one snapshot of the ledger, the fast integrity
        check passes, the releases on ``key`` are not halted and the answer is there; None otherwise
        (:meth:`~.ledger_clean.CleanReads._clean_read`: the write path then checks again under the lock and refuses)."""
        read = self._clean_read(key, request_key)
        return None if read is None else read[0]

    # ------------------------------------------------------------------ reading and the custodian

    def record_custodian_action(self, database: str, tool: str, details: dict[str, Any]) -> None:
        """Append a custodian-tool use (private diagnostics shown to the custodian) to the audit log."""
        row = {"time": now(), "kind": "custodian", "tool": tool, "database": database_key(database), "details": jsonable(details)}
        self._write(lambda: _audit.append(self._conn, row))

    def charges(self, database: str | None = None) -> list[Charge]:
        sql = "SELECT id, time, database, analyst, kind, epsilon, delta, request_key FROM charges"
        params: tuple[Any, ...] = ()
        if database is not None:
            keys = database_keys(database)
            sql += f" WHERE database IN ({', '.join('?' * len(keys))})"
            params = keys
        return [
            Charge(r[0], r[1], r[2], r[3], r[4], Budget.from_text(r[5], r[6]), r[7])
            for r in self._conn.execute(sql + " ORDER BY id", params)
        ]

    def audit_rows(self, *, limit: int | None = None) -> list[dict[str, Any]]:
        return _audit.rows(self._conn, limit=limit)

    def summary(self, database: str) -> dict[str, Any]:
        """Caps, spent and left for the database and for each analyst who has spent (and each known one)."""
        keys = database_keys(database)
        key = keys[0]
        sums = self._sums(key)
        db_spent = self._total(sums, keys, DATABASE_SCOPE)
        names = {who for (db, who) in sums if db in keys and who != DATABASE_SCOPE}
        names |= set(self.settings.analysts)
        analysts = []
        for name in sorted(names):
            spent = self._total(sums, keys, name)
            if name == SYNTHETIC_ANALYST:
                analysts.append({"analyst": name, "cap": None, "spent": spent.to_dict(), "left": None})
                continue
            left = self.remaining(database, name)
            analysts.append({"analyst": name, "cap": self._analyst_cap.to_dict(), "spent": spent.to_dict(), "left": left.to_dict()})
        return {
            "database": key if "://" in database or database.startswith(KEY_PREFIX) else str(Path(database).resolve()),
            "deployment": key,
            "ledger": self.name,
            "cap": self._db_cap.to_dict(),
            "spent": db_spent.to_dict(),
            "left": self._db_cap.minus(db_spent).to_dict(),
            "analysts": analysts,
            "answer_cache": self.answer_cache,
        }
