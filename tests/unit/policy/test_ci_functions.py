"""CI-mode SQL calls functions from an allow-list (issue 23, finding 9).

``current_setting('temp_directory')`` answered the custodian's absolute path through
``Enforcer.authorize`` (so ``pimento authorize``, ``pimento sql --mode ci`` and the service's CI
mode), and ``version()`` / ``current_database()`` the server's version and database name: the old
deny-list named file readers only. Every function outside :data:`CI_FUNCTIONS` is now refused,
before the query runs, with an error naming it.
"""

from __future__ import annotations

import pytest

from pimento.errors import SqlError
from pimento.policy import Enforcer
from pimento.policy.lineage import analyze_query
from pimento.schema import Catalog, Column, Table

#: (query, the function name the error must show) -- each reads the server, draws, sleeps or raises
SERVER_READERS = [
    ("SELECT current_setting('temp_directory')", "current_setting"),
    ("SELECT version()", "version"),
    ("SELECT current_database()", "current_database"),
    ("SELECT current_schema()", "current_schema"),
    ("SELECT current_user", "current_user"),
    ("SELECT now()", "now"),
    ("SELECT current_date", "current_date"),
    ("SELECT current_timestamp", "current_timestamp"),
    ("SELECT pat_id FROM Patient WHERE getenv('HOME') IS NOT NULL", "getenv"),
    ("SELECT pat_id FROM Patient WHERE pg_read_file('/etc/passwd') = ''", "pg_read_file"),
    ("SELECT COUNT(*) FROM Patient WHERE random() < 0.5", "random"),
    ("SELECT pg_sleep(1)", "pg_sleep"),
    ("SELECT error(name) FROM Patient", "error"),
    ("SELECT sqlite_version()", "sqlite_version"),
    ("SELECT inet_server_addr()", "inet_server_addr"),
    ("SELECT * FROM duckdb_settings()", "duckdb_settings"),
    ("SELECT name FROM Patient WHERE name IN (SELECT current_setting('data_directory'))", "current_setting"),
    ("WITH s AS (SELECT version() AS v) SELECT v FROM s", "version"),
]

#: Queries of the documentation and benchmarks' shapes: aggregates, windows, CASE, casts, text,
#: number and date functions of the row's values.
ALLOWED = [
    "SELECT COUNT(*), COUNT(DISTINCT pat_id), SUM(birth_year), AVG(birth_year), MIN(name), MAX(name) FROM Patient",
    "SELECT sex, COUNT(*) FILTER (WHERE birth_year > 1950) AS n FROM Patient GROUP BY sex",
    "SELECT pat_id, ROW_NUMBER() OVER (PARTITION BY sex ORDER BY birth_year) FROM Patient",
    "SELECT CASE WHEN birth_year < 1950 THEN 'old' ELSE 'young' END, COALESCE(name, ''), NULLIF(sex, 'F') FROM Patient",
    "SELECT CAST(birth_year AS VARCHAR), LOWER(name), UPPER(name), LENGTH(name), TRIM(name), SUBSTRING(name, 1, 2) FROM Patient",
    "SELECT ROUND(AVG(birth_year), 1), ABS(MIN(birth_year) - 2000), FLOOR(AVG(birth_year)) FROM Patient",
    "SELECT EXTRACT(YEAR FROM visit_date), YEAR(visit_date), DATE_TRUNC('month', visit_date), STRFTIME(visit_date, '%Y') FROM Visit",
    "SELECT diagnosis, STRING_AGG(CAST(pat_id AS VARCHAR), ',') FROM Visit GROUP BY diagnosis",
    "SELECT * FROM Visit WHERE visit_date >= DATE '2021-01-01'",
    "SELECT pat_id FROM Visit WHERE EXISTS (SELECT 1 FROM DxCategory d WHERE d.diagnosis = Visit.diagnosis)",
]


@pytest.fixture(scope="module")
def enforcer(compiled, hospital):
    return Enforcer(compiled, hospital.engine, hospital.catalog)


@pytest.fixture(scope="module")
def context(enforcer):
    return enforcer.context("employee:1", "employee:2", "treatment")


@pytest.mark.parametrize(("sql", "name"), SERVER_READERS, ids=[n for _, n in SERVER_READERS])
def test_functions_that_read_the_server_are_refused_by_name(enforcer, context, sql, name) -> None:
    with pytest.raises(SqlError) as info:
        enforcer.authorize(context, sql)
    assert f"function {name}() is not allowed" in info.value.message.lower()


def test_the_custodians_path_does_not_come_out(enforcer, context, hospital) -> None:
    # What the engine answers to the query of finding 9: an absolute path of the custodian's machine.
    path = hospital.engine.execute("SELECT current_setting('temp_directory')").rows[0][0]
    assert path
    with pytest.raises(SqlError) as info:
        enforcer.authorize(context, "SELECT current_setting('temp_directory') AS t")
    assert path not in info.value.one_line()


@pytest.mark.parametrize("sql", ALLOWED)
def test_aggregates_and_functions_of_the_values_are_allowed(enforcer, context, sql) -> None:
    result = enforcer.authorize(context, sql)
    assert isinstance(result.rows, tuple)


@pytest.mark.parametrize("dialect", ["duckdb", "sqlite", "postgres"])
def test_the_allow_list_holds_in_every_dialect(dialect) -> None:
    catalog = Catalog((Table("t", (Column("a", "integer"), Column("d", "date"))),))
    for sql in ["SELECT version()", "SELECT current_setting('x')", "SELECT current_database()", "SELECT now()",
                "SELECT a FROM t WHERE random() > 0.5", "SELECT load_extension('x')", "SELECT readfile('/etc/passwd')"]:
        with pytest.raises(SqlError, match="is not allowed"):
            analyze_query(sql, catalog, dialect=dialect)
    analyze_query("SELECT COUNT(*), AVG(a), MAX(d) FROM t WHERE a > 1 AND (d IS NULL OR a < 3)", catalog, dialect=dialect)


def test_no_allowed_function_reads_the_server() -> None:
    from pimento.policy.lineage import CI_FUNCTIONS

    for name in CI_FUNCTIONS:
        assert not name.startswith(("current_", "pg_", "sqlite_", "duckdb_", "read_", "inet_", "session_", "txid")), name
        assert name not in {"version", "now", "today", "getenv", "random", "rand", "uuid", "error", "sleep", "query",
                            "setting", "user", "glob", "load_extension", "readfile", "writefile", "nextval"}, name
