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
with its ``failed`` audit row, a ``halt`` row, and the database marked halted (a
``halted:<database key>`` row of ``meta``), one commit. While a database is halted every
:meth:`Ledger.charge_release` on it raises :class:`pimento.errors.DeploymentHaltedError` before
charging, until the custodian's :meth:`Ledger.resume` (``pimento audit resume``). Invariants,
checked by :meth:`Ledger.verify_audit` (``pimento audit verify``):

- one charge per released value: a charge leaves a ``pending`` entry for its request key;
  an identical request that arrives meanwhile waits for that answer instead of paying again;
  a pending entry whose process is gone (or older than ``pending_timeout_s``) is closed with
  an audit row "aborted, nothing released", and the late payer's answer is withheld;
- one audit row per charge, written in the same transaction that stores the answer, the
  failure, the abort or (synthetic copy) the charge itself;
- the budget is the sum of the charges, which are append-only (triggers) and hash-chained
  (``hash_i = sha256(hash_{i-1} || canonical_json(charge_i))``, head in ``charges_head``);
- every charge is refused, with :class:`LedgerIntegrityError`, when a fast check fails: the
  charge chain recomputes (in full the first time a Ledger object looks; later, the charges
  added since and the last verified one, the budget being the sum this object verified), the
  last audit row recomputes, charges = audited + pending, and the witness file agrees;
- a witness file ``<database>.pimento-witness.json`` (JSON: number and hash of the last charge and
  audit row, budget spent per database) is rewritten after every commit, beside the database and
  not named ``<ledger>*``, so that ``rm DB.ledger.sqlite*`` leaves it. A ledger that is missing or
  empty, or that lacks the rows the witness names, is refused (fail closed): deleting the
  ledger file or some of its rows does not give budget back.

A database is identified in the ledger by the id of its deployment, stored with it in
``<database>.pimento-deployment.json`` (:func:`deployment_id`), not by its path: a copied or moved
deployment keeps its id, its ledger and its spend. Charges made under the path key before the id
existed (format 2 ledgers) count through the ``aliases`` of that file.

A crash can lose an answer that was paid for, never return one that was not. A damaged file
(a malformed page, bytes that are not SQLite) raises :class:`LedgerIntegrityError` wherever the
damage is read; :meth:`Ledger.check_file` reads every page (``serve`` at start, ``audit verify``).
The ledger file, the witness and the deployment file are created with mode 0600.

Tables: ``charges``, ``charges_head``, ``pending``, ``answers`` (the answer cache),
``audit`` and ``audit_head`` (see :mod:`.audit`), ``meta`` (format).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

from pimento.config import LedgerSettings, Settings
from pimento.errors import BudgetError, ConfigError, DataSourceError, DeploymentHaltedError, InternalError
from pimento.mechanisms import audit as _audit
from pimento.mechanisms import ledger_postgres as _pg
from pimento.mechanisms.budget import Budget, format_number, parse_number
from pimento.mechanisms.ledger_schema import ledger_tables, sqlite_append_only

__all__ = [
    "DATABASE_SCOPE",
    "SYNTHETIC_ANALYST",
    "Charge",
    "Ledger",
    "LedgerIntegrityError",
    "ReleaseAbortedError",
    "check_witness",
    "database_key",
    "database_keys",
    "deployment_file",
    "deployment_id",
    "ledger_path",
    "request_key",
    "witness_path",
]

#: Pseudo-analyst under which the running total of a whole database is reported.
DATABASE_SCOPE = "*"
#: Pseudo-analyst charged for synthetic-data generation (counts against the database cap only).
SYNTHETIC_ANALYST = "<synthetic>"
#: The ledger file format this code writes (1: running totals in a ``totals`` table, no chain).
FORMAT = "2"

_T = TypeVar("_T")

_SCHEMA = ledger_tables("sqlite") + sqlite_append_only("charges", "charges are")

_CHARGE_FIELDS = ("id", "time", "database", "analyst", "kind", "epsilon", "delta", "request_key", "note")

#: Prefix of the ``meta`` row that marks a database's releases halted (``halted:<database key>``);
#: its value names the audit row of the halt. ``halted:*`` halts every database of the ledger.
_HALT_KEY = "halted:"
#: Halts this process could not write to its ledger (the ledger was unwritable): (ledger, database key)
#: -> (database, details, charge). Every release there is refused in this process meanwhile, and
#: the halt is written at the next release attempt (:meth:`Ledger.halt`).
_UNRECORDED_HALTS: dict[tuple[str, str], tuple[str, dict[str, Any], Charge | None]] = {}


class LedgerIntegrityError(BudgetError):
    """The ledger failed an integrity check (or is missing while its witness says budget was spent):
    no release is made until the custodian has looked."""


def _damaged(name: str, exc: object) -> LedgerIntegrityError:
    return LedgerIntegrityError(
        f"the budget ledger {name} is damaged or is not a ledger file ({exc}): releases are refused; nothing was spent",
        hint=f"restore {name} from a backup, then check it with `pimento audit verify --db DB`",
    )


def _is_damage(exc: BaseException) -> bool:
    """A damaged SQLite file: sqlite3 raises plain DatabaseError (none of its subclasses) for
    SQLITE_CORRUPT ("database disk image is malformed") and SQLITE_NOTADB ("file is not a database")."""
    return type(exc) is sqlite3.DatabaseError


