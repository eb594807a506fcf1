"""Reading a stored answer clean: the release's first look-up, and a repeat's one-statement check (issue 28, PERF7).

:meth:`CleanReads._clean_read` is what :meth:`pimento.mechanisms.ledger.Ledger.charge_release` reads first
(and :meth:`CleanReads.stored_and_left`, the service's memo of stored answers, reads every time): in one
snapshot of the ledger, the stored answer under a request key, the fast integrity check
(:meth:`.ledger_integrity.IntegrityChecks._fast_check`), no halt of the database. Anything amiss, or no
answer, and the caller takes the locked write path, which decides and refuses in its own words.

**The clean mark.** On a SQLite ledger a clean read leaves a :class:`CleanMark` on its ``Ledger`` object:
the connection's ``PRAGMA data_version`` inside that snapshot, the connection's ``total_changes``, the
witness file's identity (device, inode, size, mtime) taken before the read, the verified chain of that
snapshot (its sums are the budget) and the stored answers found there. A later read of a marked answer is
answered from the mark, without reading the ledger again, while all of these hold:

- ``PRAGMA data_version`` on the same connection is the mark's: SQLite changes it whenever any *other*
  connection (another thread's, another process's, ``sqlite3`` on the command line) committed to the file
  since (https://sqlite.org/pragma.html#pragma_data_version);
- the connection's ``total_changes`` is the mark's: it committed nothing itself (a halt it wrote, say);
- the witness file has the mark's identity (the fast check compares the ledger with that file, which
  changes without a commit to the ledger when someone replaces or edits it);
- the chain of the mark was read in full less than :data:`.ledger_store.FULL_RESCAN_S` ago (the fast
  check's periodic full read of the chain, :meth:`.ledger_store.LedgerStore._scan`, keeps its period);
- no halt of the database is held in this process (:data:`.ledger_halts._UNRECORDED_HALTS`).

Why this answers exactly what a new read would: every table the clean read looks at (``answers``,
``charges``, ``charges_head``, ``audit``, ``audit_head``, ``pending``, ``meta``) lives in the ledger file, and
the file's content changes only by a commit, which moves ``data_version`` (another connection) or
``total_changes`` (this one). With neither moved, a new snapshot holds the same rows as the marked one: the
same stored answer under the key, the same halts (none), the same chain and sums (so the same budget
left), the same audit head and counts; with the witness file unchanged too, the fast check would read the
same inputs and pass again. A file replaced under the open connection is not seen by ``data_version``: the
callers compare the ledger file's identity first (the service's memo does,
:func:`pimento.release.answer_memo.identities`). A PostgreSQL ledger has no such counter: every read is a
full one there.
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any, cast

from pimento.errors import UserError
from pimento.mechanisms.budget import Budget
from pimento.mechanisms.ledger_answers import AnswerCache
from pimento.mechanisms.ledger_chain import DATABASE_SCOPE, ChainState
from pimento.mechanisms.ledger_halts import Halts
from pimento.mechanisms.ledger_integrity import IntegrityChecks
from pimento.mechanisms.ledger_store import FULL_RESCAN_S

__all__ = ["CleanMark", "CleanReads", "witness_identity"]

FileIdentity = tuple[int, int, int, int]


def witness_identity(path: os.PathLike[str] | str | None) -> FileIdentity | None:
    """The witness file's device, inode, size and mtime (ns); None when there is none (then nothing is marked)."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass
class CleanMark:
    """What the last clean read on one connection saw (module docs): valid while nothing committed since."""

    version: int
    changes: int
    witness: FileIdentity
    state: ChainState
    full_at: float
    #: (database key, request key) -> the stored answer, each found clean under this mark (never changed once read)
    answers: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    #: (database keys, analyst) -> the budget left in :attr:`state` (a function of the chain and the caps)
    lefts: dict[tuple[tuple[str, ...], str], Budget] = field(default_factory=dict)


