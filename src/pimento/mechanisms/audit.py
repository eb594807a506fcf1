"""Append-only, hash-chained audit log of releases, stored in the ledger's SQLite file.

Each row records who asked what and what was released (time, analyst, database, question,
SQL, mode, epsilon, delta, noise law, noise scale, released value and interval), never the
true answer. Row ``i`` carries ``hash_i = sha256(hash_{i-1} || canonical_json(row_i))``
with ``hash_0 = "0" * 64``, and ``audit_head`` holds the last sequence number and hash.
:func:`verify` recomputes the chain: an edited row breaks its own hash, a deleted or
reordered row breaks the sequence numbers or the link to its predecessor, and a truncated
tail disagrees with ``audit_head`` (or with a head hash kept elsewhere, ``expect_head``).
SQLite triggers refuse UPDATE and DELETE on the table, so tampering needs deliberate
surgery on the file, which the chain then exposes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from pimento.mechanisms.ledger_schema import audit_tables, sqlite_append_only

__all__ = [
    "GENESIS", "AuditProblem", "AuditReport", "Connection", "append", "canonical_json", "chain_hash", "check_head", "released_part", "rows",
    "verify", "SCHEMA",
]

GENESIS = "0" * 64

SCHEMA = audit_tables("sqlite") + sqlite_append_only("audit", "the audit log is")


class Connection(Protocol):
    """The sqlite3 surface the ledger and its audit log use: a ``sqlite3.Connection``, or a
    :class:`pimento.mechanisms.ledger_postgres.PgConnection` (the same surface on PostgreSQL)."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, params: Any = ..., /) -> Any: ...

    def close(self) -> None: ...


def canonical_json(row: dict[str, Any]) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the bytes that are hashed."""
    return json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def chain_hash(prev_hash: str, row_text: str) -> str:
    """``sha256(prev_hash || row_text)``: the link of a hash chain (audit rows and ledger charges)."""
    return hashlib.sha256((prev_hash + row_text).encode("utf-8")).hexdigest()


_link = chain_hash


def append(conn: Connection, row: dict[str, Any]) -> tuple[int, str]:
    """Append ``row`` (inside the caller's open transaction); returns (seq, hash)."""
    head = conn.execute("SELECT seq, hash FROM audit_head WHERE id = 1").fetchone()
    seq, prev = (head[0] + 1, head[1]) if head else (1, GENESIS)
    text = canonical_json({**row, "seq": seq})
    digest = _link(prev, text)
    charge_id = row.get("charge_id")
    conn.execute(
        "INSERT INTO audit (seq, row, prev_hash, hash, charge_id) VALUES (?, ?, ?, ?, ?)",
        (seq, text, prev, digest, int(charge_id) if charge_id is not None else None),
    )
    conn.execute(
        "INSERT INTO audit_head (id, seq, hash) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
        (seq, digest),
    )
    return seq, digest


def rows(conn: Connection, *, limit: int | None = None) -> list[dict[str, Any]]:
    """The audit rows in sequence order (the last ``limit`` if given), with their hashes."""
    sql = "SELECT seq, row, hash FROM audit ORDER BY seq"
    result = [{**json.loads(text), "hash": digest} for _seq, text, digest in conn.execute(sql)]
    return result[-limit:] if limit else result


def released_part(row: dict[str, Any]) -> dict[str, Any]:
    """The mode of a release row and which part of its count the released value is.

    ``mode``: the mode's name (the row records the answer cache's mode key, which adds the policy
    and the context after a colon: ``split:policy:...``). ``part``: ``"remainder"`` when the release
    answered an exact authorized part beside the noisy value (mode split: the value is the noisy
    remainder, not the total; ``authorized_exact`` is the exact part, the number the analyst was
    answered, kept in the row's custodian block as ``authorized_part``), else ``"count"`` (the value
    estimates the whole count). Rows that are not releases get ``mode`` only (``None`` when unrecorded).
    """
    recorded = row.get("mode")
    mode = str(recorded).split(":", 1)[0] if recorded else None
    found = row.get("private")
    private: dict[str, Any] = found if isinstance(found, dict) else {}
    if "authorized_part" in private:
        return {"mode": mode, "part": "remainder", "authorized_exact": private["authorized_part"]}
    if row.get("value") is None:
        return {"mode": mode}
    return {"mode": mode, "part": "count"}


@dataclass(frozen=True)
class AuditProblem:
    seq: int | None
    #: audit chain: "edited", "broken_link", "gap", "reordered", "head_mismatch", "unreadable";
    #: ledger (see Ledger.verify_audit): "charge_edited", "charge_gap", "charge_head_mismatch",
    #: "charge_unaudited", "charge_audited_twice", "audit_without_charge", "charge_mismatch",
    #: "witness_mismatch", "answer_unaudited", "halt_mismatch"
    kind: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "kind": self.kind, "detail": self.detail}