class _Cursor:
    """A sqlite3 cursor whose damaged-file errors, raised while rows are fetched, are LedgerIntegrityError."""

    def __init__(self, cursor: sqlite3.Cursor, name: str) -> None:
        self._cursor = cursor
        self._name = name

    def _guard(self, fetch: Callable[[], _T]) -> _T:
        try:
            return fetch()
        except sqlite3.DatabaseError as exc:
            if _is_damage(exc):
                raise _damaged(self._name, exc) from None
            raise

    def fetchone(self) -> Any:
        return self._guard(self._cursor.fetchone)

    def fetchall(self) -> list[Any]:
        return self._guard(self._cursor.fetchall)

    def __iter__(self) -> Any:
        while True:
            row = self._guard(self._cursor.fetchone)
            if row is None:
                return
            yield row

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class _SqliteConnection:
    """The ledger's sqlite3 connection: a damaged file (a malformed page, bytes that are not SQLite)
    raises :class:`LedgerIntegrityError` wherever it shows, in a statement or while its rows are
    read, instead of a bare sqlite3.DatabaseError (a 500 in the service, "a bug" in the CLI)."""

    def __init__(self, conn: sqlite3.Connection, name: str) -> None:
        self._conn = conn
        self._name = name

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    def execute(self, sql: str, params: Any = (), /) -> _Cursor:
        try:
            return _Cursor(self._conn.execute(sql, params), self._name)
        except sqlite3.DatabaseError as exc:
            if _is_damage(exc):
                raise _damaged(self._name, exc) from None
            raise

    def close(self) -> None:
        self._conn.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _create_private(path: Path) -> None:
    """Create ``path`` empty with mode 0600 (owner only) unless it exists: the ledger (whose -wal and
    -shm files SQLite creates with the database file's mode), the witness and the deployment file
    hold the custodian's audit rows and exact private quantities."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` into the new file ``path`` (mode 0600, fsynced); it must not exist."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


class ReleaseAbortedError(BudgetError):
    """A charged release was closed as aborted (its process looked dead or it exceeded the pending
    timeout) before it stored its answer: the answer is withheld, the charge stays."""


#: Suffix of the file beside a database that holds its deployment id (``<database>.pimento-deployment.json``).
DEPLOYMENT_SUFFIX = ".pimento-deployment.json"
#: Suffix of the witness file (``<database>.pimento-witness.json`` for the default ledger path).
WITNESS_SUFFIX = ".pimento-witness.json"
_LEDGER_SUFFIX = ".ledger.sqlite"
_KEY_PREFIX = "deployment:"
#: The keys of each deployment this process has looked up, for callers that pass a key on instead of the database.
_KNOWN_ALIASES: dict[str, tuple[str, ...]] = {}


def witness_path(ledger_file: str | Path) -> Path:
    """The witness file of a ledger, kept beside the database: ``<database>.pimento-witness.json`` for
    the default ``<database>.ledger.sqlite`` (``<stem>.pimento-witness.json`` for another ledger path).

    Its name is not ``<ledger>`` plus a suffix, so that ``rm DB.ledger.sqlite*`` (the ledger with its
    WAL files) does not delete the witness together with the ledger."""
    ledger_file = Path(ledger_file)
    name = ledger_file.name
    if name.endswith(_LEDGER_SUFFIX) and len(name) > len(_LEDGER_SUFFIX):
        return ledger_file.with_name(name[: -len(_LEDGER_SUFFIX)] + WITNESS_SUFFIX)
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    return ledger_file.with_name(stem + WITNESS_SUFFIX)


def _legacy_witness_path(ledger_file: str | Path) -> Path:
    """Where ledgers before the deployment id kept their witness: ``<ledger>.head`` (read, then replaced)."""
    return Path(f"{ledger_file}.head")


def _load_witness(ledger_file: str | Path) -> dict[str, Any] | None:
    """The witness of a ledger: the current file, else the legacy ``<ledger>.head``."""
    witness = _read_witness(witness_path(ledger_file))
    if witness is None:
        witness = _read_witness(_legacy_witness_path(ledger_file))
    return witness


def _read_witness(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"charges": -1, "unreadable": True}
    if not isinstance(data, dict):
        return {"charges": -1, "unreadable": True}
    for name in ("charges", "audit_rows"):
        if not isinstance(data.get(name, 0), int):
            return {"charges": -1, "unreadable": True}
    for name in ("charge_hash", "audit_hash"):
        if not isinstance(data.get(name, ""), str):
            return {"charges": -1, "unreadable": True}
    return data


def _recovery_hint(ledger_file: Path) -> str:
    return (
        f"restore {ledger_file} from a backup (the witness {witness_path(ledger_file)} names its last charge and audit row); "
        "only if the recorded spend may really be forgotten, move the witness file away, "
        "which starts a new ledger with nothing spent"
    )


def check_witness(ledger_file: str | Path) -> None:
    """Refuse (LedgerIntegrityError) a ledger file that is missing or empty while its witness says
    something was charged: deleting the ledger must not give budget back."""
    ledger_file = Path(ledger_file)
    witness = _load_witness(ledger_file)
    if not witness:
        return
    if witness.get("unreadable"):
        raise LedgerIntegrityError(f"the ledger witness {witness_path(ledger_file)} is unreadable; nothing was spent", hint=_recovery_hint(ledger_file))
    if int(witness.get("charges", 0)) <= 0 and int(witness.get("audit_rows", 0)) <= 0:
        return
    if not ledger_file.exists() or ledger_file.stat().st_size == 0:
        raise LedgerIntegrityError(
            f"the budget ledger {ledger_file} is missing or empty, but its witness records {witness.get('charges')} charge(s) "
            f"(spent: {_spent_text(witness)}): refusing to start a new ledger with nothing spent",
            hint=_recovery_hint(ledger_file),
        )


def _spent_text(witness: dict[str, Any]) -> str:
    spent = witness.get("spent") or {}
    if not isinstance(spent, dict) or not spent:
        return "unknown"
    return "; ".join(f"{db}: epsilon {v.get('epsilon')}, delta {v.get('delta')}" for db, v in spent.items() if isinstance(v, dict))


def _owner_token() -> str:
    """Who holds a pending charge: host, pid and the process's start time (pid reuse is caught)."""
    return f"{socket.gethostname()}|{os.getpid()}|{_process_start(os.getpid())}"


