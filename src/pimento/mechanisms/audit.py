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
import sqlite3
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GENESIS", "AuditProblem", "AuditReport", "append", "canonical_json", "rows", "verify", "SCHEMA"]

GENESIS = "0" * 64

SCHEMA = """
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY,
    row TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS audit_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
"""


def canonical_json(row: dict[str, Any]) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the bytes that are hashed."""
    return json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _link(prev_hash: str, row_text: str) -> str:
    return hashlib.sha256((prev_hash + row_text).encode("utf-8")).hexdigest()


def append(conn: sqlite3.Connection, row: dict[str, Any]) -> tuple[int, str]:
    """Append ``row`` (inside the caller's open transaction); returns (seq, hash)."""
    head = conn.execute("SELECT seq, hash FROM audit_head WHERE id = 1").fetchone()
    seq, prev = (head[0] + 1, head[1]) if head else (1, GENESIS)
    text = canonical_json({**row, "seq": seq})
    digest = _link(prev, text)
    conn.execute("INSERT INTO audit (seq, row, prev_hash, hash) VALUES (?, ?, ?, ?)", (seq, text, prev, digest))
    conn.execute(
        "INSERT INTO audit_head (id, seq, hash) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
        (seq, digest),
    )
    return seq, digest


def rows(conn: sqlite3.Connection, *, limit: int | None = None) -> list[dict[str, Any]]:
    """The audit rows in sequence order (the last ``limit`` if given), with their hashes."""
    sql = "SELECT seq, row, hash FROM audit ORDER BY seq"
    result = [{**json.loads(text), "hash": digest} for _seq, text, digest in conn.execute(sql)]
    return result[-limit:] if limit else result


@dataclass(frozen=True)
class AuditProblem:
    seq: int | None
    kind: str  # "edited", "broken_link", "gap", "reordered", "head_mismatch", "unreadable"
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "kind": self.kind, "detail": self.detail}


@dataclass(frozen=True)
class AuditReport:
    rows: int
    head: str
    problems: tuple[AuditProblem, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "rows": self.rows, "head": self.head, "problems": [p.to_dict() for p in self.problems]}


def verify(conn: sqlite3.Connection, *, expect_head: str | None = None) -> AuditReport:
    """Recompute the chain and report every inconsistency found."""
    problems: list[AuditProblem] = []
    prev = GENESIS
    expected_seq = 1
    count = 0
    for seq, text, stored_prev, digest in conn.execute("SELECT seq, row, prev_hash, hash FROM audit ORDER BY seq"):
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
        if _link(stored_prev, text) != digest:
            problems.append(AuditProblem(seq, "edited", "row content does not match its hash"))
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
