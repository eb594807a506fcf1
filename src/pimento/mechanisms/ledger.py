"""The privacy-budget ledger: a SQLite file (WAL) beside the database.

Every spend is checked and charged in one ``BEGIN IMMEDIATE`` transaction with
``synchronous = FULL``: when :meth:`Ledger.charge` returns, the charge is on disk, and a
refused request has written nothing. Budgets are stored as exact text (``"1/10"``,
``"0.000001"``) and compared as Fractions. Caps come from ``[ledger]`` in pimento.toml
(:class:`pimento.config.LedgerSettings`): a total per database, and per analyst.

The release protocol built on it (:func:`pimento.mechanisms.guarded.guarded_release`)
is: charge (commit) -> draw the noise -> store the answer in the cache and the audit log
(commit) -> return. A crash can lose an answer that was paid for, never return one that
was not.

Tables: ``charges`` (append-only), ``totals`` (running sums per database and analyst,
analyst ``"*"`` for the database total), ``answers`` (the answer cache), ``audit`` and
``audit_head`` (see :mod:`.audit`).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any

from pimento.config import LedgerSettings, Settings
from pimento.errors import BudgetError, ConfigError, DataSourceError
from pimento.mechanisms import audit as _audit
from pimento.mechanisms.budget import Budget, format_number, parse_number

__all__ = [
    "DATABASE_SCOPE",
    "SYNTHETIC_ANALYST",
    "Charge",
    "Ledger",
    "database_key",
    "ledger_path",
    "request_key",
]

#: Pseudo-analyst under which the running total of a whole database is kept.
DATABASE_SCOPE = "*"
#: Pseudo-analyst charged for synthetic-data generation (counts against the database cap only).
SYNTHETIC_ANALYST = "<synthetic>"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS charges (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    database TEXT NOT NULL,
    analyst TEXT NOT NULL,
    kind TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    delta TEXT NOT NULL,
    request_key TEXT,
    note TEXT
);
CREATE TABLE IF NOT EXISTS totals (
    database TEXT NOT NULL,
    analyst TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    delta TEXT NOT NULL,
    PRIMARY KEY (database, analyst)
);
CREATE TABLE IF NOT EXISTS answers (
    request_key TEXT PRIMARY KEY,
    charge_id INTEGER NOT NULL,
    time TEXT NOT NULL,
    answer TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS charges_no_update BEFORE UPDATE ON charges
BEGIN SELECT RAISE(ABORT, 'charges are append-only'); END;
CREATE TRIGGER IF NOT EXISTS charges_no_delete BEFORE DELETE ON charges
BEGIN SELECT RAISE(ABORT, 'charges are append-only'); END;
"""


def ledger_path(database: str, settings: Settings | None = None) -> Path:
    """Where the ledger of ``database`` lives: ``[ledger] path`` or ``<database>.ledger.sqlite``."""
    if settings is not None and settings.ledger.path:
        return Path(settings.resolve(settings.ledger.path))
    if "://" in database:
        raise ConfigError(
            f"no ledger file for {database.split('@')[-1]}: a server database needs an explicit ledger path",
            hint='set path = "..." under [ledger] in pimento.toml',
        )
    return Path(f"{database}.ledger.sqlite")


def database_key(database: str) -> str:
    """Stable identifier of a database in the ledger: the resolved file path, or the DSN without credentials."""
    if "://" in database:
        scheme, rest = database.split("://", 1)
        return f"{scheme}://{rest.rsplit('@', 1)[-1]}"
    return str(Path(database).resolve())


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


@dataclass(frozen=True)
class Charge:
    """A committed spend."""

    id: int
    time: str
    database: str
    analyst: str
    kind: str
    budget: Budget
    request_key: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "time": self.time,
            "database": self.database,
            "analyst": self.analyst,
            "kind": self.kind,
            "epsilon": format_number(self.budget.epsilon),
            "delta": format_number(self.budget.delta),
            "request_key": self.request_key,
        }


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