def _process_start(pid: int) -> str:
    """The start time of ``pid`` from /proc ("" where /proc is not available); "-" if there is no such
    live process (gone, or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except FileNotFoundError:
        return "-"
    except OSError:
        return ""
    fields = stat[stat.rfind(")") + 2 :].split()
    if not fields or fields[0] in ("Z", "X"):
        return "-"
    return fields[19] if len(fields) > 19 else ""


def _owner_alive(owner: str) -> bool | None:
    """True/False when it can be told (same host), None otherwise (another host: wait for the timeout)."""
    host, _, rest = owner.partition("|")
    pid_text, _, start = rest.partition("|")
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    pid = int(pid_text)
    now = _process_start(pid)
    if now == "-":
        return False
    if now and start:
        return now == start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


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


def deployment_file(database: str) -> Path | None:
    """The file beside a file database that holds its deployment id, or None for a server database."""
    if "://" in database or database == ":memory:":
        return None
    resolved = Path(database).resolve()
    return resolved.with_name(resolved.name + DEPLOYMENT_SUFFIX)


def _read_deployment(file: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("id"), str) or not data["id"].strip():
        raise LedgerIntegrityError(
            f"the deployment file {file} is unreadable: the database's budget cannot be identified; nothing was spent",
            hint=f"restore {file.name} from a backup (it names the deployment whose charges the ledger holds)",
        )
    aliases = data.get("aliases")
    data["aliases"] = [a for a in aliases if isinstance(a, str)] if isinstance(aliases, list) else []
    return data


def deployment_id(database: str, *, create: bool = True) -> str | None:
    """The id of the deployment ``database`` belongs to, stored WITH it in ``<database>.pimento-deployment.json``.

    Created (a random id) the first time a file database that exists is looked at, unless
    ``create`` is False; None for a server database, a file that does not exist, or a folder that
    cannot be written. A copied or moved deployment keeps its id, so its ledger keeps its charges.
    The file also lists ``aliases``: the keys its charges had before it had an id (its resolved
    path when the id was made), which still count against its budget (ledgers of format 2).
    """
    file = deployment_file(database)
    if file is None:
        return None
    data = _read_deployment(file)
    if data is not None:
        return str(data["id"])
    resolved = Path(database).resolve()
    if not create or not resolved.is_file():
        return None
    _refuse_lost_deployment(resolved, file)
    data = {"id": uuid.uuid4().hex, "created": _now(), "aliases": [str(resolved)]}
    tmp = file.with_name(f"{file.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        _write_private(tmp, json.dumps(data, sort_keys=True, indent=1))
        try:
            os.link(tmp, file)  # never replaces an id another process wrote meanwhile
        except FileExistsError:
            pass
    except OSError:
        return None
    finally:
        tmp.unlink(missing_ok=True)
    found = _read_deployment(file)
    return str(found["id"]) if found else None


def _refuse_lost_deployment(resolved: Path, file: Path) -> None:
    """Before a new id is made: refuse (fail closed) when the witness beside the database records
    spending under a deployment id, i.e. the deployment file was deleted. A new id would start
    the budget again at zero."""
    witness = _read_witness(witness_path(Path(f"{resolved}{_LEDGER_SUFFIX}")))
    spent = (witness or {}).get("spent")
    lost = sorted(k for k in spent if isinstance(k, str) and k.startswith(_KEY_PREFIX)) if isinstance(spent, dict) else []
    if lost:
        ident = lost[0][len(_KEY_PREFIX):]
        raise LedgerIntegrityError(
            f"the deployment file {file} is missing, but the ledger's witness records spending under {lost[0]}: "
            "a new deployment id would start the budget again at zero; nothing was spent",
            hint=f'restore {file.name} from a backup, or write {{"id": "{ident}"}} into it',
        )


def database_key(database: str) -> str:
    """Identifier of a database in the ledger: ``deployment:<id>`` for a file database (the id stored
    with it, :func:`deployment_id`), the resolved path where no id can be stored, or the DSN
    without credentials for a server database."""
    return database_keys(database)[0]


def database_keys(database: str) -> tuple[str, ...]:
    """Every key under which charges of ``database`` are counted: :func:`database_key` first, then
    the aliases its deployment file lists (the path keys of ledgers written before the id)."""
    if "://" in database:
        scheme, rest = database.split("://", 1)
        return (f"{scheme}://{rest.rsplit('@', 1)[-1]}",)
    if database.startswith(_KEY_PREFIX):  # already a key (callers may pass the key on)
        return _KNOWN_ALIASES.get(database, (database,))
    ident = deployment_id(database)
    if not ident:
        return (str(Path(database).resolve()),)
    key = f"{_KEY_PREFIX}{ident}"
    file = deployment_file(database)
    data = _read_deployment(file) if file is not None else None
    aliases = [a for a in (data or {}).get("aliases", []) if a != key]
    keys = (key, *dict.fromkeys(aliases))
    _KNOWN_ALIASES[key] = keys
    return keys


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


def _jsonable(value: Any) -> Any:
    """``value`` as plain JSON for the audit log: Fractions, Decimals, paths and the like as text,
    non-finite floats as text (the hashed canonical JSON refuses NaN)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, Fraction):
        return format_number(value)
    return str(value)


