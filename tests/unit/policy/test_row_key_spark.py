"""The row key of a relation with a two-column key (``Edge(src, dst)``) on Spark.

The key columns are escaped with backslash literals (``'\\'``). DuckDB's form of that literal
does not end the string in Spark SQL, so the compiler's probe of an Edge location failed there
with a tokenizer error (``Missing '``). The literals are now written for the dialect: the
policy compiles on Spark and every Edge cell has the same row key as on DuckDB.
"""

from __future__ import annotations

import random

from policy_testkit import COLUMNS, DDL, ORDER, policy_dict, random_rows
from spark_support import SPARK_MARKS

from pimento.engines.database import load_database
from pimento.engines.duckdb_engine import DuckDBEngine
from pimento.policy import compile_policy
from pimento.policy.model import policy_from_dict
from pimento.policy.views_sql import location_view_sql

pytestmark = SPARK_MARKS


def test_two_column_row_keys_on_spark_equal_duckdb(tmp_path) -> None:
    from pimento.engines.spark_engine import write_spark_deployment

    rows = random_rows(random.Random(3))
    assert rows["Edge"], "the random rows must have edges"
    duck_path = tmp_path / "duck" / "tiny.duckdb"
    duck_path.parent.mkdir()
    writer = DuckDBEngine(str(duck_path), read_only=False)
    for rel in ORDER:
        writer.execute(DDL[rel])
        for r in rows.get(rel, []):
            writer.execute(f'INSERT INTO "{rel}" VALUES ({", ".join("?" for _ in COLUMNS[rel])})',
                           [r[c] for c in COLUMNS[rel]])
    writer.close()
    spark_path = write_spark_deployment(duck_path, tmp_path / "spark")
    policy = policy_from_dict(policy_dict([{"id": "N1", "sign": "permit", "data": ["d_edge"], "purpose": "any"}]))
    keys = []
    for path in (duck_path, spark_path):
        db = load_database(path)
        try:
            compiled = compile_policy(policy, db.catalog, db.engine)
            views = [location_view_sql(loc) for loc in compiled.locations.values() if loc.relation == "Edge"]
            assert views
            keys.append(sorted(tuple(r) for v in views for r in db.engine.execute(
                f"SELECT relation, row_key, attribute FROM ({v}) AS x").rows))
        finally:
            db.close()
    assert keys[0] == keys[1]
    assert {k for _, k, _ in keys[0]} == {f"{e['src']}|{e['dst']}" for e in rows["Edge"]}
