"""The extraction of a policy text of ``tests/data/policies/<name>/`` (its ``policy.txt`` on a DuckDB database built
from its ``schema.sql``), shared by the development texts' tests."""

from __future__ import annotations

from pathlib import Path

import duckdb

from pimento.engines.database import load_database
from pimento.policy.extract_offline import OfflineExtraction, extract_policy_offline

DATA = Path(__file__).resolve().parent / "data" / "policies"


def extract_text(folder: Path, name: str) -> OfflineExtraction:
    """The offline extraction (year 2024) of text ``name``, its database written in ``folder``."""
    path = folder / f"{name}.duckdb"
    con = duckdb.connect(str(path))
    con.execute((DATA / name / "schema.sql").read_text(encoding="utf-8"))
    con.close()
    db = load_database(path)
    try:
        return extract_policy_offline((DATA / name / "policy.txt").read_text(encoding="utf-8"), db.catalog,
                                      engine=db.engine, year=2024)
    finally:
        db.close()
