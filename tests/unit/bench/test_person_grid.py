"""benchmarks/person_grid.py: its statistics, its person-relation rule, and one small grid through the release."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from benchmarks.person_grid import (
    COLUMNS,
    demo_workload,
    is_distinct,
    error_stats,
    person_relation,
    person_view,
    pooled,
    relative_errors,
    run_workload,
    summarize,
)
from pimento.engines import open_engine


def test_error_stats_median_and_p90() -> None:
    stats = error_stats([float(x) for x in range(11)])  # 0..10: median 5, p90 9 (linear interpolation)
    assert stats == {"n": 11, "median": 5.0, "p90": 9.0}
    assert error_stats([0.5, 0.1]) == {"n": 2, "median": pytest.approx(0.3), "p90": pytest.approx(0.46)}
    assert error_stats([]) == {"n": 0, "median": None, "p90": None}


def test_relative_errors_divide_by_the_true_count_at_least_one() -> None:
    assert relative_errors([90, 110.0, 100], 100) == [0.1, 0.1, 0.0]
    assert relative_errors([3, -2], 0) == [3.0, 2.0]


def test_pooled_keeps_large_counts_and_counts_refusals_apart() -> None:
    rows: list[dict[str, Any]] = [
        {"true": 100, "tuple_rs": {"1": {"relative_errors": [0.1, 0.2], "absolute_errors": [10, 20]}}},
        {"true": 50, "tuple_rs": {"1": {"relative_errors": [5.0], "absolute_errors": [250]}}},
        {"true": 200, "tuple_rs": {"1": {"refused": "UnsupportedQuery: no"}}},
        {"true": None, "skipped": "no person"},
        {"true": 300, "person_r2t": {"1": {"relative_errors": [9.0], "absolute_errors": [2700]}}},
    ]
    got = pooled(rows, "tuple_rs", "1", min_true=100)
    assert got == {"n": 2, "median": pytest.approx(0.15), "p90": pytest.approx(0.19), "median_abs": 15.0, "questions": 1, "refused": 1}
    every = pooled(rows, "tuple_rs", "1")
    assert (every["n"], every["questions"], every["refused"], every["median"]) == (3, 2, 1, 0.2)
    assert pooled(rows, "tuple_rs", "2")["n"] == 0


def _tiny(path: Path) -> None:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE dx (code INTEGER PRIMARY KEY, name VARCHAR)")
    con.execute("CREATE TABLE person (id INTEGER PRIMARY KEY, sex VARCHAR)")
    con.execute("CREATE TABLE visit (id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES person(id), code INTEGER REFERENCES dx(code))")
    con.execute("CREATE TABLE address (id INTEGER PRIMARY KEY, person_id INTEGER REFERENCES person(id))")
    con.execute("CREATE TABLE weather (day INTEGER PRIMARY KEY, rain INTEGER)")
    con.execute("INSERT INTO dx VALUES (1, 'a'), (2, 'b')")
    con.execute("INSERT INTO person VALUES (1, 'F'), (2, 'M'), (3, 'F')")
    con.execute("INSERT INTO visit VALUES (1, 1, 1), (2, 1, 2), (3, 1, 1), (4, 2, 1), (5, 3, 2)")
    con.close()


def test_person_relation_is_the_root_with_most_below_and_what_reaches_it(tmp_path: Path) -> None:
    _tiny(tmp_path / "t.duckdb")
    engine = open_engine(str(tmp_path / "t.duckdb"), read_only=True)
    try:
        catalog = engine.introspect()
        unit, private = person_relation(catalog)
        assert unit == "person"  # 3 relations below it (itself, visit, address); dx 2, weather 1
        assert sorted(private) == ["address", "person", "visit"]  # dx and weather reach no person: public
        private_catalog = catalog.with_private(private)
        rows_view = person_view(engine, private_catalog, unit, "SELECT COUNT(*) FROM visit v JOIN dx d ON v.code = d.code WHERE d.name = 'a'")
        assert rows_view is not None
        pids, max_ids = rows_view
        assert len(pids) == 3 and sorted(pids.count(p) for p in set(pids)) == [1, 2] and max_ids == 64
        distinct = person_view(engine, private_catalog, unit, "SELECT COUNT(DISTINCT v.person_id) FROM visit v JOIN dx d ON v.code = d.code")
        assert distinct is not None and len(distinct[0]) == 3 and len(set(distinct[0])) == 3 and distinct[1] == 1
    finally:
        engine.close()


def test_small_grid_through_the_release(tmp_path: Path) -> None:
    w = demo_workload(tmp_path, patients=200)
    w.queries = [q for q in w.queries if q[0] in ("A warfarin/Cardiology", "visits per patient sex F")]
    rows: dict[str, dict[str, Any]] = {}
    run_workload(w, 1, 0, rows)
    assert set(rows) == {"A warfarin/Cardiology", "visits per patient sex F"}
    for name, row in rows.items():
        assert row["true"] == w.truth[name] > 0
        for column in COLUMNS:
            for eps in ("0.5", "1", "2"):
                assert len(row[column][eps]["relative_errors"]) == 1, (name, column, eps, row[column][eps])
    visits = rows["visits per patient sex F"]
    assert visits["tuple_rs"]["1"]["mechanisms"] == ["smooth_laplace"]
    assert visits["person_r2t"]["1"]["mechanisms"] == ["r2t"]  # no copy charged: R2T
    assert visits["person_auto"]["1"]["mechanisms"][0] in ("truncated_laplace", "r2t")
    assert rows["A warfarin/Cardiology"]["person_auto"]["1"]["mechanisms"] == ["truncated_laplace"]  # distinct persons


def test_summary_splits_the_demo_into_distinct_patients_and_row_counts() -> None:
    assert is_distinct("SELECT COUNT( DISTINCT v.pat_id) FROM Visit v") and not is_distinct("SELECT COUNT(*) FROM Visit")
    cell = {"1": {"relative_errors": [0.5], "absolute_errors": [50]}}
    rows_cell = {"1": {"relative_errors": [0.1], "absolute_errors": [10]}}
    demo = {"a": {"true": 100, "distinct": True, "tuple_rs": cell}, "b": {"true": 100, "distinct": False, "tuple_rs": rows_cell}}
    summary = summarize(demo, {})
    assert summary["demo, distinct patients (true >= 100)"]["1 tuple_rs"]["median"] == 0.5
    assert summary["demo, row counts (true >= 100)"]["1 tuple_rs"]["median"] == 0.1
    assert summary["demo (true >= 100)"]["1 tuple_rs"]["n"] == 2
    assert "spider joins (all)" not in summary
