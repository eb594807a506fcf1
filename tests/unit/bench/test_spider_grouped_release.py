"""benchmarks/spider_grouped_release.py: the error and recall arithmetic, the SQLite -> DuckDB copy, one tiny release."""

from __future__ import annotations

import math
import sqlite3
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from benchmarks.spider_grouped_release import (
    copy_to_duckdb,
    duckdb_type,
    group_key,
    measure_question,
    prepare,
    question_error,
    recall_by_size,
    relative_error,
    size_bucket,
    summarize,
)


def test_relative_error_divides_by_the_true_value_but_never_below_one() -> None:
    assert relative_error(12, 10) == pytest.approx(0.2)
    assert relative_error(7, 10) == pytest.approx(0.3)
    assert relative_error(1.5, 0.5) == pytest.approx(1.0)  # |1.5 - 0.5| / max(0.5, 1)
    assert relative_error(-2, 0) == pytest.approx(2.0)
    assert relative_error(-12, -10) == pytest.approx(0.2)  # a negative sum: its magnitude


def test_question_error_pools_groups_and_runs() -> None:
    true = {("a",): 10.0, ("b",): 0.5}
    rows = {("a",): 10, ("b",): 1}
    runs = [{("a",): 12.0, ("b",): 1.5}, {("a",): 9.0}]  # the second run does not show b
    got = question_error(true, runs, weights=rows)
    assert got["median"] == pytest.approx(0.2)  # errors 0.2, 1.0, 0.1
    assert got["median_large"] == pytest.approx(0.15)  # only a (10 rows): 0.2, 0.1
    assert got["no_value"] == 0
    as_zero = question_error(true, runs, weights=rows, missing_as_zero=True)
    assert as_zero["median"] == pytest.approx(0.35)  # 0.2, 1.0, 0.1 and b answered 0: 0.5
    assert as_zero["cells"] == 4


def test_a_group_shown_without_a_value_is_never_read_as_zero() -> None:
    runs: list[dict[tuple[str, ...], float | None]] = [{("x",): None}, {("x",): 5.0}, {}]
    got = question_error({("x",): 4.0}, runs, missing_as_zero=True)
    assert got["no_value"] == 1
    assert got["median"] == pytest.approx(0.625)  # 0.25 and, not shown at all, 4 / 4 = 1.0


def test_question_error_counts_shown_groups_without_a_value_apart() -> None:
    got = question_error({("x",): 4.0}, [{("x",): None}, {("x",): 5.0}])
    assert got["no_value"] == 1
    assert got["median"] == pytest.approx(0.25)
    assert got["median_large"] is None  # 4 rows < 10


def test_size_buckets_and_recall_by_size() -> None:
    assert [size_bucket(n) for n in (1, 9, 10, 99, 100, 5000)] == ["1-9", "1-9", "10-99", "10-99", ">=100", ">=100"]
    sizes = {("a",): 5, ("b",): 50, ("c",): 500}
    shown = [[("a",), ("b",), ("zz",)], [("c",)]]  # a key not in the gold is ignored
    assert recall_by_size(sizes, shown) == {"1-9": [1, 2], "10-99": [1, 2], ">=100": [1, 2], "all": [3, 6]}


def test_group_keys_compare_numbers_by_value() -> None:
    assert group_key((3, "x")) == group_key((3.0, "x")) == group_key((Decimal("3"), "x"))
    assert group_key(("3",)) != group_key((3,))


def test_summarize_quantiles_recall_and_refusals() -> None:
    records = [
        {"kind": "count-grouped", "error": {"median": e, "median_large": None, "no_value": 0, "cells": 4}, "join": e > 0.25,
         "rows_median": 3, "recall": {"all": [s, 4], "1-9": [s, 4]}} for e, s in ((0.1, 4), (0.3, 2), (0.2, 0))
    ] + [{"kind": "sum", "refused": "too_many_groups"}, {"kind": "sum", "refused": "too_many_groups", "join": True}]
    s = summarize(records)
    assert (s["questions"], s["answered"], s["refused"]) == (5, 3, 2)
    assert s["refused_by_reason"] == {"too_many_groups": 1, "too_many_groups (join)": 1}
    assert s["joins"] == 2
    assert s["median_rel_error"]["median"] == pytest.approx(0.2)
    assert s["median_rel_error"]["p90"] == pytest.approx(0.3)
    assert s["median_rel_error_large"]["median"] is None
    assert s["median_rel_error_single"]["median"] == pytest.approx(0.1)  # the nearest rank: 0.1 of (0.1, 0.2)
    assert s["median_rel_error_join"] == {"median": 0.3, "p90": 0.3, "questions": 1}
    assert s["cells"] == 12 and s["rows_per_group"]["median"] == 3
    assert s["recall_pooled"]["all"] == {"shown": 6, "groups": 12, "recall": 0.5}
    assert s["recall_per_question"]["mean"] == pytest.approx(0.5)
    assert s["by_kind"] == {"count-grouped": 3, "sum": 2}


