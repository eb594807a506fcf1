"""Grouped COUNT, SUM and AVG: the AggregateQuery IR, its rendering per dialect, parsing, clipping in the engine."""

from __future__ import annotations

import json
import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest

from pimento.errors import InternalError, UnsupportedQuery
from pimento.sql.ir import AggregateKind, AggregateQuery, Attribute, ClipBounds, Count, CountQuery, Relation
from pimento.sql.parse import parse_aggregate_query, parse_count_query
from pimento.sql.render import describe_aggregate

GOLDEN = json.loads((Path(__file__).parent / "golden" / "aggregate_cases.json").read_text())
DIALECTS = ("duckdb", "sqlite", "postgres", "spark")


def _parsed(case, catalog) -> AggregateQuery:
    query = parse_aggregate_query(case["sql"], catalog)
    if "bounds" in case:
        query = query.with_bounds(ClipBounds(Fraction(case["bounds"][0]), Fraction(case["bounds"][1])))
    return query


@pytest.mark.parametrize("case", GOLDEN, ids=[c["sql"][:50] + (" clipped" if "bounds" in c else "") for c in GOLDEN])
def test_golden_rendering_in_every_dialect(case, small_catalog):
    query = _parsed(case, small_catalog)
    assert {d: query.to_sql(d) for d in DIALECTS} == case["expected"]


@pytest.mark.parametrize("case", [c for c in GOLDEN if "bounds" not in c], ids=lambda c: c["sql"][:50])
def test_rendering_returns_the_same_groups_and_parses_back(case, small_db, small_catalog):
    query = parse_aggregate_query(case["sql"], small_catalog)
    assert sorted(map(repr, small_db.execute(case["sql"]).rows)) == sorted(map(repr, small_db.execute(query.to_sql()).rows))
    for dialect in ("duckdb", "sqlite", "postgres"):
        assert parse_aggregate_query(query.to_sql(dialect), small_catalog, dialect=dialect) == query


def _sqlite():
    con = sqlite3.connect(":memory:")
    con.executescript(
        "CREATE TABLE Patient(pat_id INTEGER PRIMARY KEY, age INTEGER, sex TEXT NOT NULL);"
        "INSERT INTO Patient VALUES (1, 30, 'F'), (2, 45, 'M'), (3, NULL, 'F'), (4, 70, 'M');"
    )
    return con


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_clipping_happens_in_the_engine_and_nulls_are_skipped(engine, small_db, small_catalog):
    """Ages 30, NULL (F) and 45, 70 (M) clipped to [35, 50]: F sums 35 over 1 value, M 45 + 50 over 2."""
    query = parse_aggregate_query("SELECT sex, AVG(age) FROM Patient GROUP BY sex", small_catalog)
    sql = query.with_bounds(ClipBounds(Fraction(35), Fraction(50))).to_sql(engine)
    if engine == "duckdb":
        rows = small_db.execute(sql).rows
    else:
        con = _sqlite()
        try:
            rows = con.execute(sql).fetchall()
        finally:
            con.close()
    assert sorted((r[0], Fraction(r[1]), r[2]) for r in rows) == [("F", 35, 1), ("M", 95, 2)]


def test_a_group_of_nulls_sums_to_zero(small_db, small_catalog):
    query = parse_aggregate_query("SELECT sex, SUM(age) FROM Patient WHERE age IS NULL GROUP BY sex", small_catalog)
    rows = small_db.execute(query.with_bounds(ClipBounds(Fraction(0), Fraction(9))).to_sql()).rows
    assert [tuple(r) for r in rows] == [("F", 0)]


def test_bounds_with_no_finite_decimal_are_refused():
    with pytest.raises(InternalError, match="finite decimal"):
        ClipBounds(Fraction(0), Fraction(1, 3))
    with pytest.raises(InternalError, match="empty"):
        ClipBounds(Fraction(2), Fraction(1))
    assert ClipBounds(Fraction(-7, 2), Fraction(1)).bound == Fraction(7, 2)


