"""The redundancy check's ``equivalent_on_data``, compared by the engine, equals a straightforward
comparison in Python of the views' row sets (brute force on small random contents with NULLs,
duplicates, empty views and views of other widths)."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from pimento.engines.base import open_engine
from pimento.policy.redundancy import _equal_on_data

DOMAIN_A = [None, 0, 1]
DOMAIN_B = [None, "x", "y"]


def _tables(rng: random.Random, count: int) -> list[list[tuple]]:
    tables: list[list[tuple]] = []
    for k in range(count):
        if tables and rng.random() < 0.5:
            # the same set as an earlier table, in another order, with duplicates, or one row changed
            rows = list(rng.choice(tables))
            rows += rng.sample(rows, k=min(len(rows), rng.randint(0, 2)))
            rng.shuffle(rows)
            if rows and rng.random() < 0.3:
                rows[0] = (rng.choice(DOMAIN_A), rng.choice(DOMAIN_B))
        else:
            rows = [(rng.choice(DOMAIN_A), rng.choice(DOMAIN_B)) for _ in range(rng.randint(0, 4))]
        tables.append(rows)
    return tables


def _literal(v: object) -> str:
    return "NULL" if v is None else repr(v) if isinstance(v, str) else str(v)


@pytest.mark.parametrize("engine_name", ["duckdb", "sqlite"])
def test_equal_on_data_matches_python_sets(tmp_path, engine_name: str) -> None:
    rng = random.Random(20261124)
    location = str(tmp_path / f"views.{engine_name}")
    writer = open_engine(location, engine=engine_name, read_only=False)
    compared = equal_pairs = 0
    try:
        for trial in range(25):
            tables = _tables(rng, 6)
            views: dict[str, str] = {}
            for k, rows in enumerate(tables):
                name = f"t{trial}_{k}"
                writer.execute(f"CREATE TABLE {name} (a INTEGER, b VARCHAR)")
                for a, b in rows:
                    writer.execute(f"INSERT INTO {name} VALUES ({_literal(a)}, {_literal(b)})")
                views[f"v{k}"] = f"SELECT a, b FROM {name}"
            # a narrower view (equal to another only when both are empty) and a filtered one
            views["narrow"] = f"SELECT a FROM t{trial}_0"
            views["filtered"] = f"SELECT a, b FROM t{trial}_1 WHERE a IS NOT NULL OR b IS NULL"
            got = _equal_on_data(writer, "role", views, SimpleNamespace(conditions={}))  # type: ignore[arg-type]
            sets = {k: frozenset(writer.execute(v).rows) for k, v in views.items()}
            names = list(views)
            want = [{"kind": "role", "views": [a, b], "rows": len(sets[a])}
                    for i, a in enumerate(names) for b in names[i + 1:] if sets[a] == sets[b]]
            assert got == want, (trial, tables)
            compared += len(names) * (len(names) - 1) // 2
            equal_pairs += len(want)
    finally:
        writer.close()
    # the random contents do produce both outcomes, with NULLs and duplicates in the equal sets
    assert equal_pairs > 10 and compared - equal_pairs > 10