class CleanReads(AnswerCache, Halts, IntegrityChecks):
    """The clean read of a stored answer and its mark (a mixin of :class:`pimento.mechanisms.ledger.Ledger`)."""

    _mark: CleanMark | None = None

    def renew(self) -> bool:
        """:meth:`.ledger_store.LedgerStore.renew`, the clean mark dropped too (a new object has none)."""
        self._mark = None
        return super().renew()

    def stored_and_left(self, keys: tuple[str, ...], request_key: str, analyst: str) -> tuple[dict[str, Any], Budget] | None:
        """The answer stored for ``request_key`` and ``analyst``'s budget left, when that answer is what
        :meth:`~pimento.mechanisms.ledger.Ledger.charge_release` would return on the database whose ledger keys are
        ``keys`` (``database_keys(location)``: its key, then its aliases): halts first recorded, then, in one snapshot,
        the stored answer, the fast integrity check and no halt (:meth:`_clean_read`), or the clean mark of such a
        snapshot when nothing was committed since (module docs). None otherwise: the write path then decides and
        refuses in its own words. Reads only: nothing is charged, waited for or audited. The answer may be the mark's
        own: the caller must not change it."""
        self._write_unrecorded_halts()  # as charge_release does first
        key = keys[0]
        self._check_analyst(analyst)  # an unknown analyst: BudgetError, as remaining() raises
        cap = self._analyst_cap
        if not self.answer_cache or self._halted_in_process(key):
            return None
        marked = self._marked(key, request_key)
        if marked is None:
            marked = self._clean_read(key, request_key, mark=True)
            if marked is None:
                return None
            if self._mark is not None and self._mark.state is marked[1]:
                self._mark.answers[(key, request_key)] = marked[0]
        stored, state = marked
        mark = self._mark if self._mark is not None and self._mark.state is state else None
        left = mark.lefts.get((keys, analyst)) if mark is not None else None
        if left is None:
            left = self._left(state, keys, analyst, cap)
            if mark is not None:
                mark.lefts[(keys, analyst)] = left
        return stored, left

    def _left(self, state: ChainState, keys: tuple[str, ...], analyst: str, cap: Budget) -> Budget:
        """``analyst``'s budget left on the database of ``keys`` in the verified chain ``state`` (as :meth:`remaining`)."""
        db_left = self._db_cap.minus(self._total(state.sums, keys, DATABASE_SCOPE))
        an_left = cap.minus(self._total(state.sums, keys, analyst))
        return Budget(min(db_left.epsilon, an_left.epsilon), min(db_left.delta, an_left.delta))

    def _marked(self, key: str, request_key: str) -> tuple[dict[str, Any], ChainState] | None:
        """The stored answer and chain the mark holds for ``request_key`` on ``key`` while it is valid (module docs); None
        otherwise (one ``stat`` and one statement when the answer is marked)."""
        mark = self._mark
        if mark is None:
            return None
        stored = mark.answers.get((key, request_key))
        if stored is None:
            return None
        try:
            valid = (time.monotonic() - mark.full_at <= FULL_RESCAN_S and self._changes() == mark.changes
                     and witness_identity(self.witness) == mark.witness and self._data_version() == mark.version)
        except (UserError, sqlite3.Error):
            valid = False
        if not valid:
            self._mark = None
            return None
        return stored, mark.state

    def _changes(self) -> int:
        """The rows this SQLite connection changed since it opened (``total_changes``; module docs)."""
        return int(cast(Any, self._conn).total_changes)

    def _data_version(self) -> int:
        """``PRAGMA data_version`` of this connection (module docs)."""
        (version,) = self._conn.execute("PRAGMA data_version").fetchone()
        return int(version)

    def _clean_read(self, key: str, request_key: str, *, mark: bool = False) -> tuple[dict[str, Any], ChainState] | None:
        """The answer stored for ``request_key`` and the verified chain, if, in one snapshot of the ledger, the answer is
        there, the fast integrity check passes and the releases on ``key`` are not halted; None otherwise (any problem
        included: the write path then checks again under the lock and refuses, so this read can only answer what that
        path would answer, never refuse what it would answer). With ``mark``, on a SQLite ledger, a clean read is marked
        (module docs; the release's own look-up, mostly of fresh requests, reads no ``data_version``)."""
        if not self.answer_cache:
            return None
        marks = mark and not self.postgres and self.witness is not None
        witness = witness_identity(self.witness) if marks else None
        changes = self._changes() if marks else 0

        def body() -> tuple[int, dict[str, Any], ChainState] | None:
            version = self._data_version() if marks else 0  # first: the snapshot read below is this version or later
            stored = self._stored_answer(request_key)
            if stored is None:
                return None  # a fresh request: the locked transaction checks and charges
            state = self._fast_check()
            self._refuse_if_halted(key)
            return version, stored, state

        try:
            found = self._read(body)
        except (UserError, sqlite3.Error):
            return None
        if found is None:
            return None
        version, stored, state = found
        if witness is not None:
            last = self._mark
            if last is None or last.state is not state or (last.version, last.changes, last.witness) != (version, changes, witness):
                self._mark = CleanMark(version, changes, witness, state, self._full_at)
        return stored, state
