"""Small DuckDB files for tests (importable: tests/ is on sys.path)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

import duckdb

#: a shop of 10 customers and 40 orders, 4 per customer: a join count whose residual
#: sensitivity is at least 4 (one customer joins 4 orders)
SHOP = (
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, region VARCHAR)",
    "CREATE TABLE orders (oid INTEGER PRIMARY KEY, cid INTEGER REFERENCES customers(id))",
    "INSERT INTO customers SELECT i, 'north' FROM range(10) t(i)",
    "INSERT INTO orders SELECT i, i % 10 FROM range(40) t(i)",
)


def duckdb_file(path: Path, statements: Iterable[str]) -> Path:
    """A DuckDB file at ``path`` made by running ``statements`` in order; returns ``path``."""
    con = duckdb.connect(str(path))
    try:
        for statement in statements:
            con.execute(statement)
    finally:
        con.close()
    return path


def demo_with_copy(folder: Path, standin_synthetic, *, patients: int = 300, ledger: str = "") -> Path:
    """The demo hospital (``patients``, seed 5) in ``folder``, ``ledger`` appended under ``[ledger]``
    in its pimento.toml, and a stand-in synthetic copy (seed 6) charged to its ledger beside it as
    ``hospital.synthetic.duckdb``, where ``ask`` and ``search`` look by default. Returns the database."""
    from pimento.demo.hospital import create_demo

    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "hospital.duckdb"
    create_demo(db, patients=patients, seed=5)
    if ledger:
        with open(folder / "pimento.toml", "a", encoding="utf-8") as fh:
            fh.write("\n[ledger]\n" + ledger + "\n")
    # The demo writes a pimento.toml beside its database: build the stand-in elsewhere, then move it.
    (folder / "made").mkdir()
    made = standin_synthetic(folder / "made" / "hospital.duckdb", patients=patients, seed=6, for_database=db)
    made.rename(folder / "hospital.synthetic.duckdb")
    return db


def overwrite_root_page(path: Path, table: str) -> None:
    """Overwrite the root page of ``table`` in the closed SQLite file ``path`` with garbage (a damaged ledger)."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    con.close()
    with open(path, "r+b") as fh:
        fh.seek((root - 1) * page_size)
        fh.write(b"\xa5" * page_size)


def count_deployment_reads(monkeypatch) -> list[str]:
    """Record every read of a deployment file (``ledger_identity._read_deployment``) from now on: the paths, in order."""
    from pimento.mechanisms import ledger_identity

    seen: list[str] = []
    read = ledger_identity._read_deployment

    def counted(file):
        seen.append(str(file))
        return read(file)

    monkeypatch.setattr(ledger_identity, "_read_deployment", counted)
    return seen
