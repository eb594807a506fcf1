"""Reference vectors, overflow and errors (the public API is pinned in tests/unit/test_exported_members.py)."""

from __future__ import annotations

import json
from decimal import Decimal, localcontext
from fractions import Fraction
from itertools import combinations
from pathlib import Path

import pytest

from pimento.engines.duckdb_engine import DuckDBEngine
from pimento.errors import PrivacyParameterError
from pimento.sensitivity import (
    compute_te,
    maximize_envelope,
    needed_subsets,
    residual_sensitivity,
    rs_from_te,
)
from pimento.sql.ir import Attribute, CountQuery, JoinCondition, Relation

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared"
VECTORS = SHARED / "testvectors" / "rs_reference.json"


def natural_query(relations: dict) -> CountQuery:
    names = list(relations)
    joins = [
        JoinCondition(Attribute(a, c), Attribute(b, c))
        for a, b in combinations(names, 2)
        for c in set(relations[a]["columns"]) & set(relations[b]["columns"])
    ]
    return CountQuery(tuple(Relation(n, n) for n in names), tuple(joins))


def load(relations: dict) -> DuckDBEngine:
    engine = DuckDBEngine(":memory:", read_only=False)
    for name, rel in relations.items():
        engine.execute(f'CREATE TABLE "{name}" ({", ".join(c + " BIGINT" for c in rel["columns"])})')
        if rel["rows"]:
            values = ",".join("(" + ",".join(map(str, row)) + ")" for row in rel["rows"])
            engine.execute(f'INSERT INTO "{name}" VALUES {values}')
    return engine


def cases():
    if not VECTORS.is_file():
        pytest.skip(f"test vectors not found at {VECTORS}")
    return json.loads(VECTORS.read_text())["cases"]


def test_reference_vectors_t_e_and_rs():
    for case in cases():
        engine = load(case["relations"])
        query = natural_query(case["relations"])
        assert engine.execute(query.to_sql()).scalar() == case["count"]
        subsets = [frozenset() if k == "{}" else frozenset(k.split(",")) for k in case["T_E"]]
        counts = compute_te(engine, query, None, subsets)
        assert counts.statements == 1
        for key, expected in case["T_E"].items():
            subset = frozenset() if key == "{}" else frozenset(key.split(","))
            assert counts.values[subset] == expected, (case["name"], key)
        for ref in case["rs"]:
            result = residual_sensitivity(engine, query, None, ref["beta"], private=case["private"])
            assert float(result.rs) == pytest.approx(ref["rs"], abs=1e-6), (case["name"], ref)
            assert result.k_star == ref["k_star"]
            assert sum(result.shapley.values()) == pytest.approx(float(result.rs), rel=1e-12)


def test_counts_past_2_63_stay_exact():
    """Five relations on one join value: T of four of them is (2^16)^4 = 2^64."""
    engine = DuckDBEngine(":memory:", read_only=False)
    names = [f"S{i}" for i in range(5)]
    for name in names:
        engine.execute(f"CREATE TABLE {name} AS SELECT 0 AS a, range AS x FROM range(65536)")
    joins = [JoinCondition(Attribute(names[0], "a"), Attribute(n, "a")) for n in names[1:]]
    query = CountQuery(tuple(Relation(n, n) for n in names), tuple(joins))
    counts = compute_te(engine, query, None, needed_subsets(query, names, attribution=False))
    assert counts.values[frozenset(names[:4])] == 2**64
    assert counts.values[frozenset(names[2:])] == 2**48
    small = compute_te(engine, query, None, [frozenset(names[:2])])
    assert small.values[frozenset(names[:2])] == 2**32  # past 2^31
    result = rs_from_te(query, names, counts, 1.0)
    assert result.ls == 2**64
    assert result.rs >= 2**64


def test_single_relation_count_has_rs_one():
    engine = DuckDBEngine(":memory:", read_only=False)
    engine.execute("CREATE TABLE t AS SELECT range AS a FROM range(10)")
    query = CountQuery((Relation("t", "t"),))
    result = residual_sensitivity(engine, query, None, 0.1)
    assert result.rs == 1 and result.ls == 1 and result.gs == 1


def test_public_only_query_has_rs_zero():
    result = maximize_envelope(["a", "b"], [], {frozenset(): 1}, 0.1)
    assert result.rs == 0 and result.argmax is None


@pytest.mark.parametrize("beta", [0, -1, float("nan"), float("inf")])
def test_non_positive_beta_is_refused(beta):
    with pytest.raises(PrivacyParameterError):
        maximize_envelope(["a"], ["a"], {frozenset(): 1}, beta)


def test_rs_is_rounded_up():
    te = {frozenset(): 1, frozenset({"a"}): 3, frozenset({"b"}): 5}
    env = maximize_envelope(["a", "b"], ["a", "b"], te, 0.3)
    assert isinstance(env.rs, Fraction)
    # the true value e^{-0.3 k} (T + k) at the maximiser, in high precision, is below rs
    with localcontext() as ctx:  # never the global context: other tests' decimal arithmetic would change
        ctx.prec = 80
        k = env.k_star
        true = (Decimal(-0.3) * k).exp() * env.inner
        assert Decimal(env.rs.numerator) / Decimal(env.rs.denominator) >= true
    assert env.rs_float >= float(env.rs)


def test_triangle_uses_the_cyclic_fallback():
    rels = {
        "R1": {"columns": ["a", "b"], "rows": [[0, 0], [0, 1], [1, 1]]},
        "R2": {"columns": ["b", "c"], "rows": [[0, 0], [1, 0], [1, 1]]},
        "R3": {"columns": ["c", "a"], "rows": [[0, 0], [1, 0], [0, 1]]},
        "R4": {"columns": ["a"], "rows": [[0], [1]]},
    }
    engine = load(rels)
    query = natural_query(rels)
    counts = compute_te(engine, query, None, [frozenset({"R1", "R2", "R3"})])
    assert counts.cyclic_components == (frozenset({"R1", "R2", "R3"}),)
    # boundary a: for a = 0: R1(0,b) R2(b,c) R3(c,0): (0,0)(0,0)(0,0); (0,1)(1,0)(0,0); (0,1)(1,1)(1,0) -> 3
    assert counts.values[frozenset({"R1", "R2", "R3"})] == 3
