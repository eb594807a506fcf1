"""PostgreSQL passes the Engine conformance suite.

Needs ``PIMENTO_PG_DSN``: a superuser DSN to a throwaway database (each test class creates
and drops its own database beside it). Without it the tests skip, except under ``CI=true``
where a missing server is a failure, so that CI really runs them.
"""

from __future__ import annotations

import uuid

import pytest

from pimento.engines.postgres_engine import to_pyformat

from .conformance import EngineConformance

psycopg = pytest.importorskip("psycopg")
from pg_support import admin_dsn, with_dbname  # noqa: E402
from psycopg.conninfo import conninfo_to_dict  # noqa: E402


@pytest.mark.postgres
class TestPostgresConformance(EngineConformance):
    engine_name = "postgres"
    dialect = "postgres"

    @classmethod
    def create_location(cls, tmp_path_factory) -> str:
        admin = admin_dsn()
        name = f"pimento_conf_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')
        dsn = with_dbname(admin, name)
        # Locations must look like URLs for open_engine to pick PostgreSQL on its own.
        params = conninfo_to_dict(dsn)
        user = params.get("user", "")
        auth = user + (":" + params["password"] if params.get("password") else "")
        host = params.get("host", "")
        if host.startswith("/"):
            return f"postgresql://{auth}@/{name}?host={host}&port={params.get('port', '5432')}"
        return f"postgresql://{auth}@{host or 'localhost'}:{params.get('port', '5432')}/{name}"

    @classmethod
    def drop_location(cls, location: str) -> None:
        name = conninfo_to_dict(location)["dbname"]
        with psycopg.connect(admin_dsn(), autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def missing_location(self, tmp_path) -> str:
        return with_dbname(admin_dsn(), f"pimento_absent_{uuid.uuid4().hex[:8]}")

    # The test server's role is a superuser, which may COPY to server files: the engine refuses
    # anything but SELECT/WITH on a read-only connection before it reaches the server.
    file_statements = (
        "COPY dept TO '{dir}/out.csv'",
        "COPY (SELECT 1) TO PROGRAM 'touch {dir}/pwned'",
        "/* hidden */ COPY dept TO '{dir}/out2.csv'",
        "CREATE TEMP TABLE t AS SELECT 1",
    )

    def test_private_connection_limits_temporary_files(self, engine) -> None:
        # A superuser role may set temp_file_limit; a plain role keeps the server's value.
        assert engine.execute("SELECT current_setting('temp_file_limit')").scalar() != "-1"

    @pytest.mark.parametrize(
        "statement",
        [
            "COMMIT; INSERT INTO dept VALUES (9, 'Surgery', 0)",
            "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
        ],
    )
    def test_scripts_cannot_escape_read_only(self, engine, statement: str) -> None:
        from pimento.errors import EngineError

        try:
            engine.execute(statement)
        except EngineError:
            pass
        with pytest.raises(EngineError, match=r"(?i)read.?only"):
            engine.execute("INSERT INTO dept VALUES (9, 'Surgery', 0)")
        assert engine.execute("SELECT count(*) FROM dept").scalar() == 3


@pytest.mark.parametrize(
    ("sql", "expected", "count"),
    [
        ("SELECT ?", "SELECT %s", 1),
        ("SELECT '?', ?", "SELECT '?', %s", 1),
        ("SELECT 'it''s ?', ?", "SELECT 'it''s ?', %s", 1),
        ("SELECT E'\\'?', ?", "SELECT E'\\'?', %s", 1),
        ('SELECT "a?b" FROM t WHERE x = ?', 'SELECT "a?b" FROM t WHERE x = %s', 1),
        ("SELECT 1 -- ?\n, ?", "SELECT 1 -- ?\n, %s", 1),
        ("SELECT /* ? /* ? */ ? */ ?", "SELECT /* ? /* ? */ ? */ %s", 1),
        ("SELECT $$?$$, $tag$ ? $tag$, ?", "SELECT $$?$$, $tag$ ? $tag$, %s", 1),
        ("SELECT 5 % 2, '%', ?", "SELECT 5 %% 2, '%%', %s", 1),
        ("SELECT $1", "SELECT $1", 0),
    ],
)
def test_to_pyformat(sql: str, expected: str, count: int) -> None:
    assert to_pyformat(sql) == (expected, count)


@pytest.mark.postgres
def test_load_database_over_a_dsn_validates_declared_constraints(tmp_path) -> None:
    from pimento.config import settings_from_dict
    from pimento.engines.database import load_database, validate_constraints
    from pimento.errors import ConstraintViolation

    admin = admin_dsn()
    name = f"pimento_db_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    try:
        dsn = with_dbname(admin, name)
        with psycopg.connect(dsn, autocommit=True) as con:
            con.execute('CREATE TABLE "Ward" (name TEXT PRIMARY KEY, floor INTEGER)')
            con.execute('CREATE TABLE "Visit" (vid INTEGER PRIMARY KEY, ward TEXT, floor INTEGER)')
            con.execute("""INSERT INTO "Ward" VALUES ('A', 1), ('B', 2)""")
            con.execute("""INSERT INTO "Visit" VALUES (1, 'A', 1), (2, 'C', 3), (3, 'A', 4)""")
        fd = {"functional_dependencies": [{"lhs": "visit.ward", "rhs": "visit.floor"}]}
        fk = {"foreign_keys": [{"from": "visit.ward", "to": "ward.name"}]}
        with pytest.raises(ConstraintViolation, match=r"functional dependency Visit\.\(ward\) -> Visit\.\(floor\) does not hold") as info:
            load_database(dsn, engine="postgres", config=settings_from_dict({"constraints": fd}))
        assert "'A'" not in info.value.one_line()  # the load error names the declaration, no value from the data
        settings = settings_from_dict({"constraints": {**fk, "validate_on_load": False}, "privacy": {"public": ["ward"]}})
        with load_database(dsn, engine="postgres", config=settings) as db:
            assert db.catalog.private_tables == ("Visit",)
            assert db.engine.read_only
            (violation,) = validate_constraints(db)
            assert (violation.kind, violation.count, violation.examples, violation.declared) == ("foreign_key", 1, ("C",), True)
    finally:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