class Ledger:
    """A budget ledger stored in one SQLite file; safe to share between processes.

    Open one per process (or thread); connections are not shared.
    """

    def __init__(self, path: str | Path, settings: LedgerSettings | None = None, *, busy_timeout_s: float = 60.0) -> None:
        self.path = Path(path)
        self.settings = settings or LedgerSettings()
        self._db_cap = Budget.of(self.settings.epsilon_cap, self.settings.delta_cap)
        self._analyst_cap = Budget.of(self.settings.analyst_epsilon_cap or self.settings.epsilon_cap, self.settings.delta_cap)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=busy_timeout_s, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = FULL")
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            self._init_schema()
        except sqlite3.Error as exc:
            raise DataSourceError(f"cannot open the budget ledger {self.path}: {exc}") from None

    def _init_schema(self) -> None:
        for attempt in range(50):
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                # Statements end with ";\n"; trigger bodies keep their inner "; END" on one line.
                for statement in (_SCHEMA + _audit.SCHEMA).split(";\n"):
                    if statement.strip():
                        self._conn.execute(statement)
                self._conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('format', '1')")
                self._conn.execute("COMMIT")
                return
            except sqlite3.OperationalError as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if "locked" not in str(exc) or attempt == 49:
                    raise
                time.sleep(0.05)

    @classmethod
    def for_database(cls, database: str, settings: Settings | None = None) -> Ledger:
        """The ledger of ``database`` as pimento.toml configures it."""
        settings = settings or Settings()
        return cls(ledger_path(database, settings), settings.ledger)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ caps and totals

    @property
    def answer_cache(self) -> bool:
        return self.settings.answer_cache

    def database_cap(self) -> Budget:
        return self._db_cap

    def analyst_cap(self, analyst: str) -> Budget:
        self._check_analyst(analyst)
        return self._analyst_cap

    def _check_analyst(self, analyst: str) -> None:
        if not analyst or analyst in (DATABASE_SCOPE, SYNTHETIC_ANALYST) or analyst != analyst.strip():
            raise BudgetError(f"invalid analyst name {analyst!r}", hint="pass --analyst NAME")
        if self.settings.analysts and analyst not in self.settings.analysts:
            raise BudgetError(
                f"unknown analyst {analyst!r}: nothing was spent",
                hint=f"known analysts: {', '.join(self.settings.analysts)} ([ledger] analysts in pimento.toml)",
            )

    def _total(self, database: str, analyst: str) -> Budget:
        row = self._conn.execute("SELECT epsilon, delta FROM totals WHERE database = ? AND analyst = ?", (database, analyst)).fetchone()
        return Budget.from_text(row[0], row[1]) if row else Budget.zero()

    def spent(self, database: str, analyst: str | None = None) -> Budget:
        """Total charged on ``database`` (by ``analyst`` if given)."""
        return self._total(database_key(database), analyst or DATABASE_SCOPE)

    def remaining(self, database: str, analyst: str) -> Budget:
        """What ``analyst`` may still spend on ``database``: the smaller of the two caps' remainders, per part."""
        key = database_key(database)
        db_left = self._db_cap.minus(self._total(key, DATABASE_SCOPE))
        an_left = self.analyst_cap(analyst).minus(self._total(key, analyst))
        return Budget(min(db_left.epsilon, an_left.epsilon), min(db_left.delta, an_left.delta))

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
        """Check the caps and record the spend, atomically and durably; refuse with BudgetError otherwise."""
        if kind != "synthetic":
            self._check_analyst(analyst)
        budget.as_spend()
        key = database_key(database)
        return self._write(lambda: self._charge_in_txn(analyst, key, budget, request_key, kind, note))

    def charge_synthetic(self, database: str, budget: Budget, *, note: str | None = None) -> Charge:
        """Charge the generation of a synthetic copy of ``database`` against the database cap.

        Call it before the synthetic data is written (same rule as for answers).
        """
        return self.charge(SYNTHETIC_ANALYST, database, budget, None, kind="synthetic", note=note)

    def _charge_in_txn(self, analyst: str, key: str, budget: Budget, request_key: str | None, kind: str, note: str | None) -> Charge:
        db_total = self._total(key, DATABASE_SCOPE)
        db_after = db_total + budget
        if not db_after.fits_within(self._db_cap):
            left = self._db_cap.minus(db_total)
            raise BudgetError(
                f"database budget exhausted: this request costs {budget} but only {left} is left of the cap {self._db_cap}; nothing was spent"
            )
        an_after = None
        if kind != "synthetic":
            an_total = self._total(key, analyst)
            an_after = an_total + budget
            if not an_after.fits_within(self._analyst_cap):
                left = self._analyst_cap.minus(an_total)
                raise BudgetError(
                    f"budget of analyst {analyst!r} exhausted: this request costs {budget} but only {left} is left of the cap {self._analyst_cap}; nothing was spent"
                )
        now = _now()
        eps, dlt = budget.to_text()
        cur = self._conn.execute(
            "INSERT INTO charges (time, database, analyst, kind, epsilon, delta, request_key, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (now, key, analyst, kind, eps, dlt, request_key, note),
        )
        self._set_total(key, DATABASE_SCOPE, db_after)
        if an_after is not None:
            self._set_total(key, analyst, an_after)
        else:
            self._set_total(key, analyst, self._total(key, analyst) + budget)
        return Charge(int(cur.lastrowid or 0), now, key, analyst, kind, budget, request_key)

    def _set_total(self, key: str, analyst: str, total: Budget) -> None:
        eps, dlt = total.to_text()
        self._conn.execute(
            "INSERT INTO totals (database, analyst, epsilon, delta) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(database, analyst) DO UPDATE SET epsilon = excluded.epsilon, delta = excluded.delta",
            (key, analyst, eps, dlt),
        )

    def _write(self, body):  # type: ignore[no-untyped-def]
        """Run ``body`` inside BEGIN IMMEDIATE ... COMMIT; roll back on any error."""
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise DataSourceError(f"the budget ledger {self.path} is busy or unwritable: {exc}; nothing was spent") from None
        try:
            result = body()
            conn.execute("COMMIT")
            return result
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    # ------------------------------------------------------------------ answers and audit

    def cached_answer(self, request_key: str) -> dict[str, Any] | None:
        """The answer stored for an identical earlier request, if the cache is on and has one."""
        if not self.answer_cache:
            return None
        row = self._conn.execute("SELECT answer FROM answers WHERE request_key = ?", (request_key,)).fetchone()
        return json.loads(row[0]) if row else None

    def record_release(self, request_key: str, charge: Charge, answer: dict[str, Any], audit_row: dict[str, Any]) -> dict[str, Any]:
        """Store the answer in the cache and append the audit row, in one transaction.

        If an identical request stored its answer first (a concurrent duplicate), the
        earlier answer is returned so that identical requests keep one answer.
        """

        def body() -> dict[str, Any]:
            _audit.append(self._conn, {**audit_row, "charge_id": charge.id})
            if self.answer_cache:
                self._conn.execute(
                    "INSERT OR IGNORE INTO answers (request_key, charge_id, time, answer) VALUES (?, ?, ?, ?)",
                    (request_key, charge.id, _now(), json.dumps(answer, sort_keys=True)),
                )
                row = self._conn.execute("SELECT answer FROM answers WHERE request_key = ?", (request_key,)).fetchone()
                return json.loads(row[0])
            return answer

        return self._write(body)

    def charge_release(self, analyst: str, database: str, budget: Budget, request_key: str) -> Charge | dict[str, Any]:
        """Charge one release, or return the answer an identical earlier request stored (free).

        The cache look-up and the charge happen in one transaction, so identical requests that
        race are charged once. Returns the stored answer dict (nothing charged) or the new
        :class:`Charge`, after which the caller must end with :meth:`record_release` or
        :meth:`record_failure` for that charge.
        """
        self._check_analyst(analyst)
        budget.as_spend()
        key = database_key(database)

        def body() -> Charge | dict[str, Any]:
            if self.answer_cache:
                row = self._conn.execute("SELECT answer FROM answers WHERE request_key = ?", (request_key,)).fetchone()
                if row is not None:
                    return json.loads(row[0])
            return self._charge_in_txn(analyst, key, budget, request_key, "release", None)

        return self._write(body)

    def record_failure(self, request_key: str, charge: Charge, audit_row: dict[str, Any]) -> None:
        """Record, for the custodian, that a charged release failed after its charge (the charge stays)."""
        self._write(lambda: _audit.append(self._conn, {**audit_row, "charge_id": charge.id, "outcome": "failed"}))

    def record_custodian_action(self, database: str, tool: str, details: dict[str, Any]) -> None:
        """Append a custodian-tool use (private diagnostics shown to the custodian) to the audit log."""
        row = {"time": _now(), "kind": "custodian", "tool": tool, "database": database_key(database), "details": details}
        self._write(lambda: _audit.append(self._conn, row))

    def charges(self, database: str | None = None) -> list[Charge]:
        sql = "SELECT id, time, database, analyst, kind, epsilon, delta, request_key FROM charges"
        params: tuple[Any, ...] = ()
        if database is not None:
            sql += " WHERE database = ?"
            params = (database_key(database),)
        return [
            Charge(r[0], r[1], r[2], r[3], r[4], Budget.from_text(r[5], r[6]), r[7])
            for r in self._conn.execute(sql + " ORDER BY id", params)
        ]

    def audit_rows(self, *, limit: int | None = None) -> list[dict[str, Any]]:
        return _audit.rows(self._conn, limit=limit)

    def verify_audit(self, *, expect_head: str | None = None) -> _audit.AuditReport:
        return _audit.verify(self._conn, expect_head=expect_head)

    def summary(self, database: str) -> dict[str, Any]:
        """Caps, spent and left for the database and for each analyst who has spent (and each known one)."""
        key = database_key(database)
        db_spent = self._total(key, DATABASE_SCOPE)
        names = {r[0] for r in self._conn.execute("SELECT analyst FROM totals WHERE database = ? AND analyst != ?", (key, DATABASE_SCOPE))}
        names |= set(self.settings.analysts)
        analysts = []
        for name in sorted(names):
            spent = self._total(key, name)
            if name == SYNTHETIC_ANALYST:
                analysts.append({"analyst": name, "cap": None, "spent": spent.to_dict(), "left": None})
                continue
            left = self.remaining(database, name)
            analysts.append({"analyst": name, "cap": self._analyst_cap.to_dict(), "spent": spent.to_dict(), "left": left.to_dict()})
        return {
            "database": key,
            "ledger": str(self.path),
            "cap": self._db_cap.to_dict(),
            "spent": db_spent.to_dict(),
            "left": self._db_cap.minus(db_spent).to_dict(),
            "analysts": analysts,
            "answer_cache": self.answer_cache,
        }

