"""Column types: DATE columns holding integers or text, TEXT columns holding numbers (DP type test)."""

from __future__ import annotations

import math
import sqlite3
import sys
from fractions import Fraction
from pathlib import Path

import duckdb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pimento.engines import open_engine
from pimento.synth import synthesize
from pimento.synth._budget import eps_from_rho
from pimento.synth._budget import SHARE_CAPS, SHARE_LINKS, SHARE_SELECT, SHARE_TIES, SHARE_TYPES
from pimento.synth._encode import ColumnData
from pimento.synth._types import DATE, FRAC, INT, OTHER, TYPE_SENSITIVITY, classes_for, coerce, decide_family, value_classes

sys.path.insert(0, str(Path(__file__).parent))
from _checks import violations  # noqa: E402

N = 1500


def _rows(n: int = N) -> list[tuple]:
    rows = []
    for i in range(n):
        hp = "null" if i % 50 == 0 else str(60 + 10 * ((i * 37) % 18))  # numbers as text, 2% 'null' strings
        born = 19600101 + (i % 40) * 10000 + (i % 12) * 100 + 1  # a DATE column of integers
        note = ["unknown", "n/a", "soon", "later"][i % 4]  # a DATE column of text that is no date
        seen = f"20{10 + i % 10}-0{1 + i % 9}-1{i % 10}"  # a DATE column of ISO dates
        rows.append((i, f"name{i % 7}x", hp, born, note, seen, i % 3))
    return rows


def _sqlite(path: Path, n: int = N) -> Path:
    con = sqlite3.connect(path)
    con.execute(
        "CREATE TABLE car (id INTEGER PRIMARY KEY, name TEXT NOT NULL, hp TEXT, born DATE, note DATE NOT NULL, seen DATE, k INT)"
    )
    con.execute("CREATE TABLE trip (tid INTEGER PRIMARY KEY, car INTEGER NOT NULL REFERENCES car(id), day DATE, km TEXT)")
    con.executemany("INSERT INTO car VALUES (?, ?, ?, ?, ?, ?, ?)", _rows(n))
    con.executemany(
        "INSERT INTO trip VALUES (?, ?, ?, ?)", [(j, j % n, 20200101 + j % 28, f"{(j * 7) % 300}.5") for j in range(2 * n)]
    )
    con.commit()
    con.close()
    return path


@pytest.fixture(scope="module")
def sqlite_out(tmp_path_factory):
    folder = tmp_path_factory.mktemp("types")
    src = _sqlite(folder / "cars.sqlite")
    engine = open_engine(str(src))
    catalog = engine.introspect()
    out = folder / "syn.duckdb"
    result = synthesize(engine, catalog, out, "4", "1e-6", root="car", seed=1, _noise_seed=7)
    engine.close()
    yield result, catalog, out
    result.engine.close()


