"""The Engine conformance suite: every engine inherits :class:`EngineConformance`.

A subclass says how to create a writable database (``create_location``), how to name one
that does not exist (``missing_location``), and which dialect it expects; the suite builds
the small schema below through the engine itself (opened writable) and then checks the
protocol on a read-only connection.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from pimento.engines import Engine, Result, open_engine
from pimento.errors import DataSourceError, EngineError, EngineQueryError, QueryTimeout

#: Portable DDL: PK, composite PK, UNIQUE (column and index), NOT NULL, single and composite FKs.
SCHEMA = (
    "CREATE TABLE dept (dept_id INTEGER PRIMARY KEY, name VARCHAR(40) NOT NULL UNIQUE, budget DOUBLE PRECISION)",
    "CREATE TABLE emp (emp_id INTEGER NOT NULL PRIMARY KEY, dept_id INTEGER NOT NULL REFERENCES dept (dept_id), "
    "email TEXT, active BOOLEAN, hired DATE)",
    "CREATE UNIQUE INDEX emp_email ON emp (email)",
    "CREATE TABLE project (dept_id INTEGER NOT NULL, code VARCHAR(10) NOT NULL, title TEXT, "
    "PRIMARY KEY (dept_id, code), FOREIGN KEY (dept_id) REFERENCES dept (dept_id))",
    "CREATE TABLE assignment (emp_id INTEGER NOT NULL REFERENCES emp (emp_id), dept_id INTEGER NOT NULL, "
    "code VARCHAR(10) NOT NULL, hours INTEGER, "
    "FOREIGN KEY (dept_id, code) REFERENCES project (dept_id, code))",
)

ROWS = (
    "INSERT INTO dept VALUES (1, 'Cardiology', 1.5), (2, 'Oncology', NULL), (3, 'Radiology', 2.25)",
    "INSERT INTO emp VALUES (10, 1, 'ann@x.org', TRUE, '2020-01-02'), (11, 1, 'bob@x.org', FALSE, NULL), "
    "(12, 2, NULL, TRUE, '2021-06-30')",
    "INSERT INTO project VALUES (1, 'A', 'alpha'), (1, 'B', 'beta'), (2, 'A', 'gamma')",
    "INSERT INTO assignment VALUES (10, 1, 'A', 5), (10, 1, 'B', 7), (11, 1, 'A', NULL), (12, 2, 'A', 3)",
)

#: A statement that runs for minutes on every engine unless stopped.
LONG_QUERY = (
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 2000000000) "
    "SELECT count(*) FROM r"
)

#: How long a stopped statement may take to end: a bound that only a stop that never works
#: reaches (a loaded machine stops it late, which is slow, not wrong).
HANG_S = 120.0


class EngineConformance:
    """Behaviour every Engine must show. Subclasses fill in the hooks below."""

    #: Registry name and sqlglot dialect the engine must report.
    engine_name: str = ""
    dialect: str = ""

    # -- hooks -------------------------------------------------------------------------------

    @classmethod
    def create_location(cls, tmp_path_factory: pytest.TempPathFactory) -> str:
        """A location where a fresh, empty, writable database can be created."""
        raise NotImplementedError

    def missing_location(self, tmp_path: Any) -> str:
        """A location of the right kind where no database exists."""
        raise NotImplementedError

    @classmethod
    def drop_location(cls, location: str) -> None:
        """Remove the database created at ``location`` (files vanish with tmp dirs by default)."""

    #: Statements that would write or read a file on the machine, with ``{dir}`` a fresh folder:
    #: every one must fail on a read-only (private) connection, and create nothing.
    file_statements: tuple[str, ...] = ()

    #: A statement that runs for minutes unless stopped (an engine without WITH RECURSIVE names its own).
    long_query: str = LONG_QUERY

    @classmethod
    def populate(cls, location: str) -> None:
        """Create :data:`SCHEMA` and :data:`ROWS` at ``location`` (default: through the engine, writable)."""
        writer = open_engine(location, engine=cls.engine_name, read_only=False)
        try:
            for statement in SCHEMA + ROWS:
                writer.execute(statement)
        finally:
            writer.close()

    # -- fixtures ----------------------------------------------------------------------------

    @pytest.fixture(scope="class")
    @classmethod
    def location(cls, tmp_path_factory: pytest.TempPathFactory):
        location = cls.create_location(tmp_path_factory)
        cls.populate(location)
        yield location
        cls.drop_location(location)

    @pytest.fixture
    def engine(self, location: str):
        opened = open_engine(location, engine=self.engine_name, read_only=True, timeout_s=30)
        yield opened
        opened.close()

    # -- protocol ----------------------------------------------------------------------------

    def test_is_an_engine_with_its_dialect(self, engine: Engine) -> None:
        assert isinstance(engine, Engine)
        assert engine.name == self.engine_name
        assert engine.dialect == self.dialect
        assert engine.read_only is True
        assert engine.location

    def test_location_alone_selects_this_engine(self, location: str) -> None:
        opened = open_engine(location)
        try:
            assert opened.name == self.engine_name
        finally:
            opened.close()

    def test_execute_binds_question_mark_parameters(self, engine: Engine) -> None:
        result = engine.execute("SELECT name, budget FROM dept WHERE dept_id = ? OR name = ? ORDER BY dept_id", [1, "Radiology"])
        assert isinstance(result, Result)
        assert [c.lower() for c in result.columns] == ["name", "budget"]
        assert result.rows == (("Cardiology", 1.5), ("Radiology", 2.25))

    def test_question_marks_and_percent_in_literals_are_not_placeholders(self, engine: Engine) -> None:
        sql = "SELECT count(*) FROM emp WHERE email LIKE '%@x.org' AND email <> 'who?' AND emp_id > ?"
        assert engine.execute(sql, [10]).scalar() == 1

    def test_string_parameter_is_bound_not_spliced(self, engine: Engine) -> None:
        hostile = "x' OR '1'='1"
        assert engine.execute("SELECT count(*) FROM dept WHERE name = ?", [hostile]).scalar() == 0

    def test_wrong_number_of_parameters_is_an_engine_error(self, engine: Engine) -> None:
        with pytest.raises(EngineError):
            engine.execute("SELECT count(*) FROM dept WHERE dept_id = ?", [])

    def test_bad_sql_is_an_engine_error_not_a_timeout(self, engine: Engine) -> None:
        with pytest.raises(EngineError) as info:
            engine.execute("SELECT no_such_column FROM dept")
        assert not isinstance(info.value, QueryTimeout)

    def test_result_scalar(self, engine: Engine) -> None:
        assert engine.execute("SELECT count(*) FROM assignment").scalar() == 4
        with pytest.raises(DataSourceError):
            engine.execute("SELECT dept_id FROM dept").scalar()

    def test_missing_database_is_a_data_source_error(self, tmp_path) -> None:
        with pytest.raises(DataSourceError):
            open_engine(self.missing_location(tmp_path), engine=self.engine_name, read_only=True)

    # -- read-only ---------------------------------------------------------------------------

    @pytest.mark.parametrize(
        "statement",
        [
            "INSERT INTO dept VALUES (9, 'Surgery', 0)",
            "UPDATE emp SET email = 'z@x.org'",
            "DELETE FROM assignment",
            "CREATE TABLE evil (a INTEGER)",
            "DROP TABLE assignment",
        ],
    )
    def test_read_only_refuses_writes_clearly(self, engine: Engine, statement: str) -> None:
        with pytest.raises(EngineError, match=r"(?i)read.?only"):
            engine.execute(statement)
        assert engine.execute("SELECT count(*) FROM assignment").scalar() == 4
        assert engine.execute("SELECT count(*) FROM dept").scalar() == 3

    # -- private data: hardening and error text ---------------------------------------------

    def test_engine_error_text_stays_out_of_the_message(self, engine: Engine) -> None:
        with pytest.raises(EngineQueryError) as info:
            engine.execute("SELECT no_such_column FROM dept WHERE name = 'Cardiology'")
        error = info.value
        assert error.message == EngineQueryError.PUBLIC_MESSAGE
        assert "no_such_column" not in error.one_line()
        assert "no_such_column" in error.engine_text  # kept for the custodian's audit record
        assert isinstance(error, DataSourceError)

    def test_read_only_connection_touches_no_file(self, engine: Engine, tmp_path) -> None:
        assert self.file_statements, "each engine names its file-access statements"
        for statement in self.file_statements:
            with pytest.raises(EngineError):
                engine.execute(statement.format(dir=tmp_path))
        assert list(tmp_path.iterdir()) == []
        assert engine.execute("SELECT count(*) FROM dept").scalar() == 3

    def test_a_bad_memory_limit_is_a_config_error(self, location: str) -> None:
        from pimento.errors import ConfigError

        with pytest.raises(ConfigError, match="not a size"):
            open_engine(location, engine=self.engine_name, memory_limit="lots")

    # -- timeout and cancel ------------------------------------------------------------------

    def test_timeout_raises_query_timeout_and_engine_stays_usable(self, engine: Engine) -> None:
        started = time.monotonic()
        with pytest.raises(QueryTimeout, match="timed out"):
            engine.execute(self.long_query, timeout_s=0.3)
        # the query runs for hours: only a timeout that never fired reaches this bound (a loaded
        # machine stops it late, which is slow, not wrong; nothing here measures speed)
        assert time.monotonic() - started < HANG_S
        assert engine.execute("SELECT count(*) FROM dept").scalar() == 3

    def test_cancel_from_another_thread(self, location: str) -> None:
        engine = open_engine(location, engine=self.engine_name, read_only=True, timeout_s=None)
        outcome: dict[str, BaseException | Result] = {}

        def run() -> None:
            try:
                outcome["value"] = engine.execute(self.long_query)
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                outcome["value"] = exc

        worker = threading.Thread(target=run, daemon=True)
        try:
            worker.start()
            deadline = time.monotonic() + HANG_S
            # Keep cancelling until the statement stops: a cancel sent before it starts is a no-op.
            while worker.is_alive() and time.monotonic() < deadline:
                time.sleep(0.1)
                engine.cancel()
            worker.join(HANG_S)
            assert not worker.is_alive(), "cancel() did not stop the statement"
            assert isinstance(outcome["value"], QueryTimeout)
            assert "cancel" in str(outcome["value"])
            assert engine.execute("SELECT count(*) FROM dept").scalar() == 3
        finally:
            engine.close()

    def test_cancel_when_idle_is_harmless(self, engine: Engine) -> None:
        engine.cancel()
        assert engine.execute("SELECT count(*) FROM dept").scalar() == 3

    # -- introspection -----------------------------------------------------------------------

    def test_introspect_tables_and_columns(self, engine: Engine) -> None:
        catalog = engine.introspect()
        assert {t.lower() for t in catalog.table_names} == {"dept", "emp", "project", "assignment"}
        assert [c.lower() for c in catalog.table("emp").column_names] == ["emp_id", "dept_id", "email", "active", "hired"]

    def test_introspect_primary_keys_in_order(self, engine: Engine) -> None:
        catalog = engine.introspect()
        assert catalog.table("dept").primary_key == ("dept_id",)
        assert catalog.table("project").primary_key == ("dept_id", "code")
        assert catalog.table("assignment").primary_key == ()

    def test_introspect_unique_keys_from_constraints_and_indexes(self, engine: Engine) -> None:
        catalog = engine.introspect()
        assert ("name",) in catalog.table("dept").unique
        assert ("email",) in catalog.table("emp").unique
        assert catalog.table("emp").is_key(["email"])
        assert not catalog.table("assignment").is_key(["emp_id"])

    def test_introspect_foreign_keys(self, engine: Engine) -> None:
        catalog = engine.introspect()
        found = {(fk.table, fk.columns, fk.ref_table, fk.ref_columns) for fk in catalog.foreign_keys}
        assert found == {
            ("emp", ("dept_id",), "dept", ("dept_id",)),
            ("project", ("dept_id",), "dept", ("dept_id",)),
            ("assignment", ("emp_id",), "emp", ("emp_id",)),
            ("assignment", ("dept_id", "code"), "project", ("dept_id", "code")),
        }
        assert not any(fk.declared for fk in catalog.foreign_keys)

    def test_introspect_not_null(self, engine: Engine) -> None:
        emp = engine.introspect().table("emp")
        assert emp.column("emp_id").nullable is False
        assert emp.column("dept_id").nullable is False
        assert emp.column("email").nullable is True
        assert engine.introspect().table("assignment").column("hours").nullable is True

    def test_introspect_type_families(self, engine: Engine) -> None:
        catalog = engine.introspect()
        dept, emp = catalog.table("dept"), catalog.table("emp")
        assert dept.column("dept_id").type == "integer"
        assert dept.column("name").type == "text"
        assert dept.column("budget").type == "real"
        assert emp.column("email").type == "text"
        assert emp.column("active").type == "boolean"
        assert emp.column("hired").type == "date"
        assert dept.column("name").raw_type

    def test_introspected_tables_are_private_by_default(self, engine: Engine) -> None:
        assert all(t.private for t in engine.introspect().tables)
