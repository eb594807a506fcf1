"""The offline extraction of a policy text on a DuckDB database built from DDL: a text of
``tests/data/policies/<name>/`` (its ``policy.txt`` on its ``schema.sql``) or one a test writes; shared by the
development texts' tests."""

from __future__ import annotations

from pathlib import Path

import duckdb

from pimento.engines.database import load_database
from pimento.policy.extract_offline import OfflineExtraction, extract_policy_offline

DATA = Path(__file__).resolve().parent / "data" / "policies"


def extract_text(folder: Path, name: str) -> OfflineExtraction:
    """The offline extraction (year 2024) of text ``name``, its database written in ``folder``."""
    return extract_on(folder / f"{name}.duckdb", (DATA / name / "schema.sql").read_text(encoding="utf-8"),
                      (DATA / name / "policy.txt").read_text(encoding="utf-8"))


def extract_on(path: Path, ddl: str, text: str) -> OfflineExtraction:
    """The offline extraction (year 2024) of policy ``text`` on a DuckDB database made at ``path`` by ``ddl``."""
    con = duckdb.connect(str(path))
    con.execute(ddl)
    con.close()
    db = load_database(path)
    try:
        return extract_policy_offline(text, db.catalog, engine=db.engine, year=2024)
    finally:
        db.close()