@pytest.mark.slow
def test_date_columns_of_integers_and_text_do_not_crash(sqlite_out):
    result, catalog, out = sqlite_out
    types = result.details["column_types"]
    assert types["car.born"] == "integer"  # DATE holding 19600101-style integers: modelled as integers
    assert types["car.note"] == "text"  # DATE holding words: modelled (and written) as text
    assert types["trip.day"] == "integer"
    assert "car.seen" not in types  # ISO dates stay dates
    con = duckdb.connect(str(out), read_only=True)
    try:
        kinds = dict(con.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'car'").fetchall())
        assert kinds["born"] == "BIGINT" and kinds["note"] == "VARCHAR" and kinds["seen"] == "DATE"
        born = [r[0] for r in con.execute("SELECT born FROM car WHERE born IS NOT NULL").fetchall()]
        assert born and all(19_000_000 <= b < 21_000_000 for b in born)
        assert con.execute("SELECT count(*) FROM car WHERE note IS NULL").fetchone()[0] == 0  # NOT NULL kept
    finally:
        con.close()
    assert violations(str(out), catalog) == []


@pytest.mark.slow
def test_text_column_of_numbers_becomes_numeric(sqlite_out):
    result, catalog, out = sqlite_out
    types = result.details["column_types"]
    assert types["car.hp"] == "integer"
    assert types["trip.km"] == "real"
    assert "car.name" not in types  # words stay text
    con = duckdb.connect(str(out), read_only=True)
    try:
        # A comparison with a number runs on the copy (the source DDL was generated: a numeric type).
        n = con.execute("SELECT count(*) FROM car WHERE hp > 150").fetchone()[0]
        total = con.execute("SELECT count(hp) FROM car").fetchone()[0]
        assert 0 < n < total
        assert con.execute("SELECT count(*) FROM trip WHERE km > 100.5").fetchone()[0] > 0
        assert con.execute("SELECT count(*) FROM car WHERE name = 'name1x'").fetchone()[0] >= 0
    finally:
        con.close()


@pytest.mark.slow
def test_type_tests_are_charged_and_the_total_never_overspends(sqlite_out):
    result, _, _ = sqlite_out
    spends = result.details["spends"]
    tests = [s for s in spends if "type of" in s[0]]
    assert {s[0].split("type of ")[1] for s in tests} == {"car.name", "car.hp", "car.born", "car.note", "car.seen", "trip.day", "trip.km"}
    budget = result.details["budget"]
    by_scope: dict[str, float] = {}
    for what, rho, _ in spends:
        scope = what.split("]")[0]
        by_scope[scope] = by_scope.get(scope, 0.0) + rho
    for rho in by_scope.values():
        assert rho <= budget["rho_total"] * (1 + 1e-9)
        assert eps_from_rho(rho, budget["delta_conversion"]) <= float(Fraction(budget["epsilon"])) + 1e-12
    # The type tests took their share out of the models' share, not on top of it.
    assert math.isclose(sum(s[1] for s in tests), budget["rho_total"] * SHARE_TYPES, rel_tol=1e-9)
    assert SHARE_CAPS + SHARE_SELECT + SHARE_TIES + SHARE_LINKS + SHARE_TYPES < 0.6


def test_duckdb_source_keeps_its_ddl_and_gets_numeric_strings(tmp_path):
    src = tmp_path / "src.duckdb"
    con = duckdb.connect(str(src))
    con.execute("CREATE TABLE P (id INTEGER PRIMARY KEY, y VARCHAR, name VARCHAR)")
    con.execute("INSERT INTO P SELECT i, CAST(1990 + i % 30 AS VARCHAR), 'n' || (i % 5) || 'x' FROM range(1500) t(i)")
    con.close()
    engine = open_engine(str(src))
    result = synthesize(engine, engine.introspect(), tmp_path / "o.duckdb", "4", "1e-6", root="P", seed=2, _noise_seed=3)
    engine.close()
    assert result.details["column_types"] == {"P.y": "integer"}
    rows = result.engine.execute("SELECT y FROM P WHERE y IS NOT NULL").rows
    kind = result.engine.execute("SELECT data_type FROM information_schema.columns WHERE table_name = 'P' AND column_name = 'y'").rows
    result.engine.close()
    assert kind[0][0] == "VARCHAR"
    assert rows and all(r[0].isdigit() and 1990 <= int(r[0]) < 2020 for r in rows)


def test_few_units_keep_the_declared_type(tmp_path):
    # 8 units: far below the noise, the test is inconclusive and the declared types stay
    # (DATE of integers: unparseable values are NULL when modelling; nothing crashes).
    src = _sqlite(tmp_path / "small.sqlite", n=8)
    engine = open_engine(str(src))
    catalog = engine.introspect()
    result = synthesize(engine, catalog, tmp_path / "o.duckdb", "1.6", "1e-6", root="car", seed=1, _noise_seed=5)
    engine.close()
    assert result.details["column_types"] == {}
    result.engine.close()
    assert violations(str(tmp_path / "o.duckdb"), catalog) == []


# ----------------------------------------------------------------------------- the mechanism


def test_value_classes():
    vals = np.array(
        [1, 2.5, "3", "-4.0", "0.5", " 4", "021", "1e3", "nan", "inf", "x", "1980-01-02", "19800102", True, None, float("nan")],
        dtype=object,
    )
    assert value_classes(vals, "text").tolist() == [
        INT, FRAC, INT, INT, FRAC, OTHER, OTHER, OTHER, OTHER, OTHER, OTHER, OTHER, INT, OTHER, OTHER, OTHER,
    ]
    assert value_classes(vals, "date").tolist()[11] == DATE
    assert classes_for("text") == [INT, FRAC, OTHER] and classes_for("timestamp") == [INT, FRAC, DATE, OTHER]


def test_coerce_turns_misfits_into_null():
    col = ColumnData("text", np.array(["150", "null", None, "7"], dtype=object), np.array([False, False, True, False]))
    c = coerce(col, "integer")
    assert c.null.tolist() == [False, True, True, False] and c.values[[0, 3]].tolist() == [150, 7]
    d = coerce(ColumnData("date", np.array([19800101, "1980-01-02", "x"], dtype=object), np.zeros(3, dtype=bool)), "date")
    assert d.null.tolist() == [True, False, True] and str(d.values[1])[:10] == "1980-01-02"


def _hist(values: list, declared: str) -> np.ndarray:
    classes = classes_for(declared)
    cls = value_classes(np.array(values, dtype=object), declared)
    return np.array([float(np.sum(cls == k)) for k in classes])


one_value = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=True), st.text(max_size=12), st.none())


