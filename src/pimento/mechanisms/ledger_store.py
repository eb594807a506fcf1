"""The ledger's store: opening its file (or PostgreSQL database), its schema, and the one way it
writes (:meth:`LedgerStore._write`: ``BEGIN IMMEDIATE`` ... ``COMMIT``, then the witness).

What one process learned about a ledger outlives the :class:`LedgerStore` object that learned it
(the CLI opens one per command; the service keeps one per thread and renews it for each request,
:meth:`LedgerStore.renew`, so that it starts as a new object would), keyed by the ledger's identity (:meth:`LedgerStore._identity`:
the file's path, device and inode, or the PostgreSQL URL): the charge chain it verified
(:data:`_VERIFIED`; a new object re-reads only the charges appended since, after checking that the
verified prefix still has its count and its last charge still its hash, :func:`.ledger_chain.scan_charges`)
and that the schema is in place (:data:`_SCHEMA_READY`; a later open checks the format with one
read instead of taking the write lock). ``audit verify`` (``full=True``) and a new process re-read
everything.

:class:`LedgerStore` is the base of :class:`pimento.mechanisms.ledger.Ledger`; each other concern
of the ledger (integrity checks, pending charges, halts, the answer cache) is a mixin over it in a
module of its own.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

from pimento.config import LedgerSettings
from pimento.errors import BudgetError, ConfigError, DataSourceError, LedgerIntegrityError
from pimento.mechanisms import audit as _audit
from pimento.mechanisms import ledger_postgres as _pg
from pimento.mechanisms.budget import Budget, format_number
from pimento.mechanisms.caps import analyst_cap_of
from pimento.mechanisms.ledger_chain import DATABASE_SCOPE, SYNTHETIC_ANALYST, ChainState, Charge, scan_charges
from pimento.mechanisms.ledger_files import SqliteConnection, create_private, damaged, is_damage, now
from pimento.mechanisms.ledger_migrate import migrate_from_1
from pimento.mechanisms.ledger_owner import owner_token
from pimento.mechanisms.ledger_schema import FORMAT, SQLITE_LEDGER_SCHEMA
from pimento.mechanisms.ledger_witness import check_witness, load_witness, recovery_hint, spent_text, witness_path, write_witness

__all__ = ["LedgerStore", "jsonable"]

_T = TypeVar("_T")

#: The charge chain each ledger identity had when this process last verified it without a problem,
#: with the time (``time.monotonic``) of the last full scan it extends.
_VERIFIED: dict[tuple[str, ...], tuple[ChainState, float]] = {}
#: A new ledger object re-reads the whole chain when the process's last full scan of it is older than
#: this: an edit of an early charge (which never lowers the budget a process verified) is then noticed
#: by the fast check within this many seconds, as well as by ``audit verify`` and every new process.
FULL_RESCAN_S = 60.0
#: One lock per ledger identity, taken around every write transaction of this process: its threads
#: queue here instead of polling SQLite's lock (whose busy handler sleeps up to 100 ms between tries,
#: so that under load one thread could wait seconds while others kept taking the lock).
_WRITE_LOCKS: dict[tuple[str, ...], threading.RLock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def _writer(identity: tuple[str, ...] | None) -> Iterator[None]:
    """Hold this process's write lock of the ledger ``identity`` (none for an in-memory ledger)."""
    if identity is None:
        yield
        return
    with _WRITE_LOCKS_GUARD:
        lock = _WRITE_LOCKS.setdefault(identity, threading.RLock())
    with lock:
        yield
#: Ledger identities whose schema this process created or checked (DDL run once per process and file).
_SCHEMA_READY: set[tuple[str, ...]] = set()


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON for the audit log: Fractions, Decimals, paths and the like as text,
    non-finite floats as text (the hashed canonical JSON refuses NaN)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, Fraction):
        return format_number(value)
    return str(value)