def test_summarize_keeps_an_infinite_error_in_the_quantiles() -> None:
    records = [{"kind": "count", "error": {"median": x, "median_large": x, "no_value": 0}} for x in (0.1, 0.2, math.inf)]
    assert summarize(records)["median_rel_error"]["p90"] == math.inf


def _spider(tmp_path: Path) -> Path:
    """A one-database Spider folder: table t (id key, g text group, v number) with 40 + 25 + 3 rows."""
    folder = tmp_path / "spider" / "train" / "database" / "tiny"
    folder.mkdir(parents=True)
    con = sqlite3.connect(folder / "tiny.sqlite")
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, g TEXT, v INTEGER, note TEXT)")
    rows = [(i, "big" if i < 40 else ("mid" if i < 65 else "rare"), i % 7, None if i % 5 else 'a "q",\nline') for i in range(68)]
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    con.execute("CREATE TABLE loose (k INTEGER, x)")  # no key; x mixes integers and text
    con.executemany("INSERT INTO loose VALUES (?, ?)", [(1, 5), (1, "five"), (2, "")])
    con.commit()
    con.close()
    return tmp_path / "spider"


def test_copy_to_duckdb_keeps_values_types_and_nulls(tmp_path: Path) -> None:
    spider = _spider(tmp_path)
    out = tmp_path / "copy.duckdb"
    types = copy_to_duckdb(spider / "train" / "database" / "tiny" / "tiny.sqlite", out)
    assert types == {"t": {"id": "BIGINT", "g": "VARCHAR", "v": "BIGINT", "note": "VARCHAR"},
                     "loose": {"k": "BIGINT", "x": "VARCHAR"}}
    con = duckdb.connect(str(out), read_only=True)
    try:
        assert con.execute("SELECT g, COUNT(*) FROM t GROUP BY g ORDER BY g").fetchall() == [("big", 40), ("mid", 25), ("rare", 3)]
        assert con.execute("SELECT COUNT(*), COUNT(note) FROM t").fetchone() == (68, 14)
        assert con.execute("SELECT DISTINCT note FROM t WHERE note IS NOT NULL").fetchall() == [('a "q",\nline',)]
        assert sorted(con.execute("SELECT x FROM loose").fetchall()) == [("",), ("5",), ("five",)]  # '' is not NULL
    finally:
        con.close()


def test_one_grouped_count_is_released_and_scored(tmp_path: Path) -> None:
    spider = _spider(tmp_path)
    questions = [(0, {"db": "tiny", "question": "How many rows per g?", "gold": "SELECT `g`, COUNT(*) FROM `t` GROUP BY `g`", "kind": "count"}),
                 (1, {"db": "tiny", "question": "Total v?", "gold": "SELECT SUM(`v`) FROM `t`", "kind": "sum"})]
    run = prepare(spider, "tiny", questions, tmp_path / "work")
    try:
        assert "[domains]" in (run.deployments["domains"].folder / "pimento.toml").read_text()
        assert '"t.v" = ["0", "6"]' in (run.deployments["domains"].folder / "pimento.toml").read_text()
        grouped = measure_question(run, run.kept[0], repeats=2, e2e=False, spider=spider, opened={})
        summed = measure_question(run, run.kept[1], repeats=2, e2e=False, spider=spider, opened={})
    finally:
        run.close()
    assert grouped["domains"]["groups"] == 3 and "error" in grouped["domains"]
    recall = grouped["private-keys"]["recall"]
    # 40 and 25 rows are far above the threshold (about 15.6): shown; 3 rows: shown with tiny probability
    assert recall["10-99"] == [4, 4]
    assert recall["1-9"][1] == 2
    assert set(summed) == {"domains"}  # an ungrouped sum is released once: it has no keys
    assert summed["domains"]["error"]["median"] < 1.0  # true sum 201, Laplace scale 6


def test_numeric_text_is_a_number_as_in_sqlite_arithmetic() -> None:
    assert duckdb_type([1, "5", None, "-12"]) == "BIGINT"
    assert duckdb_type([1, "2.5", 3.0]) == "DOUBLE"
    assert duckdb_type(["02134", "5"]) == "VARCHAR"  # a code with a leading zero stays text
    assert duckdb_type(["5", ""]) == "VARCHAR"
    assert duckdb_type([None, None]) == "BIGINT"
