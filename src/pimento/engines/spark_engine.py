"""Spark SQL: a folder of Parquet tables read by a local (or configured) Spark session.

Naming a Spark database (docs/engines.md):

* ``spark:/path/to/folder``: every ``NAME.parquet`` file and every ``NAME/`` folder of Parquet
  part files (as Spark or DuckDB write them) in the folder is table ``NAME``;
* a folder whose ``pimento.toml`` says ``[database] engine = "spark"`` and ``path = "tables"``
  (the Parquet folder beside it): keys and foreign keys are declared there too, since Spark
  neither stores nor enforces them.

One JVM serves the process (Spark allows one ``SparkContext``); each engine is its own
``SparkSession`` (``newSession()``) whose temporary views are the tables, so two engines never see
each other's tables. The session is started on first use with ``local[threads]`` (default: one
thread per core; the environment variable ``PIMENTO_SPARK_MASTER`` names another master), the driver bound to 127.0.0.1, no web UI, an in-memory catalog, and the driver
memory from ``[database] memory_limit`` (it only applies when the JVM starts: the first engine's
value wins).

A read-only connection (private data) is hardened, in this engine and not only behind the
parser's allow-list: a statement must be ONE query (``SELECT``, ``WITH ... SELECT``, set
operations) as sqlglot's Spark dialect parses it; ``reflect``/``java_method`` (arbitrary Java
calls) and the file readers are refused; a table must be a plain name (no ``parquet.`/path```:
``spark.sql.runSQLOnFiles`` is off as well); ``SET``, ``ADD JAR``, DDL and DML never reach Spark.
Integer arithmetic is ANSI (an overflow raises instead of wrapping), which the residual
sensitivity relies on.

The SQL Pimento writes for every engine reaches Spark as Spark SQL: a statement that uses them is
parsed once (sqlglot's Spark dialect, double-quoted names being identifiers as configured below)
and written again with ``VARCHAR`` as ``STRING`` (Spark wants a length) and without the
``MATERIALIZED`` hint of a CTE. Spark 3.5 has no recursive CTE: a linear ``WITH RECURSIVE``
(a base ``UNION`` steps that read the CTE once each, as a transitive closure) is unrolled into
its levels, the number of levels found by running them until one adds no new row (cached per
engine); the statement re-checks that the next level adds nothing and raises otherwise, and is
then unrolled again (so data read after the count never leaves a level out).

Timeouts and cancel: each statement runs in its own Spark job group, from a worker thread; the
caller waits for it and cancels the job group (repeatedly, since a query runs several jobs) when
the timeout passes or :meth:`SparkEngine.cancel` is called.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark

from pimento.config import DEFAULT_MEMORY_LIMIT
from pimento.engines.base import Result, memory_limit_bytes
from pimento.errors import DataSourceError, EngineError, EngineQueryError, QueryTimeout
from pimento.extras import check_extra
from pimento.schema import Catalog, Column, Table, normalize_type
from pimento.sql.quote import quote_identifier, quote_identifiers

__all__ = ["SPARK_PREFIX", "SparkEngine", "is_spark_location", "spark_folder", "write_spark_deployment"]

#: ``spark:/path/to/folder`` names a folder of Parquet tables.
SPARK_PREFIX = "spark:"

#: Functions a private connection refuses: arbitrary Java calls and file readers.
_REFUSED_FUNCTIONS = frozenset(
    {"reflect", "java_method", "try_reflect", "input_file_name", "input_file_block_start",
     "input_file_block_length", "read_files", "read_parquet", "read_csv", "read_json", "url_decode_file"}
)

#: Most levels a recursive CTE is unrolled to on Spark.
MAX_RECURSION_DEPTH = 100

#: Raised by an unrolled recursive CTE when the data now has a level more than counted.
_DEEPER = "pimento_recursion_deeper_than_counted"

_STARTUP = threading.Lock()
_SHARED: dict[str, Any] = {}


class SparkAnsi(Spark):
    """Spark SQL as the engine is configured: double quotes delimit identifiers, not strings."""

    class Tokenizer(Spark.Tokenizer):
        QUOTES = ["'"]
        IDENTIFIERS = ["`", '"']


def is_spark_location(location: str) -> bool:
    return str(location).lower().startswith(SPARK_PREFIX)


def spark_folder(location: str) -> Path:
    """The Parquet folder of a location (``spark:/x`` or a plain folder path)."""
    text = str(location)
    if is_spark_location(text):
        text = text[len(SPARK_PREFIX):]
        if text.startswith("//"):
            text = text[2:]
    return Path(text)


def _root_session(threads: int | None, memory_limit: str):
    """The process's SparkSession (started once; later engines get ``newSession()`` of it)."""
    with _STARTUP:
        root = _SHARED.get("root")
        if root is not None and root.sparkContext._jsc is not None:
            return root
        try:
            from pyspark.sql import SparkSession
        except ImportError as exc:  # pragma: no cover - depends on the installation
            check_extra(exc, "spark", "the Spark engine (with a Java 17 runtime)")
            raise
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        memory_mb = max(512, memory_limit_bytes(memory_limit) // 1024**2)
        warehouse = tempfile.mkdtemp(prefix="pimento-spark-warehouse-")
        builder = (
            SparkSession.builder.appName("pimento")
            .master(os.environ.get("PIMENTO_SPARK_MASTER") or (f"local[{int(threads)}]" if threads else "local[*]"))
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.catalogImplementation", "in-memory")
            .config("spark.sql.warehouse.dir", warehouse)
            .config("spark.driver.memory", f"{memory_mb}m")
            .config("spark.sql.shuffle.partitions", str(max(2, 2 * int(threads or os.cpu_count() or 2))))
            .config("spark.sql.runSQLOnFiles", "false")
            .config("spark.sql.ansi.enabled", "true")
            .config("spark.sql.ansi.doubleQuotedIdentifiers", "true")
            .config("spark.sql.session.timeZone", "UTC")
        )
        try:
            root = builder.getOrCreate()
        except Exception as exc:  # noqa: BLE001 - Java missing, JVM failed to start, ...
            raise DataSourceError(f"cannot start Spark: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}",
                                  hint="the Spark engine needs a Java 17 runtime (java -version)") from exc
        root.sparkContext.setLogLevel("ERROR")
        _SHARED["root"] = root
        return root


def _tables_in(folder: Path) -> dict[str, str]:
    """Table name -> Parquet path (file or folder of parts) found directly in ``folder``."""
    found: dict[str, str] = {}
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith((".", "_")):
            continue
        if entry.is_file() and entry.suffix.lower() == ".parquet":
            found[entry.stem] = str(entry)
        elif entry.is_dir() and any(p.suffix.lower() == ".parquet" for p in entry.rglob("*.parquet")):
            found[entry.name] = str(entry)
    return found


class SparkEngine:
    """A folder of Parquet tables behind the Engine protocol, queried with Spark SQL."""

    name = "spark"
    dialect = "spark"

    def __init__(
        self,
        location: str,
        *,
        read_only: bool = True,
        timeout_s: float | None = None,
        threads: int | None = None,
        memory_limit: str | None = None,
    ):
        folder = spark_folder(location)
        if not folder.is_dir():
            raise DataSourceError(f"Spark database folder not found: {folder}",
                                  hint="name a folder of Parquet tables: spark:/path/to/folder")
        folder = folder.resolve()
        # The folder's absolute path, without the prefix: the ledger, witness and synthetic copy sit
        # beside it (``<folder>.ledger.sqlite``) whatever the working directory or the spelling.
        self.location = str(folder)
        self.folder = folder
        self.read_only = bool(read_only)
        self.timeout_s = timeout_s
        root = _root_session(threads, memory_limit or DEFAULT_MEMORY_LIMIT)
        self._spark = root.newSession()
        self._tables = _tables_in(folder)
        self._lock = threading.Lock()
        self._group: str | None = None
        self._cancelled = threading.Event()
        #: statement -> its Spark SQL; recursive CTE -> its number of levels (this engine's data)
        self._rewritten: dict[str, str] = {}
        self._depths: dict[str, int] = {}
        self._worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="pimento-spark")
        try:
            for table, path in self._tables.items():
                self._spark.read.parquet(path).createOrReplaceTempView(table)
        except Exception as exc:  # noqa: BLE001 - a file that is not Parquet, ...
            raise DataSourceError(f"cannot open Spark database {folder}: {_first_line(exc)}") from exc

    @property
    def session(self):
        """The engine's SparkSession (trusted code only, e.g. writing a synthetic copy)."""
        return self._spark

    @property
    def tables(self) -> dict[str, str]:
        """Table name -> Parquet path."""
        return dict(self._tables)

    # -- statements ---------------------------------------------------------------------------

    def _check(self, sql: str) -> None:
        """Refuse, before Spark sees it, anything but one plain query (read-only connections)."""
        try:
            statements = [s for s in sqlglot.parse(sql, read=SparkAnsi) if s is not None]
        except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as exc:
            raise EngineQueryError("Spark", f"cannot parse the statement: {_first_line(exc)}") from exc
        if len(statements) != 1:
            raise EngineQueryError("Spark", f"{len(statements)} statements given, one expected")
        tree = statements[0]
        if not isinstance(tree, exp.Query) or any(
            isinstance(node, (exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Drop, exp.Command, exp.Merge,
                              exp.Alter, exp.Set, exp.Cache, exp.Uncache, exp.LoadData))
            for node in tree.walk()
        ):
            raise EngineQueryError(
                "Spark", f"refused a {type(tree).__name__} statement on a read-only connection",
                public=EngineQueryError.READ_ONLY_MESSAGE, hint="private data is never modified by Pimento",
            )
        for node in tree.find_all(exp.Func):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            if name in _REFUSED_FUNCTIONS:
                raise EngineQueryError("Spark", f"function {name} is refused on a private connection")
        for table in tree.find_all(exp.Table):
            if table.args.get("db") or table.args.get("catalog"):
                raise EngineQueryError("Spark", f"table {table.sql('spark')} is not a table of this database")

    def execute(self, sql: str, params: Sequence[Any] | None = None, *, timeout_s: float | None = None) -> Result:
        timeout = timeout_s if timeout_s is not None else self.timeout_s
        if self.read_only:
            self._check(sql)
        with self._lock:
            group = f"pimento-{uuid.uuid4().hex}"
            self._cancelled.clear()
            outcome: dict[str, Any] = {}
            context = self._spark.sparkContext

            def run() -> None:
                try:
                    context.setJobGroup(group, "pimento statement", interruptOnCancel=True)
                    outcome["result"] = self._run(sql, params)
                except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                    outcome["error"] = exc

            # One worker thread per engine (py4j pins a JVM thread and a socket to each Python thread).
            future = self._worker.submit(run)
            self._group = group
            fired = False
            deadline = None if timeout is None else time.monotonic() + timeout
            try:
                while not future.done():
                    left = 0.1 if deadline is None else max(0.0, min(0.1, deadline - time.monotonic()))
                    try:
                        future.result(left)
                    except concurrent.futures.TimeoutError:
                        pass
                    if future.done():
                        break
                    if self._cancelled.is_set() or (deadline is not None and time.monotonic() >= deadline):
                        # keep cancelling: a query runs several jobs, and one may start after a cancel
                        fired = fired or not self._cancelled.is_set()
                        context.cancelJobGroup(group)
            finally:
                self._group = None
            if "result" in outcome:
                return outcome["result"]
            exc = outcome.get("error")
            if fired or self._cancelled.is_set():
                raise QueryTimeout(
                    f"statement {'timed out after ' + str(timeout) + ' s' if fired else 'was cancelled'}"
                ) from exc
            if isinstance(exc, EngineError):
                raise exc
            raise EngineQueryError("Spark", _first_line(exc)) from exc

    def _run(self, sql: str, params: Sequence[Any] | None) -> Result:
        """Run one statement (in the worker thread, under the statement's job group)."""
        for attempt in range(2):
            text = self._spark_sql(sql, fresh=attempt > 0)
            try:
                frame = self._spark.sql(text, args=list(params)) if params else self._spark.sql(text)
                return Result(tuple(frame.columns), tuple(tuple(row) for row in frame.collect()))
            except Exception as exc:  # noqa: BLE001 - an unrolled recursion found a new level: count again
                if attempt or _DEEPER not in str(exc):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _spark_sql(self, sql: str, *, fresh: bool = False) -> str:
        """``sql`` as Spark SQL: VARCHAR as STRING, no MATERIALIZED hint, recursive CTEs unrolled."""
        upper = sql.upper()
        if "VARCHAR" not in upper and "MATERIALIZED" not in upper and "RECURSIVE" not in upper:
            return sql
        if not fresh and sql in self._rewritten:
            return self._rewritten[sql]
        try:
            tree = sqlglot.parse_one(sql, read=SparkAnsi)
        except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
            return sql  # Spark gives its own error
        for cte in tree.find_all(exp.CTE):
            if cte.args.get("materialized") is not None:
                cte.set("materialized", None)
        for with_ in list(tree.find_all(exp.With)):
            if with_.args.get("recursive"):
                self._unroll(with_, fresh=fresh)
        text = tree.sql("spark")
        if len(self._rewritten) > 512:
            self._rewritten.clear()
        self._rewritten[sql] = text
        return text

    def _unroll(self, with_: exp.With, *, fresh: bool) -> None:
        """Replace each linear recursive CTE of ``with_`` by its levels (see the module docstring)."""
        ctes = list(with_.expressions)
        out: list[exp.CTE] = []
        for cte in ctes:
            name = cte.alias_or_name
            terms: list[exp.Query] = []
            kinds: set[bool] = set()

            def flatten(node: exp.Expr) -> None:
                if isinstance(node, exp.Union) and not node.args.get("order") and not node.args.get("limit"):
                    kinds.add(bool(node.args.get("distinct")))
                    flatten(node.this)
                    flatten(node.expression)
                else:
                    terms.append(cast(exp.Query, node))  # a branch of the CTE's query

            flatten(cte.this)
            refs = [[t for t in term.find_all(exp.Table) if t.name.lower() == name.lower() and not t.args.get("db")]
                    for term in terms]
            if not any(refs):
                out.append(cte)
                continue
            if len(kinds) != 1 or any(len(r) > 1 for r in refs) or all(refs):
                raise EngineQueryError("Spark", f"recursive CTE {name} is not linear (a base UNION steps reading it "
                                                "once each); Spark 3.5 has no recursive CTE")
            distinct = kinds.pop()
            alias = cte.args.get("alias")
            columns = [c.name for c in alias.columns] if alias is not None and alias.columns else []
            base = [t for t, r in zip(terms, refs) if not r]
            steps = [t for t, r in zip(terms, refs) if r]
            if not columns:
                columns = [s.alias_or_name for s in base[0].selects]
            names = quote_identifiers(columns, "spark")
            q = lambda n: quote_identifier(n, "spark")  # noqa: E731
            level = lambda i: f"{name}__pimento_l{i}"  # noqa: E731
            union = " UNION " if distinct else " UNION ALL "

            def level_sql(i: int) -> str:
                parts = base if i == 0 else steps
                texts = []
                for part in parts:
                    part = part.copy()
                    if i:
                        for t in part.find_all(exp.Table):
                            if t.name.lower() == name.lower() and not t.args.get("db"):
                                if not t.alias:  # the step still names its rows by the CTE's name
                                    t.set("alias", exp.TableAlias(this=exp.to_identifier(t.name, quoted=True)))
                                t.set("this", exp.to_identifier(level(i - 1), quoted=True))
                    texts.append(part.sql("spark"))
                body = " UNION ALL ".join(texts)
                return f"SELECT {'DISTINCT ' if distinct else ''}* FROM ({body}) AS {q('__pimento_x')}({names})"

            def upto(i: int) -> str:
                return union.join(f"SELECT * FROM {q(level(k))}" for k in range(i + 1))

            def news(i: int) -> str:
                """Rows of level ``i`` not in the earlier levels (all of them for UNION ALL)."""
                return f"SELECT * FROM {q(level(i))}" + (f" EXCEPT ({upto(i - 1)})" if distinct else "")

            prior = ", ".join(c.sql("spark") for c in out)
            key = prior + "|" + cte.sql("spark")
            depth = None if fresh else self._depths.get(key)
            if depth is None:
                depth = 0
                while True:
                    defs = ", ".join([*([prior] if prior else []),
                                      *(f"{q(level(k))} AS ({level_sql(k)})" for k in range(depth + 2))])
                    probe = f"WITH {defs} SELECT 1 FROM ({news(depth + 1)}) AS {q('__pimento_n')} LIMIT 1"
                    if not self._spark.sql(probe).collect():
                        break
                    depth += 1
                    if depth >= MAX_RECURSION_DEPTH:
                        raise EngineQueryError("Spark", f"recursive CTE {name} has more than {MAX_RECURSION_DEPTH} levels")
                self._depths[key] = depth
            for k in range(depth + 2):
                out.append(sqlglot.parse_one(f"WITH {q(level(k))} AS ({level_sql(k)}) SELECT 1", read="spark")
                           .args["with_"].expressions[0])
            guard = (f"SELECT * FROM ({upto(depth)}) AS {q('__pimento_u')} WHERE CASE WHEN (SELECT COUNT(*) FROM "
                     f"(SELECT 1 FROM ({news(depth + 1)}) AS {q('__pimento_n')} LIMIT 1) AS {q('__pimento_c')}) = 0 "
                     f"THEN TRUE ELSE raise_error('{_DEEPER}') END")
            out.append(sqlglot.parse_one(f"WITH {q(name)} AS ({guard}) SELECT 1", read="spark")
                       .args["with_"].expressions[0])
        with_.set("expressions", out)
        with_.set("recursive", None)

    def cancel(self) -> None:
        group = self._group
        if group is not None:
            self._cancelled.set()
            self._spark.sparkContext.cancelJobGroup(group)

    # -- catalog ------------------------------------------------------------------------------

    def introspect(self) -> Catalog:
        """Tables and columns from the Parquet schemas; Spark declares no keys (pimento.toml does)."""
        tables = []
        for name in self._tables:
            fields = self._spark.table(name).schema.fields
            columns = tuple(
                Column(f.name, normalize_type(f.dataType.simpleString()), f.dataType.simpleString(), bool(f.nullable))
                for f in fields
            )
            tables.append(Table(name, columns, (), (), True))
        return Catalog(tuple(tables), ())

    def close(self) -> None:
        self._worker.shutdown(wait=False)
        for name in self._tables:
            try:
                self._spark.catalog.dropTempView(name)
            except Exception:  # noqa: BLE001 - the JVM may already be gone at exit
                pass

    def __enter__(self) -> SparkEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_ERROR_CLASS = re.compile(r"\[[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*\][^\n]*")


