"""Spark SQL passes the Engine conformance suite (keys come from pimento.toml) and is hardened.

A local Spark session (``local[2]``) starts once per test process. Outside CI, a machine without
pyspark or Java skips these tests with the reason; under ``CI=true`` it fails them.
"""

from __future__ import annotations

import pytest
from spark_support import SPARK_MARKS, write_parquet_folder

from pimento.engines import open_engine
from pimento.errors import DataSourceError, EngineError, EngineQueryError

from .conformance import ROWS, SCHEMA, EngineConformance


pytestmark = SPARK_MARKS

#: Runs for minutes on Spark unless stopped (Spark 3.5 has no WITH RECURSIVE).
SPARK_LONG_QUERY = "SELECT count(*) FROM range(3000000) a CROSS JOIN range(3000000) b WHERE a.id + b.id = -1"


class TestSparkConformance(EngineConformance):
    engine_name = "spark"
    dialect = "spark"
    long_query = SPARK_LONG_QUERY

    @classmethod
    def create_location(cls, tmp_path_factory) -> str:
        return f"spark:{tmp_path_factory.mktemp('spark') / 'db'}"

    @classmethod
    def populate(cls, location: str) -> None:
        from pathlib import Path

        write_parquet_folder(Path(location[len("spark:"):]), SCHEMA + ROWS)

    def missing_location(self, tmp_path) -> str:
        return f"spark:{tmp_path / 'absent'}"

    file_statements = (
        "SELECT * FROM parquet.`{dir}/x.parquet`",
        "SELECT reflect('java.lang.System', 'getProperty', 'user.home')",
        "SELECT java_method('java.nio.file.Files', 'createDirectory', '{dir}/made')",
        "INSERT OVERWRITE DIRECTORY '{dir}/out' USING parquet SELECT * FROM dept",
        "CREATE TABLE t USING parquet LOCATION '{dir}/t' AS SELECT * FROM dept",
        "ADD JAR '{dir}/evil.jar'",
        "SET spark.sql.runSQLOnFiles = true",
        "SELECT 1; SELECT * FROM parquet.`{dir}`",
    )

    # Spark declares no keys, no foreign keys and no NOT NULL: pimento.toml does (see below).

    def test_introspect_primary_keys_in_order(self, engine) -> None:
        assert all(t.primary_key == () for t in engine.introspect().tables)

    def test_introspect_unique_keys_from_constraints_and_indexes(self, engine) -> None:
        assert all(t.unique == () for t in engine.introspect().tables)

    def test_introspect_foreign_keys(self, engine) -> None:
        assert engine.introspect().foreign_keys == ()

    def test_introspect_not_null(self, engine) -> None:
        emp = engine.introspect().table("emp")
        assert emp.column("email").nullable is True

    def test_declared_keys_come_from_pimento_toml(self, tmp_path) -> None:
        from pimento.engines.database import load_database

        write_parquet_folder(tmp_path / "tables", SCHEMA + ROWS)
        (tmp_path / "pimento.toml").write_text(
            '[database]\nengine = "spark"\npath = "tables"\n'
            '[[constraints.unique]]\ncolumns = "dept.dept_id"\n'
            '[[constraints.foreign_keys]]\nfrom = "emp.dept_id"\nto = "dept.dept_id"\n'
        )
        with load_database(str(tmp_path)) as db:
            assert db.engine.name == "spark"
            assert db.catalog.table("dept").is_key(["dept_id"])
            (fk,) = db.catalog.foreign_keys
            assert (fk.table, fk.columns, fk.ref_table, fk.declared) == ("emp", ("dept_id",), "dept", True)
            assert db.engine.execute("SELECT count(*) FROM emp JOIN dept USING (dept_id)").scalar() == 3

    def test_the_ledger_sits_beside_the_folder_whatever_the_working_directory(self, tmp_path, monkeypatch) -> None:
        # A relative ``spark:`` location once put the ledger under ./spark:/... of the working
        # directory: another directory meant a fresh budget.
        from pimento.engines.database import load_database
        from pimento.mechanisms.ledger import ledger_path

        write_parquet_folder(tmp_path / "data" / "tables", SCHEMA + ROWS)
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        found = []
        for cwd, spelling in ((tmp_path, "spark:data/tables"), (elsewhere, f"spark:{tmp_path}/data/../data/tables")):
            monkeypatch.chdir(cwd)
            with load_database(spelling) as db:
                found.append(ledger_path(db.location, db.settings))
        assert found[0] == found[1] == tmp_path / "data" / "tables.ledger.sqlite"

    def test_a_false_declared_key_is_caught_on_load(self, tmp_path) -> None:
        from pimento.engines.database import load_database
        from pimento.errors import ConstraintViolation

        write_parquet_folder(tmp_path / "tables", SCHEMA + ROWS)
        (tmp_path / "pimento.toml").write_text(
            '[database]\nengine = "spark"\npath = "tables"\n[[constraints.unique]]\ncolumns = "emp.dept_id"\n'
        )
        with pytest.raises(ConstraintViolation):
            load_database(str(tmp_path))

    @pytest.mark.parametrize(
        "statement",
        [
            "SELECT reflect('java.lang.Thread', 'sleep', 1)",
            "SELECT input_file_name() FROM dept",
            "SELECT * FROM default.dept",
            "CACHE TABLE dept",
            "WITH x AS (SELECT 1) INSERT INTO dept SELECT * FROM dept",
        ],
    )
    def test_private_connection_refuses_before_spark_runs_it(self, engine, statement: str) -> None:
        with pytest.raises(EngineQueryError) as info:
            engine.execute(statement)
        assert info.value.message in (EngineQueryError.PUBLIC_MESSAGE, EngineQueryError.READ_ONLY_MESSAGE)

    def test_integer_overflow_raises_instead_of_wrapping(self, engine) -> None:
        with pytest.raises(EngineError, match="(?i)overflow"):
            engine.execute("SELECT CAST(9223372036854775807 AS BIGINT) * 2")

    def test_two_engines_do_not_share_tables(self, location: str, tmp_path) -> None:
        other = write_parquet_folder(tmp_path / "other", ["CREATE TABLE solo (a INTEGER)", "INSERT INTO solo VALUES (1)"])
        with open_engine(other) as one, open_engine(location) as two:
            assert one.introspect().table_names == ("solo",)
            with pytest.raises(EngineQueryError):
                two.execute("SELECT count(*) FROM solo")


