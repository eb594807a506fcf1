"""Contextual integrity on Spark: `policy compile` and `authorize` give the authorized cells and
answers DuckDB gives, on the demo hospital (200 patients) copied to a Spark deployment.

The Spark session (``local[2]``) starts in the test process. Outside CI, a machine without pyspark
or Java skips these tests with the reason; under ``CI=true`` it fails them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from spark_support import SPARK_MARKS
from typer.testing import CliRunner

from benchmarks.ci_context import QUERIES, _contexts
from pimento.cli.app import app
from pimento.demo.hospital import create_demo
from pimento.engines.database import load_database
from pimento.policy import CompiledPolicy, Enforcer, compile_policy, example_policy_path, load_policy, run_checks

pytestmark = SPARK_MARKS

runner = CliRunner()

#: The queries compared (a projection, a join through the HIV implication, a CTE with an
#: aggregate): few, since each is a large statement for Spark.
PARITY_QUERIES = [QUERIES[i] for i in (0, 5, 13)]


@pytest.fixture(scope="module")
def deployments(tmp_path_factory):
    """(DuckDB file, Spark folder) of the same 200-patient demo hospital."""
    from pimento.engines.spark_engine import write_spark_deployment

    root = tmp_path_factory.mktemp("ci_spark")
    duck = root / "duck" / "hospital.duckdb"
    create_demo(duck, patients=200, seed=5)
    spark = write_spark_deployment(duck, root / "spark")
    return duck, spark


@pytest.fixture(scope="module")
def spark_compiled(deployments, tmp_path_factory) -> Path:
    """`pimento policy compile` on the Spark deployment (the checks run on Spark too)."""
    _, spark = deployments
    out = tmp_path_factory.mktemp("compiled") / "compiled.json"
    # --timeout: the checks' statements get 600 s instead of 60 (a loaded machine, or two test
    # workers beside a Spark, is slow, not wrong; the default timed out at 60 s under load)
    res = runner.invoke(app, ["policy", "compile", "example:hospital_hipaa", "--db", str(spark),
                              "--out", str(out), "--json", "--timeout", "600"])
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def enforcers(deployments, spark_compiled):
    policy = load_policy(example_policy_path())
    duck_db, spark_db = load_database(deployments[0]), load_database(deployments[1])
    compiled = compile_policy(policy, duck_db.catalog, duck_db.engine)
    compiled = run_checks(compiled, duck_db.catalog, duck_db.engine, policy=policy)
    spark_policy = CompiledPolicy.from_dict(json.loads(spark_compiled.read_text(encoding="utf-8")))
    out = [Enforcer(compiled, duck_db.engine, duck_db.catalog), Enforcer(spark_policy, spark_db.engine, spark_db.catalog)]
    yield out
    for db in (duck_db, spark_db):
        db.close()


def _text_rows(rows) -> list[tuple]:
    return sorted(tuple(None if v is None else str(v) for v in row) for row in rows)


def test_spark_deployment_declares_the_duckdb_keys(deployments, enforcers) -> None:
    duck, spark = enforcers
    assert spark.engine.name == "spark"
    for table in duck.catalog.tables:
        key = table.primary_key or table.unique[0]
        assert spark.catalog.table(table.name).is_key(key)
    assert {(f.table, f.columns, f.ref_table) for f in duck.catalog.foreign_keys} == \
        {(f.table, f.columns, f.ref_table) for f in spark.catalog.foreign_keys}


def test_authorized_cells_and_answers_equal_duckdb(enforcers) -> None:
    """Before: the runtime SQL was DuckDB's (VARCHAR, AS MATERIALIZED, WITH RECURSIVE) and failed on Spark."""
    duck, spark = enforcers
    contexts = _contexts(duck.engine, random.Random(11), 9)[0:9:4]  # three kinds of context
    assert spark.compiled.norm_locations == duck.compiled.norm_locations
    authorized = 0
    for _, sender, recipient, purpose in contexts:
        ctx_d = duck.context(sender, recipient, purpose)
        ctx_s = spark.context(sender, recipient, purpose)
        for sql in PARITY_QUERIES:
            cells = duck.authorized_cells(ctx_d, sql)
            assert spark.authorized_cells(ctx_s, sql) == cells, (sender, recipient, purpose, sql)
            authorized += len(cells)
            assert _text_rows(spark.authorize(ctx_s, sql).rows) == _text_rows(duck.authorize(ctx_d, sql).rows), \
                (sender, recipient, purpose, sql)
    assert authorized > 0  # the comparison is not between two empty sets


def test_transitive_supervision_unrolled_like_duckdb(enforcers) -> None:
    """The supervision condition is a recursive CTE; Spark 3.5 has none, so the engine unrolls it."""
    duck, spark = enforcers
    view = duck.compiled.conditions["supervises"].sql
    assert duck.compiled.conditions["supervises"].recursive
    expected = _text_rows(duck.engine.execute(view).rows)
    assert len(expected) > len(_text_rows(duck.engine.execute("SELECT * FROM Supervises").rows))  # indirect rows too
    assert _text_rows(spark.engine.execute(spark.compiled.conditions["supervises"].sql).rows) == expected


def test_cli_compile_and_authorize_on_spark(deployments, enforcers, spark_compiled) -> None:
    _, spark_path = deployments
    duck, _ = enforcers
    compiled = json.loads(spark_compiled.read_text(encoding="utf-8"))
    assert compiled["dialect"] == "spark"
    assert sorted(compiled["views"]) == sorted(n.id for n in duck.compiled.norms)
    assert sorted(compiled["checks"]["satisfiability"]["witnesses"]) == sorted(duck.compiled.checks["satisfiability"]["witnesses"])
    toml = Path(spark_path) / "pimento.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + f'\n[policy]\ncompiled = "{spark_compiled.resolve()}"\n',
                    encoding="utf-8")
    _, sender, recipient, purpose = _contexts(duck.engine, random.Random(3), 1)[0]
    sql = "SELECT diagnosis, COUNT(*) AS n FROM Visit GROUP BY diagnosis"
    res = runner.invoke(app, ["authorize", "--db", str(spark_path), "--sender", sender, "--recipient", recipient,
                              "--purpose", purpose, "--sql", sql, "--json"])
    assert res.exit_code == 0, res.output
    answer = json.loads(res.stdout)
    expected = duck.authorize(duck.context(sender, recipient, purpose), sql)
    assert _text_rows(answer["rows"]) == _text_rows(expected.rows)
