"""Property tests: LS_hat^(0) bounds brute-force local sensitivity; RS equals a brute-force envelope."""

from __future__ import annotations

import math
from itertools import combinations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pimento.engines.duckdb_engine import DuckDBEngine
from pimento.sensitivity import residual_sensitivity
from pimento.sql.ir import Attribute, Count, CountQuery, JoinCondition, Relation, Selection

from ._brute import local_sensitivity, rs_brute, t_e

SHAPES = {
    "chain2": {"R1": ["a"], "R2": ["a", "b"]},
    "chain3": {"R1": ["a"], "R2": ["a", "b"], "R3": ["b"]},
    "chain4": {"R1": ["a"], "R2": ["a", "b"], "R3": ["b", "c"], "R4": ["c"]},
    "star": {"F": ["a", "b", "c"], "D1": ["a"], "D2": ["b"], "D3": ["c"]},
    "triangle": {"R1": ["a", "b"], "R2": ["b", "c"], "R3": ["c", "a"]},
    "shared": {"R1": ["a"], "R2": ["a"], "R3": ["a", "b"]},  # one class with three members
}
VALUE = st.one_of(st.integers(0, 2), st.none())


def build(schema, data):
    engine = DuckDBEngine(":memory:", read_only=False)
    for name, variables in schema.items():
        cols = [*variables, "x"]
        engine.execute(f'CREATE TABLE "{name}" ({", ".join(c + " INTEGER" for c in cols)})')
        for row in data[name]:
            engine.execute(f'INSERT INTO "{name}" VALUES ({", ".join("?" for _ in cols)})', list(row))
    return engine


def make_query(schema, selections, count_col, distinct):
    names = list(schema)
    joins = []
    for a, b in combinations(names, 2):
        for v in set(schema[a]) & set(schema[b]):
            joins.append(JoinCondition(Attribute(a, v), Attribute(b, v)))
    sels = tuple(Selection(n, f"{n}.x >= 1") for n in selections)
    count = Count() if count_col is None else Count(Attribute(count_col, "x"), distinct)
    return CountQuery(tuple(Relation(n, n) for n in names), tuple(joins), sels, count)


@st.composite
def instances(draw, shapes=tuple(SHAPES)):
    shape = draw(st.sampled_from(shapes))
    schema = SHAPES[shape]
    data = {
        name: draw(st.lists(st.tuples(*[VALUE] * (len(v) + 1)), min_size=0, max_size=4 if len(schema) < 4 else 3))
        for name, v in schema.items()
    }
    private = draw(st.lists(st.sampled_from(list(schema)), unique=True, min_size=1, max_size=len(schema)))
    selections = draw(st.lists(st.sampled_from(list(schema)), unique=True, max_size=1))
    count_col = draw(st.one_of(st.none(), st.sampled_from(list(schema))))
    distinct = draw(st.booleans()) if count_col is not None else False
    return shape, schema, data, sorted(private), selections, count_col, distinct


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.sampled_from([0.2, 0.5, 1.0]))
def test_rs_equals_brute_force_and_bounds_local_sensitivity(instance, beta):
    _shape, schema, data, private, selections, count_col, distinct = instance
    engine = build(schema, data)
    query = make_query(schema, selections, count_col, distinct)
    res = residual_sensitivity(engine, query, None, beta, private=private)
    predicates = {n: (lambda x: x is not None and x >= 1) for n in selections}
    names = list(schema)
    te = {}
    for size in range(len(names)):
        for combo in combinations(names, size):
            te[frozenset(combo)] = t_e(schema, data, set(combo), predicates, count_col)
    for key, value in res.te.items():
        subset = frozenset() if key == "{}" else frozenset(key.split(","))
        assert value == te[subset], key
    expected = rs_brute(names, private, te, beta)
    assert float(res.rs) >= expected * (1 - 1e-12)
    assert float(res.rs) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert res.rs_float >= float(res.rs)
    ls = local_sensitivity(schema, data, private, predicates, count_col, distinct, [0, 1, 2, 3, None])
    assert ls <= res.ls
    assert sum(res.shapley.values()) == pytest.approx(float(res.rs), rel=1e-9, abs=1e-12)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(shapes=("chain3", "star", "triangle")), st.data())