class LedgerStore:
    """The connection, the schema, the verified charge chain and the transaction of one ledger.

    ``pending_timeout_s``: how long an identical request waits for a payer whose process cannot
    be checked (another host) or is still alive, before the payer's charge is closed as aborted.
    """

    def __init__(
        self,
        path: str | Path,
        settings: LedgerSettings | None = None,
        *,
        busy_timeout_s: float = 60.0,
        pending_timeout_s: float = 900.0,
    ) -> None:
        self.postgres = _pg.is_postgres_url(path)
        # A PostgreSQL ledger is named by its URL without credentials (messages, summaries).
        self.path = Path(_pg.redact(str(path))) if self.postgres else Path(path)
        #: How messages name the ledger: its file, or its PostgreSQL URL without credentials.
        self.name = _pg.redact(str(path)) if self.postgres else str(path)
        self.settings = settings or LedgerSettings()
        self.pending_timeout_s = float(pending_timeout_s)
        self._db_cap = Budget.of(self.settings.epsilon_cap, self.settings.delta_cap)
        self._analyst_cap = analyst_cap_of(self.settings)  # [ledger] analyst_epsilon_cap, else analyst_share of epsilon_cap
        self._memory = str(path) == ":memory:"
        #: Names this ledger in the process's unrecorded halts (:data:`.ledger_halts._UNRECORDED_HALTS`).
        self._ledger_id = f":memory:{id(self)}" if self._memory else self.name if self.postgres else str(self.path.resolve())
        self.witness = None if self._memory or self.postgres else witness_path(self.path)
        # The witness, read once for both checks of the open (this object writes it only after a commit).
        recorded = load_witness(self.path) if self.witness is not None else None
        if self.witness is not None:
            check_witness(self.path, recorded=recorded)
        self._owner = owner_token()
        self._pid = os.getpid()  # the process that opened the connection (:meth:`renew`)
        self._verified: ChainState | None = None
        self._full_at = 0.0  # when the chain self._verified extends was last read in full (time.monotonic)
        #: Inside a write transaction that appended a charge: the chain as it now stands (the scan of
        #: the transaction's fast check plus that charge; the write lock keeps everyone else out).
        self._txn_state: ChainState | None = None
        #: What the process-wide caches know this ledger by (None: not shared, an in-memory ledger).
        self._id: tuple[str, ...] | None = None
        self._mine: set[int] = set()  # pending charges made through this object
        #: The connection; on PostgreSQL a PgConnection, which has the sqlite3 surface the ledger uses.
        self._conn: _audit.Connection
        if self.postgres:
            try:
                self._conn = _pg.PgConnection(str(path), connect_timeout_s=busy_timeout_s)
                self._id = ("postgresql", self.name)
                self._init_schema()
            except sqlite3.Error as exc:
                raise DataSourceError(f"cannot open the budget ledger {self.name}: {exc}") from None
            return
        try:
            if not self._memory:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                create_private(self.path)
            self._conn = SqliteConnection(sqlite3.connect(str(self.path), timeout=busy_timeout_s, isolation_level=None), self.name)
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = FULL")
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            self._id = self._identity()
            self._init_schema()
        except sqlite3.Error as exc:
            if is_damage(exc):
                raise damaged(self.name, exc) from None
            raise DataSourceError(f"cannot open the budget ledger {self.name}: {exc}") from None
        except OSError as exc:
            raise DataSourceError(f"cannot open the budget ledger {self.name}: {exc.strerror or exc}") from None
        if self.witness is not None:
            self._refuse_if_emptied(recorded)

    def _refuse_if_emptied(self, witness: dict[str, Any] | None) -> None:
        """Close and refuse (LedgerIntegrityError) a ledger that holds no charge while its ``witness``
        (:func:`.ledger_witness.load_witness`) records some."""
        if witness and int(witness.get("charges", 0)) > 0:
            (held,) = self._conn.execute("SELECT EXISTS (SELECT 1 FROM charges)").fetchone()
            if not held:
                self._conn.close()
                raise LedgerIntegrityError(
                    f"the budget ledger {self.name} holds no charge, but its witness records {witness.get('charges')} "
                    f"(spent: {spent_text(witness)}): refusing to use it",
                    hint=recovery_hint(self.path),
                )

    def renew(self) -> bool:
        """Make this open SQLite ledger answer the next request as a new object on its path would, with the
        checks a new object runs when it opens, without opening (the service keeps one per thread,
        :meth:`pimento.service.deployment.Deployment.session`; issue 28, PERF9).

        In the order of the open: the witness read once and checked (:func:`.ledger_witness.check_witness`);
        the file at the path still the one the connection has open (device, inode) and not empty; the pages
        the connection cached dropped (``PRAGMA shrink_memory``: a file changed under it by anything but
        SQLite, which SQLite's own checks do not see, is read as a new connection reads it); the format
        checked (:meth:`_schema_current`); no charge held while the witness records some
        (:meth:`_refuse_if_emptied`). What an object learns about the chain starts again from the
        process's (:data:`_VERIFIED`, as in a new object), and its pending charges of earlier requests
        are forgotten, as a new object knows none.

        Returns False when this object cannot stand for a new one: a PostgreSQL or in-memory ledger,
        another process than the one that opened it, another file (or none, or an empty one) at the
        path, a format to create or migrate; the caller then opens a new object, whose open decides.
        Raises what the open raises (LedgerIntegrityError)."""
        if self.witness is None or self._id is None or self._pid != os.getpid():
            return False
        recorded = load_witness(self.path)
        check_witness(self.path, recorded=recorded)
        try:
            st = self.path.stat()
        except OSError:
            return False
        if (str(st.st_dev), str(st.st_ino)) != self._id[1:] or st.st_size == 0 or self._id not in _SCHEMA_READY:
            return False
        self._conn.execute("PRAGMA shrink_memory")
        if not self._schema_current():
            return False
        self._verified, self._full_at, self._txn_state = None, 0.0, None
        self._mine = set()
        self._refuse_if_emptied(recorded)
        return True

    def _identity(self) -> tuple[str, ...] | None:
        """The file this connection has open, as the process-wide caches name it: (path, device, inode).

        Taken after the connection opened the file, whose open descriptor keeps the inode from being
        reused: a file replaced since (a restored backup, a new ledger) is another identity. None for
        an in-memory ledger."""
        if self._memory:
            return None
        st = self.path.stat()
        return (str(self.path.resolve()), str(st.st_dev), str(st.st_ino))

    def _init_schema(self) -> None:
        """Create or migrate the schema (under the write lock) the first time this process opens the
        ledger; later opens of the same file check its format with one read."""
        if self._id is not None and self._id in _SCHEMA_READY:
            if self._schema_current():
                return
            _SCHEMA_READY.discard(self._id)
        self._create_schema()
        if self._id is not None:
            _SCHEMA_READY.add(self._id)

    def _schema_current(self) -> bool:
        """Whether the ledger holds this Pimento's format (one read, no lock; False if it cannot be read)."""
        try:
            row = self._conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        except sqlite3.OperationalError:
            return False
        finally:
            if self._conn.in_transaction:  # PostgreSQL opens one on a read
                self._conn.execute("ROLLBACK")
        return row is not None and row[0] == FORMAT

    def _create_schema(self) -> None:
        for attempt in range(50):
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                if self.postgres:
                    row = self._conn.execute("SELECT to_regclass('meta')").fetchone()
                    row = row if row and row[0] else None
                else:
                    row = self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
                fmt = self._conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone() if row else None
                if self.postgres and fmt is not None and fmt[0] == FORMAT:
                    # The schema exists: no DDL, so the service's role needs no CREATE right after the first start.
                    self._conn.execute("COMMIT")
                    return
                if fmt is not None and fmt[0] == "1":
                    migrate_from_1(self._conn)
                # Statements end with ";\n"; trigger bodies keep their inner "; END" on one line.
                schema = _pg.PG_SCHEMA if self.postgres else SQLITE_LEDGER_SCHEMA + _audit.SCHEMA
                for statement in schema.split(";\n"):
                    if statement.strip():
                        self._conn.execute(statement)
                self._conn.execute("INSERT INTO meta (key, value) VALUES ('format', ?) ON CONFLICT (key) DO NOTHING", (FORMAT,))
                fmt = self._conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0]
                if fmt != FORMAT:
                    raise ConfigError(f"the budget ledger {self.name} has format {fmt}; this Pimento reads format {FORMAT}")
                self._conn.execute("COMMIT")
                return
            except sqlite3.OperationalError as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if "locked" not in str(exc) or attempt == 49:
                    raise
                time.sleep(0.05)
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        self._conn.close()

    # ------------------------------------------------------------------ the verified charges

    def _scan(self, *, full: bool = False) -> ChainState:
        """Read the charges, recompute their chain, and sum the spends per (database, analyst).

        The verified prefix is remembered by this object: a later scan re-reads only the charges
        added since, after checking that the last verified charge still has its hash and that no
        earlier id is missing; a new object on the same ledger starts from what another object of this
        process verified (:data:`_VERIFIED`). So the budget is always the sum of charges this process
        verified; ``full=True`` (verify) re-reads everything, and so does a scan whose prefix was last read
        in full more than :data:`FULL_RESCAN_S` ago, whether this object or another verified it (an object
        kept open for the process's life, as the service's memo keeps one per thread, included)."""
        start, full_at = self._verified, self._full_at
        if start is None and not full and self._id is not None:
            start, full_at = _VERIFIED.get(self._id, (None, 0.0))
        if start is not None and time.monotonic() - full_at > FULL_RESCAN_S:
            start = None
        state = scan_charges(self._conn, None if full else start)
        if state is not start and state.full:
            full_at = time.monotonic()
        self._verified, self._full_at = (None, 0.0) if state.problems else (state, full_at)
        if self._id is not None:
            if state.problems:
                _VERIFIED.pop(self._id, None)
            else:
                _VERIFIED[self._id] = (state, full_at)
        return state

    def _sums(self, key: str) -> dict[tuple[str, str], Budget]:
        return self._scan().sums

    @staticmethod
    def _total(sums: dict[tuple[str, str], Budget], keys: tuple[str, ...], who: str) -> Budget:
        """The spend of ``who`` summed over every key of one database (its id and its legacy aliases)."""
        total = Budget.zero()
        for key in keys:
            part = sums.get((key, who))
            if part is not None:
                total = total + part
        return total

    def _check_analyst(self, analyst: str) -> None:
        if not analyst or analyst in (DATABASE_SCOPE, SYNTHETIC_ANALYST) or analyst != analyst.strip():
            raise BudgetError(f"invalid analyst name {analyst!r}", hint="pass --analyst NAME")
        if self.settings.analysts and analyst not in self.settings.analysts:
            raise BudgetError(
                f"unknown analyst {analyst!r}: nothing was spent",
                hint=f"known analysts: {', '.join(self.settings.analysts)} ([ledger] analysts in pimento.toml)",
            )

    # ------------------------------------------------------------------ writing

    def _write(self, body: Callable[[], _T]) -> _T:
        """Run ``body`` inside BEGIN IMMEDIATE ... COMMIT; roll back on any error; then update the witness.

        The threads of one process take the ledger's write lock in turn (:func:`_writer`); the witness
        is written after it is released (:func:`.ledger_witness.write_witness` never goes back)."""
        with _writer(self._id):
            result, witness = self._transaction(body)
        if witness is not None:
            self._write_witness(witness)
        return result

    def _transaction(self, body: Callable[[], _T]) -> tuple[_T, dict[str, Any] | None]:
        """``body`` in BEGIN IMMEDIATE ... COMMIT (rolled back on any error), and the witness state it committed."""
        conn = self._conn
        self._txn_state = None
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise DataSourceError(f"the budget ledger {self.name} is busy or unwritable: {exc}; nothing was spent") from None
        try:
            result = body()
            witness = self._witness_state() if self.witness is not None else None
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            self._txn_state = None
        return result, witness

    def _read(self, body: Callable[[], _T]) -> _T:
        """Run ``body`` in one read transaction (one snapshot of the ledger; no write lock, no witness)."""
        conn = self._conn
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" if self.postgres else "BEGIN")
        try:
            return body()
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")

    def _witness_state(self) -> dict[str, Any]:
        audit_head = self._conn.execute("SELECT seq, hash FROM audit_head WHERE id = 1").fetchone()
        if self._txn_state is not None:
            state = self._txn_state
            head = (state.last_id, state.last_hash)
        else:
            state = self._scan()
            # a scan without problems found charges_head naming its last charge (:func:`.ledger_chain.scan_charges`)
            head = (state.last_id, state.last_hash) if not state.problems else self._conn.execute("SELECT charge_id, hash FROM charges_head WHERE id = 1").fetchone()
        spent: dict[str, dict[str, str]] = {}
        for (db, who), total in state.sums.items():
            if who == DATABASE_SCOPE:
                eps, dlt = total.to_text()
                spent[db] = {"epsilon": eps, "delta": dlt}
        return {
            "ledger": str(self.path.resolve()),
            "charges": head[0] if head else 0,
            "charge_hash": head[1] if head else _audit.GENESIS,
            "audit_rows": audit_head[0] if audit_head else 0,
            "audit_hash": audit_head[1] if audit_head else _audit.GENESIS,
            "spent": spent,
            "written": now(),
        }

    def _write_witness(self, state: dict[str, Any]) -> None:
        """Replace the witness with ``state`` (never with an older one: :func:`.ledger_witness.write_witness`)."""
        assert self.witness is not None
        write_witness(self.witness, self.path, state)

    def _append_audit(self, row: dict[str, Any], charge: Charge) -> None:
        """Append the audit row of ``charge`` (inside the open transaction), with the charge's id and budget."""
        eps, dlt = charge.budget.to_text()
        _audit.append(self._conn, {**jsonable(row), "charge_id": charge.id, "charge_epsilon": eps, "charge_delta": dlt})

    def _close_pending(self, charge: Charge) -> bool:
        """Remove the pending entry of ``charge``; False if there was none (it was closed as aborted)."""
        self._mine.discard(charge.id)
        return self._conn.execute("DELETE FROM pending WHERE charge_id = ?", (charge.id,)).rowcount == 1