def test_the_count_whose_sensitivity_bounds_the_query(small_catalog):
    summed = parse_aggregate_query("SELECT v.diagnosis, SUM(p.age) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id GROUP BY v.diagnosis", small_catalog)
    assert summed.kind is AggregateKind.SUM and summed.body.count == Count()
    assert summed.count_query == summed.body.with_count(Count(Attribute("p", "age")))
    grouped = parse_aggregate_query("SELECT sex, COUNT(DISTINCT age) FROM Patient GROUP BY sex", small_catalog)
    assert grouped.count_query == parse_count_query("SELECT COUNT(DISTINCT age) FROM Patient", small_catalog)


def test_queries_are_values_and_canonical_forms_forget_aliases(small_catalog):
    a = parse_aggregate_query("SELECT p.sex, COUNT(*) FROM Patient p GROUP BY p.sex", small_catalog)
    b = parse_aggregate_query("SELECT q.sex, COUNT(*) FROM Patient q GROUP BY q.sex", small_catalog)
    assert a != b and a.canonical() == b.canonical() and hash(a.canonical()) == hash(b.canonical())


@pytest.mark.parametrize(
    ("sql", "construct", "highlight"),
    [
        ("SELECT sex, MAX(age) FROM Patient GROUP BY sex", "other_aggregate", "MAX(age)"),
        ("SELECT sex, SUM(age + 1) FROM Patient GROUP BY sex", "other_aggregate", "SUM(age + 1)"),
        ("SELECT lower(sex), COUNT(*) FROM Patient GROUP BY lower(sex)", "group_by", "lower(sex)"),
        ("SELECT sex, age, COUNT(*) FROM Patient GROUP BY sex", "group_by", "age"),
        ("SELECT sex, COUNT(*) FROM Patient GROUP BY sex, age", "group_by", "GROUP BY"),
        ("SELECT sex, COUNT(*) FROM Patient", "multiple_outputs", "sex"),
        ("SELECT sex FROM Patient GROUP BY sex", "not_count", "sex"),
        ("SELECT sex, COUNT(*), SUM(age) FROM Patient GROUP BY sex", "multiple_outputs", "SUM(age)"),
        ("SELECT sex, COUNT(*) FROM Patient GROUP BY sex HAVING COUNT(*) > 1", "having", "HAVING"),
        ("SELECT p.sex, COUNT(*) FROM Patient p JOIN Patient q ON p.pat_id = q.pat_id GROUP BY p.sex", "self_join", "Patient q"),
        ("SELECT sex, COUNT(*) FROM Patient WHERE pat_id IN (SELECT pat_id FROM Visit) GROUP BY sex", "subquery", "pat_id IN (SELECT pat_id FROM Visit)"),
    ],
)
def test_outside_the_class_is_refused_with_the_construct_highlighted(sql, construct, highlight, small_catalog):
    with pytest.raises(UnsupportedQuery) as info:
        parse_aggregate_query(sql, small_catalog)
    assert info.value.construct == construct
    assert info.value.highlight is not None and info.value.highlight.text == highlight


def test_the_counting_parser_still_refuses_group_by(small_catalog):
    with pytest.raises(UnsupportedQuery) as info:
        parse_count_query("SELECT sex, COUNT(*) FROM Patient GROUP BY sex", small_catalog)
    assert info.value.construct == "group_by"


def test_invalid_irs_are_internal_errors():
    body = CountQuery((Relation("p", "Patient"),))
    with pytest.raises(InternalError):
        AggregateQuery(body, (Attribute("x", "a"),))
    with pytest.raises(InternalError):
        AggregateQuery(body, (), AggregateKind.SUM)
    with pytest.raises(InternalError):
        AggregateQuery(body, (), AggregateKind.COUNT, Attribute("p", "age"))
    with pytest.raises(InternalError):
        AggregateQuery(body.with_count(Count(Attribute("p", "age"))), (), AggregateKind.SUM, Attribute("p", "age"))


def test_describe_names_groups_aggregate_and_bounds(small_catalog):
    query = parse_aggregate_query("SELECT sex, AVG(age) FROM Patient GROUP BY sex", small_catalog)
    described = describe_aggregate(query.with_bounds(ClipBounds(Fraction(0), Fraction(120))), dialect="sqlite")
    assert described["group_by"] == ["Patient.sex"] and described["aggregate"] == "AVG"
    assert described["column"] == "Patient.age" and described["bounds"] == ["0", "120"]
    assert described["count"] == "COUNT(Patient.age)" and described["sql"].startswith("SELECT Patient.sex, COALESCE(SUM(CASE")
