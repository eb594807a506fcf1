"""T_E and RS on Spark equal T_E and RS on DuckDB: same random data, written to Parquet for Spark.

The data are test_dialects.py's random small instances (NULLs, duplicates, empty relations) over a
chain, a star and a triangle, with and without a selection and a ``COUNT(col)``; the catalog is
either none or DuckDB's (its keys declared, as pimento.toml declares them for Spark).
"""

from __future__ import annotations

import pytest
from spark_support import SPARK_MARKS, write_parquet_folder

from pimento.engines.duckdb_engine import DuckDBEngine
from pimento.sensitivity import compute_te, residual_sensitivity
from pimento.sql.ir import Attribute, CountQuery, JoinCondition, Relation

from .test_dialects import SCHEMAS, all_te, create_tables, query_for, rows_for

pytestmark = SPARK_MARKS


def _statements(schema, data) -> list[str]:
    out: list[str] = []
    create_tables(out.append, schema, data)
    return out


CASES = [("chain4", 0, False), ("chain4", 3, True), ("star", 1, True), ("triangle", 5, True)]


@pytest.mark.parametrize(("shape", "seed", "selection"), CASES)
def test_spark_t_e_and_rs_equal_duckdb(tmp_path, shape, seed, selection):
    from pimento.engines import open_engine

    schema = SCHEMAS[shape]
    data = rows_for(schema, seed)
    statements = _statements(schema, data)
    duck = DuckDBEngine(":memory:", read_only=False)
    for statement in statements:
        duck.execute(statement)
    spark = open_engine(write_parquet_folder(tmp_path / "db", statements))
    try:
        query = query_for(schema, selection, list(schema)[0] if seed % 2 else None)
        expected = all_te(duck, query, None)
        assert expected.values  # the test compares something
        keyed = duck.introspect()
        assert all_te(spark, query, None).values == expected.values
        assert all_te(spark, query, keyed).values == expected.values
        assert residual_sensitivity(spark, query, keyed, 0.5).rs == residual_sensitivity(duck, query, None, 0.5).rs
    finally:
        spark.close()
        duck.close()


def test_spark_counts_past_64_bits_exactly(tmp_path):
    """ANSI Spark raises on a BIGINT overflow; T_E is then recomputed in DECIMAL(38, 0), exactly."""
    from pimento.engines import open_engine

    names = [f"S{i}" for i in range(5)]
    statements = [f"CREATE TABLE {n} AS SELECT 0 AS a, i AS x FROM range(65536) t(i)" for n in names]
    spark = open_engine(write_parquet_folder(tmp_path / "big", statements))
    try:
        joins = tuple(JoinCondition(Attribute(names[0], "a"), Attribute(n, "a")) for n in names[1:])
        query = CountQuery(tuple(Relation(n, n) for n in names), joins)
        got = compute_te(spark, query, None, [frozenset(names[:4])])
        assert got.values[frozenset(names[:4])] == 2**64
        assert got.statements == 2  # the BIGINT statement overflowed, the DECIMAL one did not
    finally:
        spark.close()
