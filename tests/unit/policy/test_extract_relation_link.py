"""A permit to "their child"'s data is enforced only through the one table that relates the two parties
(issue 27: fail narrow). With no link table, or several, the permit is held with a condition question:
before, it was enforced without the relation (every parent could see every pupil's record)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dev_policy_support import extract_on

from pimento.engines.database import load_database
from pimento.policy.extract_offline.conditions import relation_between
from pimento.policy.extract_offline.schema import Schema

TEXT = "P1. A parent may view their child's grades.\n"
BASE = [
    "CREATE TABLE Parent (parent_id INTEGER PRIMARY KEY, name VARCHAR)",
    "CREATE TABLE Pupil (pupil_id INTEGER PRIMARY KEY, name VARCHAR, grades VARCHAR)",
]
GUARDIAN = ("CREATE TABLE Guardian (parent_id INTEGER REFERENCES Parent(parent_id), "
            "pupil_id INTEGER REFERENCES Pupil(pupil_id))")
PICKUP = ("CREATE TABLE Pickup (parent_id INTEGER REFERENCES Parent(parent_id), "
          "pupil_id INTEGER REFERENCES Pupil(pupil_id), day DATE)")


def _extract(tmp_path: Path, ddl: list[str]):
    path = tmp_path / "school.duckdb"
    result = extract_on(path, ";\n".join(ddl), TEXT, subject_principal="Pupil")
    db = load_database(path)
    try:
        return result, Schema(db.catalog)
    finally:
        db.close()


def test_the_one_link_table_relates_the_parent_to_the_child(tmp_path: Path) -> None:
    result, schema = _extract(tmp_path, [*BASE, GUARDIAN])
    (norm,) = result.policy["norms"]
    assert norm["id"] == "P1" and norm["condition"] is not None
    sql = [c["sql"] for c in result.policy["grounding"]["conditions"].values()]
    assert any("FROM Guardian" in q for q in sql)
    parent, pupil = schema.catalog.table("Parent"), schema.catalog.table("Pupil")
    assert relation_between(schema, parent, pupil) is not None


@pytest.mark.parametrize("extra", [[], [GUARDIAN, PICKUP]], ids=["no link table", "two link tables"])
def test_without_one_link_table_the_permit_is_held(tmp_path: Path, extra: list[str]) -> None:
    result, schema = _extract(tmp_path, [*BASE, *extra])
    assert result.policy["norms"] == []  # never enforced without the relation
    (held,) = result.questions
    assert held["clause"] == "P1" and [q["kind"] for q in held["questions"]] == ["condition"]
    parent, pupil = schema.catalog.table("Parent"), schema.catalog.table("Pupil")
    assert relation_between(schema, parent, pupil) is None
