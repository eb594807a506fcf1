"""Introspection of the 20 Spider dev SQLite databases matches Spider's own tables.json.

Spider's annotation has two known conventions we account for explicitly:

* ``primary_keys`` lists one column per table: for a composite key, only its first column
  (by key position). We compare against exactly that column, and check that the rest of
  the introspected key is there too.
* a handful of foreign keys were annotated by hand that the SQLite file does not declare;
  they are listed in ``ANNOTATION_ONLY_FKS`` with the reason, and nothing else may differ.
* SQLite's internal ``sqlite_sequence`` table appears in one annotation; catalogs hide it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pimento.engines import open_engine

pytestmark = pytest.mark.spider

DEV_DATABASES = (
    "battle_death", "car_1", "concert_singer", "course_teach", "cre_Doc_Template_Mgt", "dog_kennels",
    "employee_hire_evaluation", "flight_2", "museum_visit", "network_1", "orchestra", "pets_1",
    "poker_player", "real_estate_properties", "singer", "student_transcripts_tracking", "tvshow",
    "voter_1", "world_1", "wta_1",
)  # fmt: skip

#: (db, (table, column), (ref_table, ref_column)) in tables.json but not declared in the file.
ANNOTATION_ONLY_FKS = {
    # VOTES.state -> AREA_CODE_STATE.state: AREA_CODE_STATE's key is area_code, and the DDL
    # of VOTES declares only its contestant_number foreign key.
    ("voter_1", ("votes", "state"), ("area_code_state", "state")),
}


@pytest.fixture(scope="module")
def spider_tables(spider_dir: Path) -> dict[str, dict]:
    entries = json.loads((spider_dir / "dev" / "tables.json").read_text(encoding="utf-8"))
    return {entry["db_id"]: entry for entry in entries}


def test_dev_set_is_the_twenty_databases(spider_tables: dict[str, dict]) -> None:
    assert sorted(spider_tables) == sorted(DEV_DATABASES)


@pytest.mark.parametrize("db_id", DEV_DATABASES)
def test_keys_and_foreign_keys_match_tables_json(spider_dir: Path, spider_tables: dict[str, dict], db_id: str) -> None:
    entry = spider_tables[db_id]
    tables = entry["table_names_original"]
    columns = entry["column_names_original"]

    def name(index: int) -> tuple[str, str]:
        table_index, column = columns[index]
        return tables[table_index].lower(), column.lower()

    expected_pk: set[tuple[str, str]] = set()
    for key in entry["primary_keys"]:
        expected_pk.update(name(i) for i in (key if isinstance(key, list) else [key]))
    expected_fks = {(name(a), name(b)) for a, b in entry["foreign_keys"]}
    expected_fks -= {(c, r) for db, c, r in ANNOTATION_ONLY_FKS if db == db_id}

    path = spider_dir / "dev" / "database" / db_id / f"{db_id}.sqlite"
    with open_engine(str(path)) as engine:
        assert engine.read_only
        catalog = engine.introspect()
        assert engine.skipped_foreign_keys == []

    # world_1's annotation lists SQLite's internal sqlite_sequence table; the catalog hides it.
    assert {t.lower() for t in catalog.table_names} == {t.lower() for t in tables if not t.startswith("sqlite_")}
    for table in catalog.tables:
        expected_columns = [c.lower() for i, c in columns if i >= 0 and tables[i].lower() == table.name.lower()]
        assert [c.lower() for c in table.column_names] == expected_columns

    first_pk_columns = {(t.name.lower(), t.primary_key[0].lower()) for t in catalog.tables if t.primary_key}
    all_pk_columns = {(t.name.lower(), c.lower()) for t in catalog.tables for c in t.primary_key}
    if any(isinstance(key, list) for key in entry["primary_keys"]):
        assert all_pk_columns == expected_pk  # newer format: composite keys spelled out
    else:
        assert first_pk_columns == expected_pk
        assert expected_pk <= all_pk_columns

    found_fks = {
        ((fk.table.lower(), c.lower()), (fk.ref_table.lower(), r.lower()))
        for fk in catalog.foreign_keys
        for c, r in zip(fk.columns, fk.ref_columns, strict=True)
    }
    assert found_fks == expected_fks
