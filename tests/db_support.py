"""Small DuckDB files for tests (importable: tests/ is on sys.path)."""

from __future__ import annotations

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