def _first_line(exc: BaseException | None) -> str:
    """Spark's own message: the first ``[ERROR_CLASS] ...`` line (a Java error wraps it in a stack trace)."""
    text = str(exc).strip() if exc is not None else ""
    found = _ERROR_CLASS.search(text)
    if found:
        return found.group(0).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_spark_deployment(duckdb_path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> Path:
    """Copy a DuckDB database (file beside its ``pimento.toml``) to a Spark deployment in ``folder``.

    Each table becomes ``folder/tables/NAME.parquet``; ``folder/pimento.toml`` keeps the
    original settings other than ``[database]`` (privacy, synth, declared constraints) and
    declares the keys and foreign keys that DuckDB enforced, which Spark cannot store. Returns
    ``folder`` (open it with ``load_database(folder)``). Trusted (custodian) tool.
    """
    from pimento._compat import tomllib

    import duckdb

    from pimento.engines.duckdb_engine import DuckDBEngine

    source = Path(duckdb_path)
    out = Path(folder)
    tables = out / "tables"
    tables.mkdir(parents=True, exist_ok=True)
    engine = DuckDBEngine(str(source), read_only=True)
    try:
        catalog = engine.introspect()
    finally:
        engine.close()
    con = duckdb.connect(str(source), read_only=True)
    try:
        for table in catalog.tables:
            target = str(tables / f"{table.name}.parquet").replace("'", "''")
            con.execute(f"COPY (SELECT * FROM {quote_identifier(table.name)}) TO '{target}' (FORMAT parquet)")
    finally:
        con.close()
    settings: dict[str, Any] = {}
    toml = source.parent / "pimento.toml"
    if toml.is_file():
        settings = tomllib.loads(toml.read_text(encoding="utf-8"))
    settings.pop("database", None)
    constraints = settings.pop("constraints", {})

    def ref(table: str, columns: Sequence[str]) -> str:
        return f"{table}.{columns[0]}" if len(columns) == 1 else f"{table}.({', '.join(columns)})"

    unique = [{"columns": ref(t.name, key)} for t in catalog.tables for key in
              ((t.primary_key,) if t.primary_key else ()) + tuple(t.unique)]
    fks = [{"from": ref(fk.table, fk.columns), "to": ref(fk.ref_table, fk.ref_columns)} for fk in catalog.foreign_keys]
    lines = ['[database]', 'engine = "spark"', 'path = "tables"', ""]
    for section, values in settings.items():
        lines.append(f"[{section}]")
        for key, value in values.items():
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
        lines.append("")
    for kind, entries in (("unique", constraints.get("unique", []) + unique),
                          ("foreign_keys", constraints.get("foreign_keys", []) + fks),
                          ("functional_dependencies", constraints.get("functional_dependencies", []))):
        seen = []
        for entry in entries:
            if entry in seen:
                continue
            seen.append(entry)
            lines.append(f"[[constraints.{kind}]]")
            lines.extend(f"{k} = {_toml_value(v)}" for k, v in entry.items())
            lines.append("")
    (out / "pimento.toml").write_text("\n".join(lines), encoding="utf-8")
    return out


def _toml_key(key: str) -> str:
    """A key as TOML reads it back: bare when it is one bare word, else quoted (``"Visit.stay"`` is one key, not a table)."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_string(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_string(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} to pimento.toml")
