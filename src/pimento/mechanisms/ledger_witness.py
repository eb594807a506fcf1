"""The witness of a ledger: a small file beside the database that outlives the ledger file.

``<database>.pimento-witness.json`` (JSON: number and hash of the last charge and audit row,
budget spent per database) is rewritten after every commit, beside the database and not named
``<ledger>*``, so that ``rm DB.ledger.sqlite*`` leaves it. A ledger that is missing or empty, or
that lacks the rows the witness names, is refused (fail closed): deleting the ledger file or some
of its rows does not give budget back. A PostgreSQL ledger has no witness (see
:mod:`.ledger_postgres`).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from pimento.errors import LedgerIntegrityError
from pimento.mechanisms import audit as _audit
from pimento.mechanisms.ledger_files import write_private

__all__ = [
    "LEDGER_SUFFIX",
    "WITNESS_SUFFIX",
    "check_witness",
    "legacy_witness_path",
    "load_witness",
    "read_witness",
    "recovery_hint",
    "spent_text",
    "witness_path",
    "witness_problems",
    "write_witness",
]

#: Suffix of the witness file (``<database>.pimento-witness.json`` for the default ledger path).
WITNESS_SUFFIX = ".pimento-witness.json"
#: Suffix of the default ledger file (``<database>.ledger.sqlite``).
LEDGER_SUFFIX = ".ledger.sqlite"


def witness_path(ledger_file: str | Path) -> Path:
    """The witness file of a ledger, kept beside the database: ``<database>.pimento-witness.json`` for
    the default ``<database>.ledger.sqlite`` (``<stem>.pimento-witness.json`` for another ledger path).

    Its name is not ``<ledger>`` plus a suffix, so that ``rm DB.ledger.sqlite*`` (the ledger with its
    WAL files) does not delete the witness together with the ledger."""
    ledger_file = Path(ledger_file)
    name = ledger_file.name
    if name.endswith(LEDGER_SUFFIX) and len(name) > len(LEDGER_SUFFIX):
        return ledger_file.with_name(name[: -len(LEDGER_SUFFIX)] + WITNESS_SUFFIX)
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    return ledger_file.with_name(stem + WITNESS_SUFFIX)


def legacy_witness_path(ledger_file: str | Path) -> Path:
    """Where ledgers before the deployment id kept their witness: ``<ledger>.head`` (read, then replaced)."""
    return Path(f"{ledger_file}.head")


def load_witness(ledger_file: str | Path) -> dict[str, Any] | None:
    """The witness of a ledger: the current file, else the legacy ``<ledger>.head``."""
    witness = read_witness(witness_path(ledger_file))
    if witness is None:
        witness = read_witness(legacy_witness_path(ledger_file))
    return witness


def read_witness(path: Path) -> dict[str, Any] | None:
    """The witness file ``path``: None if it does not exist, ``{"charges": -1, "unreadable": True}``
    if it cannot be read or has the wrong shape."""
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


def recovery_hint(ledger_file: Path) -> str:
    """What the custodian can do about a ledger its witness contradicts."""
    return (
        f"restore {ledger_file} from a backup (the witness {witness_path(ledger_file)} names its last charge and audit row); "
        "only if the recorded spend may really be forgotten, move the witness file away, "
        "which starts a new ledger with nothing spent"
    )


#: :func:`check_witness` reads the witness itself unless the caller passes what it read
_UNREAD: Any = object()


def check_witness(ledger_file: str | Path, *, recorded: dict[str, Any] | None = _UNREAD) -> None:
    """Refuse (LedgerIntegrityError) a ledger file that is missing or empty while its witness says
    something was charged: deleting the ledger must not give budget back.

    ``recorded``: the witness as the caller just read it (:func:`load_witness`), when the same read
    serves another check too (opening a ledger: :class:`.ledger_store.LedgerStore`); else it is read here."""
    ledger_file = Path(ledger_file)
    witness = load_witness(ledger_file) if recorded is _UNREAD else recorded
    if not witness:
        return
    if witness.get("unreadable"):
        raise LedgerIntegrityError(f"the ledger witness {witness_path(ledger_file)} is unreadable; nothing was spent", hint=recovery_hint(ledger_file))
    if int(witness.get("charges", 0)) <= 0 and int(witness.get("audit_rows", 0)) <= 0:
        return
    if not ledger_file.exists() or ledger_file.stat().st_size == 0:
        raise LedgerIntegrityError(
            f"the budget ledger {ledger_file} is missing or empty, but its witness records {witness.get('charges')} charge(s) "
            f"(spent: {spent_text(witness)}): refusing to start a new ledger with nothing spent",
            hint=recovery_hint(ledger_file),
        )


def spent_text(witness: dict[str, Any]) -> str:
    """The spend per database a witness records, as text for a message."""
    spent = witness.get("spent") or {}
    if not isinstance(spent, dict) or not spent:
        return "unknown"
    return "; ".join(f"{db}: epsilon {v.get('epsilon')}, delta {v.get('delta')}" for db, v in spent.items() if isinstance(v, dict))


def witness_problems(conn: _audit.Connection, ledger_file: Path, witness: Path, *, known: tuple[int, str] | None = None) -> list[_audit.AuditProblem]:
    """Where the ledger on ``conn`` lacks (or holds another) last charge or audit row than its witness names.

    ``known``: (id, hash) of a charge the caller read in the snapshot ``conn`` reads now (the last charge a scan
    verified in the same transaction): when the witness names that id, its hash is compared without reading the row again."""
    recorded = load_witness(ledger_file)
    if recorded is None:
        return []
    if recorded.get("unreadable"):
        return [_audit.AuditProblem(None, "witness_mismatch", f"the witness {witness} is unreadable")]
    problems = []
    n, h = int(recorded.get("charges", 0)), str(recorded.get("charge_hash", _audit.GENESIS))
    if n > 0:
        row = (known[1],) if known is not None and known[0] == n else conn.execute("SELECT hash FROM charges WHERE id = ?", (n,)).fetchone()
        if row is None or row[0] != h:
            problems.append(
                _audit.AuditProblem(None, "witness_mismatch", f"the witness {witness.name} records charge {n} ending the chain in {h[:12]}; the ledger {'lacks it' if row is None else 'holds another'}")
            )
    m, g = int(recorded.get("audit_rows", 0)), str(recorded.get("audit_hash", _audit.GENESIS))
    if m > 0:
        row = conn.execute("SELECT hash FROM audit WHERE seq = ?", (m,)).fetchone()
        if row is None or row[0] != g:
            problems.append(
                _audit.AuditProblem(None, "witness_mismatch", f"the witness {witness.name} records audit row {m} with hash {g[:12]}; the log {'lacks it' if row is None else 'holds another'}")
            )
    return problems


def _recorded(state: dict[str, Any]) -> dict[str, Any]:
    """What a witness state records of the ledger (all of it but the time it was written)."""
    return {k: v for k, v in state.items() if k != "written"}


def write_witness(witness: Path, ledger_file: Path, state: dict[str, Any]) -> None:
    """Replace the witness atomically, never with an older state (writers race after their commits;
    a witness that lags is still a valid prefix of the ledger, so it never raises a false alarm), and
    not at all when it already records ``state`` (a transaction that wrote nothing: only the time of
    writing, ``"written"``, which nothing checks, would change)."""
    old = load_witness(ledger_file)
    if old and not old.get("unreadable") and (int(old.get("charges", 0)) > state["charges"] or int(old.get("audit_rows", 0)) > state["audit_rows"]):
        return
    if old is not None and _recorded(old) == _recorded(state) and witness.exists():
        return
    tmp = witness.with_name(f"{witness.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        write_private(tmp, json.dumps(state, sort_keys=True, indent=1))
        os.replace(tmp, witness)
        legacy_witness_path(ledger_file).unlink(missing_ok=True)  # the witness has moved beside the database
    except OSError:
        tmp.unlink(missing_ok=True)
