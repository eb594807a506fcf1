"""The charges of the ledger: what one records, and the hash chain that makes the budget their sum.

Charges are append-only (triggers) and hash-chained: ``hash_i = sha256(hash_{i-1} ||
canonical_json(charge_i))``, the head in ``charges_head``. :func:`scan_charges` recomputes the
chain and sums the spends per (database, analyst); the budget is always the sum of charges that a
scan verified.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pimento.mechanisms import audit as _audit
from pimento.mechanisms.budget import Budget, format_number, parse_number

__all__ = ["CHARGE_FIELDS", "DATABASE_SCOPE", "SYNTHETIC_ANALYST", "ChainState", "Charge", "charge_text", "scan_charges"]

#: Pseudo-analyst under which the running total of a whole database is reported.
DATABASE_SCOPE = "*"
#: Pseudo-analyst charged for synthetic-data generation (counts against the database cap only).
SYNTHETIC_ANALYST = "<synthetic>"
#: The columns of a charge that its hash covers.
CHARGE_FIELDS = ("id", "time", "database", "analyst", "kind", "epsilon", "delta", "request_key", "note")


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


def charge_text(row: dict[str, Any]) -> str:
    """The canonical text of a charge row that its chain hash covers."""
    return _audit.canonical_json({k: row[k] for k in CHARGE_FIELDS})


@dataclass
class ChainState:
    """What one scan of the charges found: chain checked, sums per (database, analyst)."""

    count: int
    last_id: int
    last_hash: str
    sums: dict[tuple[str, str], Budget]
    problems: list[_audit.AuditProblem]
    rows: dict[int, dict[str, Any]]
    #: whether this state was computed from the whole chain (not by extending an earlier state)
    full: bool = False

    def appended(self, row: dict[str, Any], budget: Budget, digest: str) -> ChainState:
        """This state after the charge ``row`` (costing ``budget``, chain hash ``digest``) was appended
        (a new state: a state is never changed once made)."""
        sums = dict(self.sums)
        for who in (DATABASE_SCOPE, row["analyst"]):
            part = sums.get((row["database"], who))
            sums[(row["database"], who)] = budget if part is None else part + budget
        rows = {**self.rows, row["id"]: {**row, "budget": budget}}
        return ChainState(self.count + 1, row["id"], digest, sums, list(self.problems), rows)


def _still_intact(conn: _audit.Connection, verified: ChainState) -> bool:
    """Whether the prefix ``verified`` covers is still there: no id at or below its last is missing,
    and its last charge still has its hash."""
    (below,) = conn.execute("SELECT COUNT(*) FROM charges WHERE id <= ?", (verified.last_id,)).fetchone()
    intact = below == verified.count
    if intact and verified.last_id:
        values = conn.execute(
            f"SELECT {', '.join(CHARGE_FIELDS)}, prev_hash, hash FROM charges WHERE id = ?", (verified.last_id,)
        ).fetchone()
        intact = (
            values is not None
            and values[-1] == verified.last_hash
            and _audit.chain_hash(values[-2], charge_text(dict(zip(CHARGE_FIELDS, values[:-2])))) == values[-1]
        )
    return bool(intact)


def _head(conn: _audit.Connection) -> tuple[int, str]:
    """(charge id, hash) that ``charges_head`` names; (0, genesis) for an empty ledger."""
    head = conn.execute("SELECT charge_id, hash FROM charges_head WHERE id = 1").fetchone()
    return (int(head[0]), str(head[1])) if head else (0, _audit.GENESIS)


def scan_charges(conn: _audit.Connection, verified: ChainState | None) -> ChainState:
    """Read the charges, recompute their chain, and sum the spends per (database, analyst).

    With ``verified`` (the state of an earlier scan without problems), only the charges added since
    are read, after checking that its last charge still has its hash and that no earlier id is
    missing; otherwise (or when that check fails) everything is read. Nothing appended since and the
    head unchanged: ``verified`` itself is returned (a state is never changed once made)."""
    cached = verified if verified is not None and _still_intact(conn, verified) else None
    cols = ", ".join(CHARGE_FIELDS)
    appended = conn.execute(f"SELECT {cols}, prev_hash, hash FROM charges WHERE id > ? ORDER BY id", (cached.last_id if cached else 0,)).fetchall()
    if cached is not None and not appended and _head(conn) == (cached.last_id, cached.last_hash):
        return cached
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

    for values in appended:
        row = dict(zip(CHARGE_FIELDS, values[:-2]))
        stored_prev, digest = values[-2], values[-1]
        count += 1
        cid = row["id"]
        if cid != last_id + 1:
            problems.append(_audit.AuditProblem(None, "charge_gap", f"charge ids jump from {last_id} to {cid}: charges were deleted"))
        if stored_prev != prev:
            problems.append(_audit.AuditProblem(None, "charge_edited", f"charge {cid}: prev_hash does not match the previous charge's hash"))
        if _audit.chain_hash(stored_prev, charge_text(row)) != digest:
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
    head_id, head_hash = _head(conn)
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
    return ChainState(count, last_id, prev, sums, problems, rows, full=cached is None)