def test_a_folder_that_is_not_parquet_is_a_data_source_error(tmp_path) -> None:
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "junk.parquet").write_bytes(b"not parquet at all" * 10)
    with pytest.raises(DataSourceError):
        open_engine(f"spark:{tmp_path / 'db'}").introspect()


#: A graph with a cycle (1 -> 2 -> 3 -> 1) and a chain (4 -> 5 -> 6 -> 7).
EDGES = ["CREATE TABLE edge (src INTEGER, dst INTEGER)",
         "INSERT INTO edge VALUES (1, 2), (2, 3), (3, 1), (4, 5), (5, 6), (6, 7)"]
CLOSURE = ('WITH RECURSIVE reach(a, b) AS (SELECT src, dst FROM edge UNION '
           'SELECT reach.a, e.dst FROM reach JOIN edge AS e ON e.src = reach.b) SELECT a, b FROM reach')


def _duckdb_rows(sql: str) -> list[tuple]:
    import duckdb

    con = duckdb.connect()
    for statement in EDGES:
        con.execute(statement)
    return sorted(con.execute(sql).fetchall())


def test_recursive_cte_is_unrolled_like_duckdb(tmp_path) -> None:
    """Spark 3.5 has no WITH RECURSIVE (the contextual-integrity supervision view failed there)."""
    with open_engine(write_parquet_folder(tmp_path / "g", EDGES)) as engine:
        got = sorted(engine.execute(f'SELECT * FROM ({CLOSURE}) AS "q" WHERE CAST(a AS VARCHAR) <> \'x\'').rows)
        assert got == _duckdb_rows(CLOSURE) and len(got) == 9 + 6
        union_all = CLOSURE.replace(" UNION ", " UNION ALL ").replace("FROM edge UNION", "FROM edge WHERE src >= 4 UNION")
        assert sorted(engine.execute(union_all).rows) == _duckdb_rows(union_all)


def test_recursive_cte_rechecks_its_depth(tmp_path) -> None:
    """A level count cached from other data (one level too few) is caught by the statement itself and redone."""
    with open_engine(write_parquet_folder(tmp_path / "g", EDGES)) as engine:
        expected = sorted(engine.execute(CLOSURE).rows)
        assert engine._depths
        for key in engine._depths:
            engine._depths[key] -= 1
        engine._rewritten.clear()
        assert sorted(engine.execute(CLOSURE).rows) == expected


def test_non_linear_recursion_is_refused(tmp_path) -> None:
    sql = ("WITH RECURSIVE r(a, b) AS (SELECT src, dst FROM edge UNION "
           "SELECT x.a, y.b FROM r AS x JOIN r AS y ON x.b = y.a) SELECT * FROM r")
    with open_engine(write_parquet_folder(tmp_path / "g", EDGES)) as engine:
        with pytest.raises(EngineQueryError):
            engine.execute(sql)


def test_an_untokenizable_statement_is_an_engine_query_error() -> None:
    """sqlglot's TokenError (an unterminated string) is not a ParseError: it must not escape raw."""
    from pimento.engines.spark_engine import SparkEngine

    engine = SparkEngine.__new__(SparkEngine)  # the check runs before Spark: no session needed
    with pytest.raises(EngineQueryError, match="cannot parse the statement"):
        engine._check("SELECT 'a\\' FROM t")