@dataclass(frozen=True)
class AuditReport:
    """What :func:`verify` (and :meth:`pimento.mechanisms.Ledger.verify_audit`) found.

    ``charges`` and ``pending`` are filled by the ledger, which also compares the charges
    with the audit rows; ``notes`` are remarks that are not problems (e.g. a witness file
    that was missing and has been written anew).
    """

    rows: int
    head: str
    problems: tuple[AuditProblem, ...] = field(default_factory=tuple)
    charges: int = 0
    pending: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "rows": self.rows,
            "head": self.head,
            "charges": self.charges,
            "pending": self.pending,
            "problems": [p.to_dict() for p in self.problems],
            "notes": list(self.notes),
        }


def verify(conn: Connection, *, expect_head: str | None = None) -> AuditReport:
    """Recompute the chain and report every inconsistency found."""
    problems: list[AuditProblem] = []
    prev = GENESIS
    expected_seq = 1
    count = 0
    for seq, text, stored_prev, digest, charge_col in conn.execute("SELECT seq, row, prev_hash, hash, charge_id FROM audit ORDER BY seq"):
        count += 1
        try:
            data = json.loads(text)
        except (TypeError, ValueError):
            problems.append(AuditProblem(seq, "unreadable", "row is not valid JSON"))
            data = {}
        if seq != expected_seq:
            problems.append(AuditProblem(seq, "gap", f"expected sequence number {expected_seq}, found {seq}: rows were deleted or inserted"))
        if data.get("seq") != seq:
            problems.append(AuditProblem(seq, "reordered", f"row says seq {data.get('seq')} but is stored at {seq}"))
        if stored_prev != prev:
            problems.append(AuditProblem(seq, "broken_link", "prev_hash does not match the previous row's hash"))
        if chain_hash(stored_prev, text) != digest:
            problems.append(AuditProblem(seq, "edited", "row content does not match its hash"))
        if charge_col != data.get("charge_id"):
            problems.append(AuditProblem(seq, "edited", f"the charge_id column ({charge_col}) differs from the row's charge_id ({data.get('charge_id')})"))
        prev = digest
        expected_seq = seq + 1
    head = conn.execute("SELECT seq, hash FROM audit_head WHERE id = 1").fetchone()
    head_seq, head_hash = head if head else (0, GENESIS)
    if head_seq != expected_seq - 1 or head_hash != prev:
        problems.append(
            AuditProblem(None, "head_mismatch", f"audit_head says {head_seq} rows ending in {head_hash[:12]}, the table has {count} ending in {prev[:12]}: rows at the end were removed or the head was edited")
        )
    if expect_head is not None and expect_head != prev:
        problems.append(AuditProblem(None, "head_mismatch", f"last hash {prev[:12]}... differs from the expected head {expect_head[:12]}..."))
    return AuditReport(rows=count, head=prev, problems=tuple(problems))


def check_head(conn: Connection) -> str | None:
    """A fast integrity check (no full scan): the head row exists, its hash recomputes from its
    stored ``prev_hash`` and content, ``audit_head`` names it, and the table has exactly that many
    rows. Returns a description of the first problem, or None. :func:`verify` checks everything."""
    head = conn.execute("SELECT seq, hash FROM audit_head WHERE id = 1").fetchone()
    head_seq, head_hash = head if head else (0, GENESIS)
    count, max_seq = conn.execute("SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM audit").fetchone()
    if count != head_seq or max_seq != head_seq:
        return f"audit_head says {head_seq} rows, the table has {count} (last seq {max_seq})"
    if head_seq == 0:
        return None if head_hash == GENESIS else "audit_head names a hash but the log is empty"
    text, prev, digest = conn.execute("SELECT row, prev_hash, hash FROM audit WHERE seq = ?", (head_seq,)).fetchone()
    if digest != head_hash:
        return f"the last audit row's hash {digest[:12]} differs from audit_head's {head_hash[:12]}"
    if chain_hash(prev, text) != digest:
        return "the last audit row's content does not match its hash"
    return None