def _charge_text(row: dict[str, Any]) -> str:
    return _audit.canonical_json({k: row[k] for k in _CHARGE_FIELDS})


@dataclass
class _State:
    """What one scan of the charges found: chain checked, sums per (database, analyst)."""

    count: int
    last_id: int
    last_hash: str
    sums: dict[tuple[str, str], Budget]
    problems: list[_audit.AuditProblem]
    rows: dict[int, dict[str, Any]]


class Ledger:
    """A budget ledger stored in one SQLite file; safe to share between processes.

    Open one per process (or thread); connections are not shared.
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
        self._analyst_cap = Budget.of(self.settings.analyst_epsilon_cap or self.settings.epsilon_cap, self.settings.delta_cap)
        self._memory = str(path) == ":memory:"
        #: Names this ledger in the process's unrecorded halts (:data:`_UNRECORDED_HALTS`).
        self._ledger_id = f":memory:{id(self)}" if self._memory else self.name if self.postgres else str(self.path.resolve())
        self.witness = None if self._memory or self.postgres else witness_path(self.path)
        if self.witness is not None:
            check_witness(self.path)
        self._owner = _owner_token()
        self._verified: _State | None = None
        self._mine: set[int] = set()  # pending charges made through this object
        #: The connection; on PostgreSQL a PgConnection, which has the sqlite3 surface the ledger uses.
        self._conn: _audit.Connection
        if self.postgres:
            try:
                self._conn = _pg.PgConnection(str(path), connect_timeout_s=busy_timeout_s)
                self._init_schema()
            except sqlite3.Error as exc:
                raise DataSourceError(f"cannot open the budget ledger {self.name}: {exc}") from None
            return
        try:
            if not self._memory:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                _create_private(self.path)
            self._conn = _SqliteConnection(sqlite3.connect(str(self.path), timeout=busy_timeout_s, isolation_level=None), self.name)
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = FULL")
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            self._init_schema()
        except sqlite3.Error as exc:
            if _is_damage(exc):
                raise _damaged(self.name, exc) from None
            raise DataSourceError(f"cannot open the budget ledger {self.name}: {exc}") from None
        except OSError as exc:
            raise DataSourceError(f"cannot open the budget ledger {self.name}: {exc.strerror or exc}") from None
        if self.witness is not None:
            witness = _load_witness(self.path)
            if witness and int(witness.get("charges", 0)) > 0:
                (count,) = self._conn.execute("SELECT COUNT(*) FROM charges").fetchone()
                if count == 0:
                    self._conn.close()
                    raise LedgerIntegrityError(
                        f"the budget ledger {self.name} holds no charge, but its witness records {witness.get('charges')} "
                        f"(spent: {_spent_text(witness)}): refusing to use it",
                        hint=_recovery_hint(self.path),
                    )

    def _init_schema(self) -> None:
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
                    self._migrate_from_1()
                # Statements end with ";\n"; trigger bodies keep their inner "; END" on one line.
                schema = _pg.PG_SCHEMA if self.postgres else _SCHEMA + _audit.SCHEMA
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

    def _migrate_from_1(self) -> None:
        """Format 1 (running totals, no chain over charges) -> 2, inside the open transaction.

        The charges are chained in id order, every charge without an audit row gets one
        (``released`` with the cached answer's value when its answer was stored, else
        "unrecorded before format 2"), the running totals are dropped (the budget is the sum
        of the charges)."""
        conn = self._conn
        conn.execute("DROP TRIGGER IF EXISTS charges_no_update")
        conn.execute("DROP TRIGGER IF EXISTS audit_no_update")
        conn.execute("ALTER TABLE charges ADD COLUMN prev_hash TEXT NOT NULL DEFAULT ''")
        conn.execute("ALTER TABLE charges ADD COLUMN hash TEXT NOT NULL DEFAULT ''")
        conn.execute("ALTER TABLE audit ADD COLUMN charge_id INTEGER")
        conn.execute("UPDATE audit SET charge_id = json_extract(row, '$.charge_id')")
        for statement in (_SCHEMA + _audit.SCHEMA).split(";\n"):
            if statement.strip() and "TRIGGER" not in statement:
                conn.execute(statement)
        prev = _audit.GENESIS
        last = 0
        for values in conn.execute(f"SELECT {', '.join(_CHARGE_FIELDS)} FROM charges ORDER BY id").fetchall():
            row = dict(zip(_CHARGE_FIELDS, values))
            digest = _audit.chain_hash(prev, _charge_text(row))
            conn.execute("UPDATE charges SET prev_hash = ?, hash = ? WHERE id = ?", (prev, digest, row["id"]))
            audited = conn.execute("SELECT 1 FROM audit WHERE charge_id = ?", (row["id"],)).fetchone()
            if audited is None:
                cached = conn.execute("SELECT answer FROM answers WHERE charge_id = ?", (row["id"],)).fetchone()
                entry: dict[str, Any] = {
                    "time": _now(), "kind": row["kind"], "outcome": "unrecorded before format 2",
                    "charge_id": row["id"], "analyst": row["analyst"], "database": row["database"],
                    "charge_epsilon": row["epsilon"], "charge_delta": row["delta"], "request_key": row["request_key"],
                }
                if cached is not None:  # its answer was stored (and may have been returned): it was released
                    answer = json.loads(cached[0])
                    entry.update(outcome="released", value=str(answer.get("value_exact", answer.get("value"))),
                                 detail="audit row written when the ledger was migrated to format 2, from the cached answer")
                _audit.append(conn, entry)
            prev, last = digest, row["id"]
        if last:
            conn.execute("INSERT OR REPLACE INTO charges_head (id, charge_id, hash) VALUES (1, ?, ?)", (last, prev))
        conn.execute("DROP TABLE IF EXISTS totals")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'format'", (FORMAT,))

    @classmethod
    def for_database(cls, database: str, settings: Settings | None = None) -> Ledger:
        """The ledger of ``database`` as pimento.toml configures it: ``[ledger] url`` (PostgreSQL,
        shared by several processes or machines) or the SQLite file :func:`ledger_path`."""
        settings = settings or Settings()
        if settings.ledger.url:
            return cls(os.path.expandvars(settings.ledger.url), settings.ledger)
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

    def _scan(self, *, full: bool = False) -> _State:
        """Read the charges, recompute their chain, and sum the spends per (database, analyst).

        The verified prefix is remembered by this object: a later scan re-reads only the charges
        added since, after checking that the last verified charge still has its hash and that no
        earlier id is missing. So the budget is always the sum of charges this process verified;
        ``full=True`` (verify) re-reads everything."""
        cached = None if full else self._verified
        if cached is not None:
            (below,) = self._conn.execute("SELECT COUNT(*) FROM charges WHERE id <= ?", (cached.last_id,)).fetchone()
            intact = below == cached.count
            if intact and cached.last_id:
                values = self._conn.execute(
                    f"SELECT {', '.join(_CHARGE_FIELDS)}, prev_hash, hash FROM charges WHERE id = ?", (cached.last_id,)
                ).fetchone()
                intact = (
                    values is not None
                    and values[-1] == cached.last_hash
                    and _audit.chain_hash(values[-2], _charge_text(dict(zip(_CHARGE_FIELDS, values[:-2])))) == values[-1]
                )
            if not intact:
                cached = None
        problems: list[_audit.AuditProblem] = []
        if cached is None:
            raw: dict[tuple[str, str], list[Fraction]] = {}
            rows: dict[int, dict[str, Any]] = {}
            prev, last_id, count = _audit.GENESIS, 0, 0
        else:
            raw = {k: [v.epsilon, v.delta] for k, v in cached.sums.items()}
            rows = dict(cached.rows)
            prev, last_id, count = cached.last_hash, cached.last_id, cached.count
        parsed: dict[str, Fraction] = {}

        def number(text: str, name: str) -> Fraction:
            value = parsed.get(text)
            if value is None:
                value = parsed[text] = parse_number(text, name=name)
            return value

        cols = ", ".join(_CHARGE_FIELDS)
        for values in self._conn.execute(f"SELECT {cols}, prev_hash, hash FROM charges WHERE id > ? ORDER BY id", (last_id,)):
            row = dict(zip(_CHARGE_FIELDS, values[:-2]))
            stored_prev, digest = values[-2], values[-1]
            count += 1
            cid = row["id"]
            if cid != last_id + 1:
                problems.append(_audit.AuditProblem(None, "charge_gap", f"charge ids jump from {last_id} to {cid}: charges were deleted"))
            if stored_prev != prev:
                problems.append(_audit.AuditProblem(None, "charge_edited", f"charge {cid}: prev_hash does not match the previous charge's hash"))
            if _audit.chain_hash(stored_prev, _charge_text(row)) != digest:
                problems.append(_audit.AuditProblem(None, "charge_edited", f"charge {cid}: content does not match its hash"))
            prev, last_id = digest, cid
            try:
                eps, dlt = number(row["epsilon"], "epsilon"), number(row["delta"], "delta")
                if eps < 0 or not 0 <= dlt < 1:
                    raise ValueError(row["epsilon"])
            except Exception:  # noqa: BLE001 - an unreadable amount is a problem to report, not a crash
                problems.append(_audit.AuditProblem(None, "charge_edited", f"charge {cid}: unreadable amount"))
                continue
            row["budget"] = Budget(eps, dlt)
            rows[cid] = row
            for who in (DATABASE_SCOPE, row["analyst"]):
                acc = raw.setdefault((row["database"], who), [Fraction(0), Fraction(0)])
                acc[0] += eps
                acc[1] += dlt
        head = self._conn.execute("SELECT charge_id, hash FROM charges_head WHERE id = 1").fetchone()
        head_id, head_hash = head if head else (0, _audit.GENESIS)
        if head_id != last_id or head_hash != prev:
            problems.append(
                _audit.AuditProblem(None, "charge_head_mismatch", f"charges_head names charge {head_id}, the table ends at {last_id}: charges at the end were removed or the head was edited")
            )
        sums = {}
        for k, (eps, dlt) in raw.items():
            if dlt >= 1:
                problems.append(_audit.AuditProblem(None, "charge_edited", f"the charges of {k[0]} add up to delta >= 1"))
                dlt = Fraction(0)
            sums[k] = Budget(eps, dlt)
        state = _State(count, last_id, prev, sums, problems, rows)
        self._verified = None if problems else state
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

    def spent(self, database: str, analyst: str | None = None) -> Budget:
        """Total charged on ``database`` (by ``analyst`` if given): the sum of its charges."""
        keys = database_keys(database)
        return self._total(self._sums(keys[0]), keys, analyst or DATABASE_SCOPE)

    def remaining(self, database: str, analyst: str) -> Budget:
        """What ``analyst`` may still spend on ``database``: the smaller of the two caps' remainders, per part."""
        keys = database_keys(database)
        sums = self._sums(keys[0])
        db_left = self._db_cap.minus(self._total(sums, keys, DATABASE_SCOPE))
        an_left = self.analyst_cap(analyst).minus(self._total(sums, keys, analyst))
        return Budget(min(db_left.epsilon, an_left.epsilon), min(db_left.delta, an_left.delta))

    # ------------------------------------------------------------------ integrity

    def _counts(self) -> tuple[int, int, int]:
        """(audit rows with a charge, distinct charges audited, pending)."""
        audited, distinct = self._conn.execute("SELECT COUNT(charge_id), COUNT(DISTINCT charge_id) FROM audit").fetchone()
        (pending,) = self._conn.execute("SELECT COUNT(*) FROM pending").fetchone()
        return audited, distinct, pending

    def _witness_problems(self, state: _State) -> list[_audit.AuditProblem]:
        if self.witness is None:
            return []
        witness = _load_witness(self.path)
        if witness is None:
            return []
        if witness.get("unreadable"):
            return [_audit.AuditProblem(None, "witness_mismatch", f"the witness {self.witness} is unreadable")]
        problems = []
        n, h = int(witness.get("charges", 0)), str(witness.get("charge_hash", _audit.GENESIS))
        if n > 0:
            row = self._conn.execute("SELECT hash FROM charges WHERE id = ?", (n,)).fetchone()
            if row is None or row[0] != h:
                problems.append(
                    _audit.AuditProblem(None, "witness_mismatch", f"the witness {self.witness.name} records charge {n} ending the chain in {h[:12]}; the ledger {'lacks it' if row is None else 'holds another'}")
                )
        m, g = int(witness.get("audit_rows", 0)), str(witness.get("audit_hash", _audit.GENESIS))
        if m > 0:
            row = self._conn.execute("SELECT hash FROM audit WHERE seq = ?", (m,)).fetchone()
            if row is None or row[0] != g:
                problems.append(
                    _audit.AuditProblem(None, "witness_mismatch", f"the witness {self.witness.name} records audit row {m} with hash {g[:12]}; the log {'lacks it' if row is None else 'holds another'}")
                )
        return problems

    def _fast_check(self) -> _State:
        """The checks run before every charge (inside its transaction); raise LedgerIntegrityError."""
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
        problems += [p.detail for p in self._witness_problems(state)]
        if problems:
            raise LedgerIntegrityError(
                f"the budget ledger {self.name} failed its integrity check ({problems[0]}"
                + (f"; and {len(problems) - 1} more" if len(problems) > 1 else "")
                + "): releases are refused; nothing was spent",
                hint="the custodian should run `pimento audit verify --db DB` and restore the ledger from a backup",
            )
        return state

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
        state: _State,
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
        now = _now()
        eps, dlt = budget.to_text()
        cid = state.last_id + 1
        row = {"id": cid, "time": now, "database": key, "analyst": analyst, "kind": kind, "epsilon": eps, "delta": dlt, "request_key": request_key, "note": note}
        digest = _audit.chain_hash(state.last_hash, _charge_text(row))
        self._conn.execute(
            "INSERT INTO charges (id, time, database, analyst, kind, epsilon, delta, request_key, note, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (cid, now, key, analyst, kind, eps, dlt, request_key, note, state.last_hash, digest),
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
        return Charge(cid, now, key, analyst, kind, budget, request_key)

    def _write(self, body: Callable[[], _T]) -> _T:
        """Run ``body`` inside BEGIN IMMEDIATE ... COMMIT; roll back on any error; then update the witness."""
        conn = self._conn
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
        if witness is not None:
            self._write_witness(witness)
        return result

    def _witness_state(self) -> dict[str, Any]:
        head = self._conn.execute("SELECT charge_id, hash FROM charges_head WHERE id = 1").fetchone()
        audit_head = self._conn.execute("SELECT seq, hash FROM audit_head WHERE id = 1").fetchone()
        spent: dict[str, dict[str, str]] = {}
        for (db, who), total in self._scan().sums.items():
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
            "written": _now(),
        }

    def _write_witness(self, state: dict[str, Any]) -> None:
        """Replace the witness atomically, never with an older state (writers race after their commits;
        a witness that lags is still a valid prefix of the ledger, so it never raises a false alarm)."""
        assert self.witness is not None
        old = _load_witness(self.path)
        if old and not old.get("unreadable") and (int(old.get("charges", 0)) > state["charges"] or int(old.get("audit_rows", 0)) > state["audit_rows"]):
            return
        tmp = self.witness.with_name(f"{self.witness.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            _write_private(tmp, json.dumps(state, sort_keys=True, indent=1))
            os.replace(tmp, self.witness)
            _legacy_witness_path(self.path).unlink(missing_ok=True)  # the witness has moved beside the database
        except OSError:
            tmp.unlink(missing_ok=True)

    # ------------------------------------------------------------------ pending charges

    def _stale(self, started: float, owner: str) -> str | None:
        """Why a pending charge is considered abandoned, or None while it may still answer."""
        alive = _owner_alive(owner)
        if alive is False:
            return "the process that paid for it ended before storing an answer"
        if time.time() - started > self.pending_timeout_s:
            return f"it stayed pending longer than {self.pending_timeout_s:g} s"
        return None

    def _abort(self, charge_id: int, request_key_: str | None, reason: str, state: _State) -> None:
        row = state.rows.get(charge_id)
        self._conn.execute("DELETE FROM pending WHERE charge_id = ?", (charge_id,))
        audit_row = {
            "time": _now(), "kind": row["kind"] if row else "release", "outcome": "aborted",
            "detail": f"aborted, nothing released: {reason}", "request_key": request_key_,
            "analyst": row["analyst"] if row else None, "database": row["database"] if row else None,
        }
        if row is not None:
            self._append_audit(audit_row, Charge(charge_id, row["time"], row["database"], row["analyst"], row["kind"], row["budget"], request_key_))
        else:
            _audit.append(self._conn, {**audit_row, "charge_id": charge_id})

    def _reap(self, state: _State) -> int:
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

    # ------------------------------------------------------------------ answers and audit

    def _append_audit(self, row: dict[str, Any], charge: Charge) -> None:
        eps, dlt = charge.budget.to_text()
        _audit.append(self._conn, {**_jsonable(row), "charge_id": charge.id, "charge_epsilon": eps, "charge_delta": dlt})

    def cached_answer(self, request_key: str) -> dict[str, Any] | None:
        """The answer stored for an identical earlier request, if the cache is on and has one."""
        if not self.answer_cache:
            return None
        row = self._conn.execute("SELECT answer FROM answers WHERE request_key = ?", (request_key,)).fetchone()
        return json.loads(row[0]) if row else None

    def charge_release(self, analyst: str, database: str, budget: Budget, request_key: str) -> Charge | dict[str, Any]:
        """Charge one release, or return the answer an identical earlier request stored (free).

        In one transaction: the fast integrity check (refusal: :class:`LedgerIntegrityError`), the
        halt (refusal: :class:`DeploymentHaltedError`, also for a cached answer), abandoned pending charges closed, the answer cache looked up, and -- when an identical
        request is pending -- nothing: this call then waits (polling) for that answer, so that
        identical requests are charged once. Otherwise the caps are checked and the charge is
        made, pending under ``request_key``; the caller must end with :meth:`record_release` or
        :meth:`record_failure` for it. Returns the stored answer dict or the new :class:`Charge`.
        """
        self._check_analyst(analyst)
        budget.as_spend()
        key, *aliases = database_keys(database)
        wait = 0.02
        self._write_unrecorded_halts()

        def body() -> Charge | dict[str, Any] | None:
            state = self._fast_check()
            self._refuse_if_halted(key)
            if self._reap(state):
                state = self._scan()
            if self.answer_cache:
                row = self._conn.execute("SELECT answer FROM answers WHERE request_key = ?", (request_key,)).fetchone()
                if row is not None:
                    return json.loads(row[0])
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

    def _close_pending(self, charge: Charge) -> bool:
        """Remove the pending entry of ``charge``; False if there was none (it was closed as aborted)."""
        self._mine.discard(charge.id)
        return self._conn.execute("DELETE FROM pending WHERE charge_id = ?", (charge.id,)).rowcount == 1

    def record_release(self, request_key: str, charge: Charge, answer: dict[str, Any], audit_row: dict[str, Any]) -> dict[str, Any]:
        """Store the answer in the cache and append its audit row, in one transaction; return the answer.

        Raises :class:`ReleaseAbortedError` (nothing written, answer withheld) if the charge was
        closed as aborted meanwhile. If the cache already holds an answer for ``request_key``
        (only possible through :meth:`charge`, which does not wait for identical requests),
        that answer is returned and the audit row says this value was withheld.
        """

        def body() -> dict[str, Any]:
            if not self._close_pending(charge):
                raise ReleaseAbortedError(
                    f"charge {charge.id} was closed as aborted before its answer was stored (its process looked gone or it took longer "
                    f"than {self.pending_timeout_s:g} s): the answer is withheld, the charge stays"
                )
            if self.answer_cache:
                row = self._conn.execute("SELECT answer FROM answers WHERE request_key = ?", (request_key,)).fetchone()
                if row is not None:
                    self._append_audit({**audit_row, "outcome": "withheld", "detail": "an identical request stored its answer first"}, charge)
                    return json.loads(row[0])
                self._conn.execute(
                    "INSERT INTO answers (request_key, charge_id, time, answer) VALUES (?, ?, ?, ?)",
                    (request_key, charge.id, _now(), json.dumps(answer, sort_keys=True)),
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

    def record_custodian_action(self, database: str, tool: str, details: dict[str, Any]) -> None:
        """Append a custodian-tool use (private diagnostics shown to the custodian) to the audit log."""
        row = {"time": _now(), "kind": "custodian", "tool": tool, "database": database_key(database), "details": _jsonable(details)}
        self._write(lambda: _audit.append(self._conn, row))

    # ------------------------------------------------------------------ halting

    def halt(self, database: str, details: dict[str, Any], *, charge: Charge | None = None) -> bool:
        """Halt the releases on ``database`` after a failure that followed a charge; the caller then
        raises :class:`DeploymentHaltedError` (whatever this returns).

        In one transaction: the pending entry of ``charge`` (when given and still open) is closed
        with its audit row ``failed`` holding ``details`` (the custodian's: engine text and all), an
        audit row of kind ``halt`` is appended, and the database is marked halted in the ledger. From
        then on every :meth:`charge_release` on the database, of every analyst and every process,
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
        row = _jsonable(details)
        if charge is not None and self._close_pending(charge):
            self._append_audit({**row, "outcome": "failed", "detail": "failed after its charge: releases on the deployment are halted"}, charge)
        seq, _ = _audit.append(
            self._conn, {"time": _now(), "kind": "halt", "database": key, "failed_charge": charge.id if charge else None, "details": row}
        )
        self._conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
            (_HALT_KEY + key, _audit.canonical_json({"seq": seq, "time": _now()})),
        )

    def _write_unrecorded_halts(self) -> None:
        """Try again to write the halts this process could not write to this ledger."""
        for (ledger_id, _key), (database, details, charge) in list(_UNRECORDED_HALTS.items()):
            if ledger_id == self._ledger_id:
                self.halt(database, details, charge=charge)

    def _refuse_if_halted(self, key: str) -> None:
        """Raise :class:`DeploymentHaltedError` when the releases on ``key`` are halted (in the ledger or in this process)."""
        if (self._ledger_id, key) in _UNRECORDED_HALTS or (self._ledger_id, "*") in _UNRECORDED_HALTS:
            raise DeploymentHaltedError()
        if self._conn.execute("SELECT 1 FROM meta WHERE key IN (?, ?)", (_HALT_KEY + key, _HALT_KEY + "*")).fetchone() is not None:
            raise DeploymentHaltedError()

    def _halt_marks(self) -> dict[str, int]:
        """The halted database keys in the ledger, each with the audit row of its halt (0 if unreadable)."""
        marks = {}
        for name, value in self._conn.execute("SELECT key, value FROM meta WHERE key LIKE ?", (_HALT_KEY + "%",)).fetchall():
            try:
                seq = int(json.loads(value).get("seq", 0))
            except (TypeError, ValueError, AttributeError):
                seq = 0
            marks[str(name)[len(_HALT_KEY):]] = seq
        return marks

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
            _audit.append(self._conn, {"time": _now(), "kind": "custodian", "tool": "resume", "database": key, "details": details})
            return lifted

        lifted = self._write(body)
        for slot in [s for s in _UNRECORDED_HALTS if s[0] == self._ledger_id and s[1] in (key, "*")]:
            _UNRECORDED_HALTS.pop(slot, None)
        return lifted

    def _halt_problems(self) -> list[_audit.AuditProblem]:
        """The halts the audit log leaves in force must be the ones the ledger marks (verify)."""
        in_force: dict[str, int] = {}
        for seq, text in self._conn.execute("SELECT seq, row FROM audit ORDER BY seq").fetchall():
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
        marks = self._halt_marks()
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

    def check_file(self) -> None:
        """Read every page of the SQLite ledger file (``PRAGMA quick_check``); raise LedgerIntegrityError
        if it is damaged. Run where a full read is affordable: ``pimento serve`` at start, ``audit verify``."""
        if self.postgres:
            return
        found = [str(r[0]) for r in self._conn.execute("PRAGMA quick_check(5)").fetchall()]
        if found != ["ok"]:
            raise _damaged(self.name, "; ".join(found))

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

    def verify_audit(self, *, expect_head: str | None = None) -> _audit.AuditReport:
        """Everything :func:`pimento.mechanisms.audit.verify` checks, plus the ledger: the charge chain
        and its head, one audit row per charge that is not pending (and none for an unknown charge,
        with the charge's budget), and the witness file. Read-only: see :meth:`close_abandoned`."""
        report = _audit.verify(self._conn, expect_head=expect_head)
        state = self._scan(full=True)
        problems = list(report.problems) + state.problems
        pending = {cid for (cid,) in self._conn.execute("SELECT charge_id FROM pending")}
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
        for cid in pending - set(state.rows):
            problems.append(_audit.AuditProblem(None, "audit_without_charge", f"a pending entry names charge {cid}, which the ledger does not hold"))
        problems += self._witness_problems(state)
        problems += self._halt_problems()
        notes: list[str] = []
        if self.witness is not None and not self.witness.exists() and state.count:
            notes.append(f"no witness file {self.witness.name} (it is written at the next charge)")
        return _audit.AuditReport(
            rows=report.rows, head=report.head, problems=tuple(problems), charges=state.count, pending=len(pending), notes=tuple(notes)
        )

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
            "database": key if "://" in database or database.startswith(_KEY_PREFIX) else str(Path(database).resolve()),
            "deployment": key,
            "ledger": self.name,
            "cap": self._db_cap.to_dict(),
            "spent": db_spent.to_dict(),
            "left": self._db_cap.minus(db_spent).to_dict(),
            "analysts": analysts,
            "answer_cache": self.answer_cache,
        }
