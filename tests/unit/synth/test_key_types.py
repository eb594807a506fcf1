"""Keys the writer must be able to write: minted DATE/TIMESTAMP/TIME keys, and foreign keys whose declared type
differs from the referenced key's (Spider's ``INT(11)`` key referenced by an ``INT`` column)."""

from __future__ import annotations

import datetime
import sqlite3
from pathlib import Path

import pytest

from pimento.engines import open_engine
from pimento.synth import synthesize
from pimento.synth.passes.mint_keys_and_links import minted_values


@pytest.mark.parametrize("family", ["integer", "real", "date", "timestamp", "time", "text"])
def test_minted_values_are_distinct_and_parse_as_their_type(family):
    values = minted_values("T", family, 500)
    assert len(set(values.tolist())) == 500
    parse = {
        "date": datetime.date.fromisoformat,
        "timestamp": datetime.datetime.fromisoformat,
        "time": datetime.time.fromisoformat,
    }.get(family)
    if parse is not None:
        assert [parse(v) for v in values]  # every value is ISO text of its type (the writer casts it)


def test_minted_dates_fit_the_calendar_for_a_huge_table():
    values = minted_values("T", "date", 3_000_000)  # more days than are left after 2000-01-01 before year 10000
    assert datetime.date.fromisoformat(values[-1]) == datetime.date.max
    assert len(set(values[-1000:].tolist())) == 1000


def _source(path: Path, n: int = 120) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE `owner` (`Owner_ID` INT(11) NOT NULL, `name` VARCHAR(50), PRIMARY KEY (`Owner_ID`))")
    con.execute(
        "CREATE TABLE `plane` (`Plane_ID` INT, `Owner_ID` INT, `day` DATETIME, PRIMARY KEY (`Plane_ID`), "
        "FOREIGN KEY (`Owner_ID`) REFERENCES `owner` (`Owner_ID`), FOREIGN KEY (`day`) REFERENCES `calendar` (`day`))"
    )
    con.execute("CREATE TABLE `calendar` (`day` DATETIME, `label` TEXT, PRIMARY KEY (`day`))")
    con.execute("CREATE TABLE `shift` (`start` TIME, `open_on` DATE UNIQUE, PRIMARY KEY (`start`))")
    con.executemany("INSERT INTO owner VALUES (?, ?)", [(i, f"o{i % 5}") for i in range(n)])
    days = [f"2020-01-{1 + i % 28:02d} 0{i % 10}:00:00" for i in range(n)]
    con.executemany("INSERT INTO calendar VALUES (?, ?)", [(d, f"l{i % 3}") for i, d in enumerate(sorted(set(days)))])
    con.executemany("INSERT INTO plane VALUES (?, ?, ?)", [(i, i % n, days[i % len(days)]) for i in range(3 * n)])
    con.executemany("INSERT INTO shift VALUES (?, ?)", [(f"0{i // 60}:{i % 60:02d}:00", f"2021-02-{1 + i % 28:02d}") for i in range(28)])
    con.commit()
    con.close()
    return path


def test_spider_shaped_key_types_synthesize(tmp_path):
    # Before: "Failed to create foreign key: incompatible types ... BIGINT ... INTEGER" (INT(11) is no DuckDB type,
    # so the key fell back to BIGINT while its INT reference stayed INTEGER), and "invalid timestamp field format:
    # 'calendar_1'" (a minted DATETIME key got text values).
    engine = open_engine(str(_source(tmp_path / "src.sqlite")))
    catalog = engine.introspect()
    result = synthesize(engine, catalog, tmp_path / "o.duckdb", "4", "1e-6", root="owner", seed=0, _noise_seed=1)
    engine.close()
    types = dict(
        ((t, c), d)
        for t, c, d in result.engine.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema()"
        ).rows
    )
    assert types[("plane", "Owner_ID")] == types[("owner", "Owner_ID")]
    assert types[("calendar", "day")] == "TIMESTAMP" and types[("plane", "day")] == "TIMESTAMP"
    assert types[("shift", "start")] == "TIME" and types[("shift", "open_on")] == "DATE"
    dangling = result.engine.execute(
        'SELECT COUNT(*) FROM plane p LEFT JOIN owner o ON p."Owner_ID" = o."Owner_ID" WHERE p."Owner_ID" IS NOT NULL AND o."Owner_ID" IS NULL'
    ).rows
    assert list(dangling) == [(0,)]
    result.engine.close()