@settings(max_examples=300, deadline=None)
@given(others=st.lists(one_value, max_size=40), before=one_value, after=one_value, declared=st.sampled_from(["text", "date"]))
def test_replacing_one_unit_moves_the_histogram_by_at_most_the_sensitivity(others, before, after, declared):
    # One kept value per unit; None stands for a unit without a value (it contributes nothing).
    others = [v for v in others if v is not None]
    a = _hist(others + ([before] if before is not None else []), declared)
    b = _hist(others + ([after] if after is not None else []), declared)
    assert np.linalg.norm(a - b) <= TYPE_SENSITIVITY + 1e-12


@pytest.mark.parametrize("declared", ["text", "date"])
def test_inconclusive_tests_rarely_leave_the_declared_type(declared):
    # No data at all, pure noise: the declared family must be kept in (nearly) every draw.
    rng = np.random.default_rng(0)
    sigma = 50.0
    classes = classes_for(declared)
    changed = 0
    for _ in range(20000):
        noisy = dict(zip(classes, rng.normal(0, sigma, len(classes)).tolist()))
        changed += decide_family(declared, noisy, sigma) != declared
    assert changed / 20000 < 0.002  # the z-test at 3.5 sigma: about 2e-4 per class set


def test_a_clear_majority_wins():
    sigma = 10.0
    assert decide_family("text", {INT: 500, FRAC: 3, OTHER: 20}, sigma) == "integer"
    assert decide_family("text", {INT: 10, FRAC: 500, OTHER: 20}, sigma) == "real"
    assert decide_family("text", {INT: 300, FRAC: 0, OTHER: 200}, sigma) == "text"  # 40% words: stays text
    assert decide_family("date", {INT: 500, FRAC: 0, DATE: 0, OTHER: 0}, sigma) == "integer"
    assert decide_family("date", {INT: 0, FRAC: 0, DATE: 0, OTHER: 500}, sigma) == "text"
    assert decide_family("date", {INT: 0, FRAC: 0, DATE: 500, OTHER: 5}, sigma) == "date"
    assert decide_family("text", {INT: 30, FRAC: 0, OTHER: 0}, sigma) == "text"  # 30 < 3.5 sigma sqrt 3