def test_rs_is_smooth_across_neighbours(instance, data_strategy):
    """RS(I) <= e^beta RS(I') for a random neighbour I' (one private tuple added or removed)."""
    _shape, schema, data, private, selections, count_col, distinct = instance
    beta = 0.5
    query = make_query(schema, selections, count_col, distinct)
    name = data_strategy.draw(st.sampled_from(private))
    rows = data[name]
    if rows and data_strategy.draw(st.booleans()):
        idx = data_strategy.draw(st.integers(0, len(rows) - 1))
        neighbour = {**data, name: rows[:idx] + rows[idx + 1 :]}
    else:
        row = data_strategy.draw(st.tuples(*[VALUE] * (len(schema[name]) + 1)))
        neighbour = {**data, name: [*rows, row]}
    rs1 = residual_sensitivity(build(schema, data), query, None, beta, private=private).rs
    rs2 = residual_sensitivity(build(schema, neighbour), query, None, beta, private=private).rs
    assert float(rs1) <= math.exp(beta) * float(rs2) * (1 + 1e-12)
    assert float(rs2) <= math.exp(beta) * float(rs1) * (1 + 1e-12)


# Keys declared in the database (enforced by DuckDB) and read from its catalog: the plan skips
# GROUP BYs on keys and picks roots by them; T_E must not change. (relation -> key columns)
KEYED = {
    "chain3": {"R1": ("a",), "R2": ("b",)},
    "chain4": {"R1": ("a",), "R2": ("a", "b"), "R4": ("c",)},
    "star": {"D1": ("a",), "D2": ("b",), "F": ("a", "b", "c")},
    "triangle": {"R1": ("a", "b"), "R3": ("c",)},
    "shared": {"R1": ("a",), "R3": ("x",)},  # a key with a non-join column cannot be used
}


def build_keyed(schema, data, keys, unique_instead=False):
    engine = DuckDBEngine(":memory:", read_only=False)
    kept = {}
    for name, variables in schema.items():
        cols = [*variables, "x"]
        key = keys.get(name)
        rows = data[name]
        if key:
            positions = [cols.index(c) for c in key]
            seen, rows = set(), []
            for row in data[name]:
                if unique_instead:
                    k = tuple(row[p] for p in positions)
                    if None not in k and k in seen:
                        continue
                else:
                    row = tuple(0 if (i in positions and v is None) else v for i, v in enumerate(row))
                    k = tuple(row[p] for p in positions)
                    if k in seen:
                        continue
                seen.add(k)
                rows.append(row)
        constraint = ""
        if key:
            constraint = f", {'UNIQUE' if unique_instead else 'PRIMARY KEY'} ({', '.join(key)})"
        engine.execute(f'CREATE TABLE "{name}" ({", ".join(c + " INTEGER" for c in cols)}{constraint})')
        for row in rows:
            engine.execute(f'INSERT INTO "{name}" VALUES ({", ".join("?" for _ in cols)})', list(row))
        kept[name] = rows
    return engine, kept


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(shapes=tuple(KEYED)), st.sampled_from([0.2, 1.0]), st.booleans())
def test_keys_from_the_catalog_do_not_change_t_e(instance, beta, unique_instead):
    shape, schema, data, private, selections, count_col, distinct = instance
    engine, kept = build_keyed(schema, data, KEYED[shape], unique_instead)
    catalog = engine.introspect()
    assert any(catalog.table(n).is_key(k) for n, k in KEYED[shape].items())
    query = make_query(schema, selections, count_col, distinct)
    res = residual_sensitivity(engine, query, catalog, beta, private=private)
    plain = residual_sensitivity(engine, query, None, beta, private=private)
    predicates = {n: (lambda x: x is not None and x >= 1) for n in selections}
    for key, value in res.te.items():
        subset = frozenset() if key == "{}" else frozenset(key.split(","))
        assert value == t_e(schema, kept, set(subset), predicates, count_col), key
    assert res.te == plain.te
    assert res.rs == plain.rs


def test_keys_skip_group_by_only_where_a_key_determines_the_group():
    """chain3 with R2 keyed on b: the residual query {R2, R3} grouped by a still needs its GROUP BY."""
    schema = SHAPES["chain3"]
    data = {"R1": [(0, 1), (1, 1)], "R2": [(0, 0, 1), (0, 1, 1), (1, 2, 1)], "R3": [(0, 1), (1, 1), (1, 2), (2, 1)]}
    engine, kept = build_keyed(schema, data, {"R1": ("a",), "R2": ("b",)})
    query = make_query(schema, [], None, False)
    res = residual_sensitivity(engine, query, engine.introspect(), 0.5)
    assert res.te["R2,R3"] == 3  # a = 0: (b=0, one R3 row) + (b=1, two R3 rows)
    assert res.te["R1,R2"] == 1  # grouped by b, a key of R2, and R1 is keyed on a
    assert res.te["R3"] == 2
    plain = residual_sensitivity(engine, query, None, 0.5)
    assert res.te == plain.te
    # the keyed plan has fewer GROUP BYs than the plain one
    assert res.sql[0].count("GROUP BY") < plain.sql[0].count("GROUP BY")
