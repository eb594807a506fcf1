"""Migration of older ledger files to the format this code writes (:data:`.ledger_schema.FORMAT`)."""

from __future__ import annotations

import json
from typing import Any

from pimento.mechanisms import audit as _audit
from pimento.mechanisms.ledger_chain import CHARGE_FIELDS, charge_text
from pimento.mechanisms.ledger_files import now
from pimento.mechanisms.ledger_schema import FORMAT, SQLITE_LEDGER_SCHEMA

__all__ = ["migrate_from_1"]


def migrate_from_1(conn: _audit.Connection) -> None:
    """Format 1 (running totals, no chain over charges) -> 2, inside the open transaction on ``conn``.

    The charges are chained in id order, every charge without an audit row gets one
    (``released`` with the cached answer's value when its answer was stored, else
    "unrecorded before format 2"), the running totals are dropped (the budget is the sum
    of the charges)."""
    conn.execute("DROP TRIGGER IF EXISTS charges_no_update")
    conn.execute("DROP TRIGGER IF EXISTS audit_no_update")
    conn.execute("ALTER TABLE charges ADD COLUMN prev_hash TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE charges ADD COLUMN hash TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE audit ADD COLUMN charge_id INTEGER")
    conn.execute("UPDATE audit SET charge_id = json_extract(row, '$.charge_id')")
    for statement in (SQLITE_LEDGER_SCHEMA + _audit.SCHEMA).split(";\n"):
        if statement.strip() and "TRIGGER" not in statement:
            conn.execute(statement)
    prev = _audit.GENESIS
    last = 0
    for values in conn.execute(f"SELECT {', '.join(CHARGE_FIELDS)} FROM charges ORDER BY id").fetchall():
        row = dict(zip(CHARGE_FIELDS, values))
        digest = _audit.chain_hash(prev, charge_text(row))
        conn.execute("UPDATE charges SET prev_hash = ?, hash = ? WHERE id = ?", (prev, digest, row["id"]))
        audited = conn.execute("SELECT 1 FROM audit WHERE charge_id = ?", (row["id"],)).fetchone()
        if audited is None:
            _audit.append(conn, _migration_audit_row(conn, row))
        prev, last = digest, row["id"]
    if last:
        conn.execute("INSERT OR REPLACE INTO charges_head (id, charge_id, hash) VALUES (1, ?, ?)", (last, prev))
    conn.execute("DROP TABLE IF EXISTS totals")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'format'", (FORMAT,))


def _migration_audit_row(conn: _audit.Connection, row: dict[str, Any]) -> dict[str, Any]:
    """The audit row written for a format-1 charge that had none: ``released`` with the cached
    answer's value when its answer was stored (and may have been returned), else "unrecorded"."""
    cached = conn.execute("SELECT answer FROM answers WHERE charge_id = ?", (row["id"],)).fetchone()
    entry: dict[str, Any] = {
        "time": now(), "kind": row["kind"], "outcome": "unrecorded before format 2",
        "charge_id": row["id"], "analyst": row["analyst"], "database": row["database"],
        "charge_epsilon": row["epsilon"], "charge_delta": row["delta"], "request_key": row["request_key"],
    }
    if cached is not None:  # its answer was stored (and may have been returned): it was released
        answer = json.loads(cached[0])
        entry.update(outcome="released", value=str(answer.get("value_exact", answer.get("value"))),
                     detail="audit row written when the ledger was migrated to format 2, from the cached answer")
    return entry
