"""T_E on SQLite and PostgreSQL equals T_E on DuckDB (same data, same plan, other dialects).

PostgreSQL needs ``PIMENTO_PG_DSN`` (a superuser DSN to a throwaway server; a database is
created and dropped beside it) and skips without it, as tests/unit/engines/test_postgres.py does.
"""

from __future__ import annotations

import random
from itertools import combinations

import pytest
from pg_support import fresh_engine

from pimento.engines.duckdb_engine import DuckDBEngine
from pimento.engines.sqlite_engine import SQLiteEngine
from pimento.errors import EngineError, UnsupportedQuery
from pimento.sensitivity import compute_te, needed_subsets, residual_sensitivity
from pimento.sql.ir import Attribute, Count, CountQuery, JoinCondition, Relation, Selection

# relation -> (join columns, key columns or None)
SCHEMAS = {
    "chain4": {"R1": (["a"], ("a",)), "R2": (["a", "b"], None), "R3": (["b", "c"], ("b", "c")), "R4": (["c"], None)},
    "star": {"F": (["a", "b", "c"], None), "D1": (["a"], ("a",)), "D2": (["b"], ("b",)), "D3": (["c"], None)},
    "triangle": {"R1": (["a", "b"], None), "R2": (["b", "c"], ("b",)), "R3": (["c", "a"], None), "R4": (["a"], None)},
}


def rows_for(schema, seed):
    rnd = random.Random(seed)
    out = {}
    for name, (variables, key) in schema.items():
        cols = [*variables, "x"]
        rows, seen = [], set()
        for _ in range(rnd.randint(0, 12)):
            row = [rnd.choice([0, 1, 2, 3, None]) if c != "x" else rnd.randint(0, 3) for c in cols]
            if key:
                row = [0 if (c in key and v is None) else v for c, v in zip(cols, row, strict=True)]
                k = tuple(row[cols.index(c)] for c in key)
                if k in seen:
                    continue
                seen.add(k)
            rows.append(row)
        out[name] = rows
    return out


def create_tables(execute, schema, data, integer="INTEGER"):
    for name, (variables, key) in schema.items():
        cols = [*variables, "x"]
        pk = f", PRIMARY KEY ({', '.join(key)})" if key else ""
        execute(f'CREATE TABLE "{name}" ({", ".join(f"{c} {integer}" for c in cols)}{pk})')
        for row in data[name]:
            values = ", ".join("NULL" if v is None else str(v) for v in row)
            execute(f'INSERT INTO "{name}" VALUES ({values})')


def query_for(schema, selection: bool, count_col: str | None) -> CountQuery:
    names = list(schema)
    joins = [
        JoinCondition(Attribute(a, v), Attribute(b, v))
        for a, b in combinations(names, 2)
        for v in set(schema[a][0]) & set(schema[b][0])
    ]
    sels = (Selection(names[-1], f"{names[-1]}.x >= 1"),) if selection else ()
    count = Count() if count_col is None else Count(Attribute(count_col, "x"))
    return CountQuery(tuple(Relation(n, n) for n in names), tuple(joins), sels, count)


def all_te(engine, query, catalog):
    subsets = needed_subsets(query, query.aliases, attribution=True)
    return compute_te(engine, query, catalog, subsets)


CASES = [(shape, seed, sel) for shape in SCHEMAS for seed in (0, 1) for sel in (False, True)]


@pytest.mark.parametrize(("shape", "seed", "selection"), CASES)
def test_sqlite_t_e_equals_duckdb(tmp_path, shape, seed, selection):
    schema = SCHEMAS[shape]
    data = rows_for(schema, seed)
    duck = DuckDBEngine(":memory:", read_only=False)
    create_tables(duck.execute, schema, data)
    path = tmp_path / "db.sqlite"
    lite = SQLiteEngine(str(path), read_only=False)
    create_tables(lite.execute, schema, data)
    query = query_for(schema, selection, list(schema)[0] if seed else None)
    expected = all_te(duck, query, None)
    assert expected.values  # the test compares something
    for engine in (lite,):
        for catalog in (None, engine.introspect()):
            got = all_te(engine, query, catalog)
            assert got.values == expected.values, (engine.dialect, catalog is not None)
    assert all_te(duck, query, duck.introspect()).values == expected.values
    # the whole RS agrees too
    assert residual_sensitivity(lite, query, lite.introspect(), 0.5).rs == residual_sensitivity(duck, query, None, 0.5).rs
    lite.close()
    duck.close()


def test_sqlite_refuses_counts_past_64_bits(tmp_path):
    """SQLite turns an overflowing integer product into REAL (or raises in SUM): never a wrong int."""
    path = tmp_path / "big.sqlite"
    lite = SQLiteEngine(str(path), read_only=False)
    names = [f"S{i}" for i in range(5)]
    for name in names:
        lite.execute(f"CREATE TABLE {name} (a INTEGER, x INTEGER)")
        lite.execute(
            f"INSERT INTO {name} WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < 65535) SELECT 0, i FROM r"
        )
    joins = tuple(JoinCondition(Attribute(names[0], "a"), Attribute(n, "a")) for n in names[1:])
    query = CountQuery(tuple(Relation(n, n) for n in names), joins)
    small = compute_te(lite, query, None, [frozenset(names[:2])])
    assert small.values[frozenset(names[:2])] == 2**32  # past 2^31, exact
    with pytest.raises((EngineError, UnsupportedQuery)):
        compute_te(lite, query, None, [frozenset(names[:4])])  # 2^64: not representable
    lite.close()


# --------------------------------------------------------------------------- PostgreSQL
@pytest.fixture(scope="module")
def pg_engine():
    with fresh_engine("pimento_rs") as engine:
        yield engine


@pytest.mark.postgres
@pytest.mark.parametrize(("shape", "seed", "selection"), CASES)
def test_postgres_t_e_equals_duckdb(pg_engine, shape, seed, selection):
    schema = SCHEMAS[shape]
    data = rows_for(schema, seed)
    for name in schema:
        pg_engine.execute(f'DROP TABLE IF EXISTS "{name}"')
    create_tables(pg_engine.execute, schema, data)
    duck = DuckDBEngine(":memory:", read_only=False)
    create_tables(duck.execute, schema, data)
    query = query_for(schema, selection, list(schema)[0] if seed else None)
    expected = all_te(duck, query, None)
    for catalog in (None, pg_engine.introspect()):
        assert all_te(pg_engine, query, catalog).values == expected.values, catalog is not None
    duck.close()


@pytest.mark.postgres
def test_postgres_counts_past_64_bits_are_exact(pg_engine):
    """BIGINT overflows raise on PostgreSQL; the retry with NUMERIC gives the exact 2^64."""
    names = [f"S{i}" for i in range(5)]
    for name in names:
        pg_engine.execute(f'DROP TABLE IF EXISTS "{name}"')
        pg_engine.execute(f'CREATE TABLE "{name}" AS SELECT 0 AS a, g AS x FROM generate_series(0, 65535) AS g')
    joins = tuple(JoinCondition(Attribute(names[0], "a"), Attribute(n, "a")) for n in names[1:])
    query = CountQuery(tuple(Relation(n, n) for n in names), joins)
    counts = compute_te(pg_engine, query, None, [frozenset(names[:4])])
    assert counts.values[frozenset(names[:4])] == 2**64
    assert counts.statements == 2
