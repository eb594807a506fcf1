"""PostgreSQL (psycopg 3) behind the Engine protocol.

Private data is read-only on three levels: the session default
(``default_transaction_read_only``), every statement runs inside a transaction begun
``READ ONLY`` and rolled back afterwards, and statements always go through the extended
query protocol, which accepts exactly one statement (so ``COMMIT; INSERT ...`` cannot
smuggle a write). On a read-only connection only ``SELECT`` and ``WITH`` statements are sent at
all (``COPY ... TO`` a server file runs in a read-only transaction, so it is refused here), and
``temp_file_limit`` is set to the memory limit where the role may set it (superusers only, in
PostgreSQL). What the role may read (``pg_read_file``, ``pg_read_server_files``, superuser) is the
custodian's to restrict: connect as a plain read-only role. The per-statement timeout is
``SET LOCAL statement_timeout``; :meth:`PostgresEngine.cancel` sends a cancel request from any thread.

The public placeholder style is ``?`` as on every engine; :func:`to_pyformat` rewrites it to
psycopg's ``%s`` outside string literals, quoted identifiers, comments and dollar quotes.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pimento.config import DEFAULT_MEMORY_LIMIT
from pimento.engines.base import memory_limit_bytes
from pimento.errors import DataSourceError, EngineError, EngineQueryError, QueryTimeout
from pimento.schema import Catalog, Column, ForeignKey, Table, normalize_type

__all__ = ["PostgresEngine", "to_pyformat"]


def to_pyformat(sql: str) -> tuple[str, int]:
    """Rewrite ``?`` placeholders to ``%s`` (and ``%`` to ``%%``) for psycopg; count the placeholders.

    ``?`` inside string literals (``'...'``, ``E'...'``, ``$tag$...$tag$``), quoted
    identifiers and comments is left alone.

    >>> to_pyformat("SELECT * FROM t WHERE a = ? AND b LIKE '50%?' -- why?")
    ("SELECT * FROM t WHERE a = %s AND b LIKE '50%%?' -- why?", 1)
    """
    out: list[str] = []
    count = 0
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch == "?":
            out.append("%s")
            count += 1
            i += 1
        elif ch == "%":
            out.append("%%")
            i += 1
        elif ch == "'":
            escapes = i > 0 and sql[i - 1] in "eE" and (i < 2 or not (sql[i - 2].isalnum() or sql[i - 2] == "_"))
            j = i + 1
            while j < n:
                if escapes and sql[j] == "\\":
                    j += 2
                    continue
                if sql[j] == "'":
                    if j + 1 < n and sql[j + 1] == "'":
                        j += 2
                        continue
                    break
                j += 1
            out.append(sql[i : j + 1].replace("%", "%%"))
            i = j + 1
        elif ch == '"':
            j = sql.find('"', i + 1)
            while j != -1 and j + 1 < n and sql[j + 1] == '"':
                j = sql.find('"', j + 2)
            j = n - 1 if j == -1 else j
            out.append(sql[i : j + 1].replace("%", "%%"))
            i = j + 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            j = n if j == -1 else j
            out.append(sql[i:j].replace("%", "%%"))
            i = j
        elif sql.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if sql.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif sql.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(sql[i:j].replace("%", "%%"))
            i = j
        elif ch == "$" and (i == 0 or not (sql[i - 1].isalnum() or sql[i - 1] == "_")):
            end = sql.find("$", i + 1)
            tag = sql[i : end + 1] if end != -1 else ""
            if tag and (tag == "$$" or tag[1:-1].replace("_", "a").isalnum() and not tag[1].isdigit()):
                close = sql.find(tag, end + 1)
                j = n if close == -1 else close + len(tag)
                out.append(sql[i:j].replace("%", "%%"))
                i = j
            else:
                out.append(ch)
                i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out), count


class PostgresEngine:
    """A PostgreSQL database reached through a ``postgresql://`` DSN."""

    name = "postgres"
    dialect = "postgres"

    def __init__(
        self,
        location: str,
        *,
        read_only: bool = True,
        timeout_s: float | None = None,
        memory_limit: str | None = None,
        threads: int | None = None,  # noqa: ARG002 - the server decides its parallelism
    ):
        self.read_only = bool(read_only)
        limit = memory_limit_bytes(memory_limit or DEFAULT_MEMORY_LIMIT)
        self.timeout_s = timeout_s
        try:
            params = conninfo_to_dict(str(location))
        except psycopg.ProgrammingError as exc:
            raise DataSourceError(f"invalid PostgreSQL DSN: {_first_line(exc)}") from None
        #: The DSN without its password, for messages.
        self.location = make_conninfo("", **{k: v for k, v in params.items() if k != "password"})
        params.setdefault("connect_timeout", "10")
        if self.read_only:
            options = str(params.get("options") or "")
            params["options"] = (options + " -c default_transaction_read_only=on").strip()
        try:
            self._con = psycopg.connect(make_conninfo("", **params), autocommit=False)
        except psycopg.Error as exc:
            raise DataSourceError(
                f"cannot connect to PostgreSQL at {self.location}: {_first_line(exc)}",
                hint="check that the server runs and the DSN is right",
            ) from None
        self._con.read_only = self.read_only
        self._lock = threading.Lock()
        if self.read_only:
            self._limit_temp_files(limit)

    def _limit_temp_files(self, limit: int) -> None:
        """``temp_file_limit`` for this session, where the role may set it (a superuser setting)."""
        try:
            with self._con.cursor() as cursor:
                cursor.execute(f"SET temp_file_limit = '{max(1, limit // 1024)}kB'")
            self._con.commit()
        except psycopg.Error:
            self._rollback()

    @property
    def connection(self) -> psycopg.Connection:
        """The raw psycopg connection (for trusted bulk loading)."""
        return self._con

    def execute(self, sql: str, params: Sequence[Any] | None = None, *, timeout_s: float | None = None):
        """Run one statement with ``?`` placeholders bound to ``params``."""
        from pimento.engines.base import Result

        values = list(params) if params is not None else []
        if self.read_only and not _reads_only(sql):
            raise EngineQueryError(
                "PostgreSQL",
                "refused before sending: not a SELECT or WITH statement",
                public=EngineQueryError.READ_ONLY_MESSAGE,
                hint="private data is never modified by Pimento",
            )
        query, count = to_pyformat(sql)
        if count != len(values):
            raise EngineError(f"PostgreSQL: the statement has {count} ? placeholder(s) but {len(values)} parameter(s) were given")
        timeout = timeout_s if timeout_s is not None else self.timeout_s
        with self._lock:
            try:
                with self._con.cursor() as cursor:
                    # Milliseconds; 0 disables the timeout. SET LOCAL ends with the transaction.
                    ms = max(1, int(timeout * 1000)) if timeout is not None else 0
                    cursor.execute(f"SET LOCAL statement_timeout = {ms}")
                    # binary=True forces the extended protocol: one statement, never a script.
                    cursor.execute(query if count else sql, values if count else None, binary=True)
                    columns = tuple(d.name for d in cursor.description) if cursor.description else ()
                    rows = tuple(tuple(r) for r in cursor.fetchall()) if cursor.description else ()
                if self.read_only:
                    self._con.rollback()
                else:
                    self._con.commit()
            except pg_errors.QueryCanceled as exc:
                self._rollback()
                timed_out = "statement timeout" in str(exc)
                what = f"timed out after {timeout} s" if timed_out else "was cancelled"
                raise QueryTimeout(
                    f"PostgreSQL: statement {what}",
                    hint="raise database.timeout_s in pimento.toml" if timed_out else None,
                ) from exc
            except pg_errors.ReadOnlySqlTransaction as exc:
                self._rollback()
                raise EngineQueryError(
                    "PostgreSQL",
                    _first_line(exc),
                    public=EngineQueryError.READ_ONLY_MESSAGE,
                    hint="private data is never modified by Pimento",
                ) from exc
            except psycopg.Error as exc:
                self._rollback()
                if self._con.closed:
                    raise DataSourceError(f"PostgreSQL: connection lost: {_first_line(exc)}") from exc
                raise EngineQueryError("PostgreSQL", _first_line(exc)) from exc
        return Result(columns, rows)

    def _rollback(self) -> None:
        try:
            self._con.rollback()
        except psycopg.Error:
            pass

    def cancel(self) -> None:
        """Ask the server to cancel the running statement (no-op when none runs); thread-safe."""
        self._con.cancel()

    def introspect(self) -> Catalog:
        """Base tables of the current schema with NOT NULL, primary/unique keys, foreign keys and comments."""
        rows = self.execute(
            "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
            "col_description(c.oid, a.attnum), obj_description(c.oid, 'pg_class') "
            "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace ns ON ns.oid = c.relnamespace "
            "WHERE ns.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition "
            "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY c.relname, a.attnum"
        ).rows
        columns: dict[str, list[Column]] = {}
        table_comments: dict[str, str] = {}  # COMMENT ON TABLE / COLUMN: the schema's own words (empty: none)
        for table, column, raw, notnull, comment, table_comment in rows:
            columns.setdefault(table, []).append(Column(column, normalize_type(raw), raw, not notnull, comment or None))
            if table_comment:
                table_comments[table] = table_comment
        constraints = self.execute(
            "SELECT cl.relname, con.contype, "
            "ARRAY(SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY k(n, i) "
            "      JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n ORDER BY k.i), "
            "fcl.relname, "
            "ARRAY(SELECT a.attname::text FROM unnest(con.confkey) WITH ORDINALITY k(n, i) "
            "      JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n ORDER BY k.i), "
            "fns.nspname = current_schema() "
            "FROM pg_constraint con JOIN pg_class cl ON cl.oid = con.conrelid "
            "JOIN pg_namespace ns ON ns.oid = cl.relnamespace "
            "LEFT JOIN pg_class fcl ON fcl.oid = con.confrelid "
            "LEFT JOIN pg_namespace fns ON fns.oid = fcl.relnamespace "
            "WHERE ns.nspname = current_schema() AND con.contype IN ('p', 'u', 'f') "
            "ORDER BY cl.relname, con.conname"
        ).rows
        indexes = self.execute(
            "SELECT t.relname, ARRAY(SELECT a.attname::text FROM unnest(ix.indkey::int2[]) WITH ORDINALITY k(n, i) "
            "      JOIN pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = k.n "
            "      WHERE k.i <= ix.indnkeyatts ORDER BY k.i), ix.indnkeyatts "
            "FROM pg_index ix JOIN pg_class t ON t.oid = ix.indrelid "
            "JOIN pg_namespace ns ON ns.oid = t.relnamespace "
            "WHERE ns.nspname = current_schema() AND ix.indisunique AND NOT ix.indisprimary "
            "AND ix.indexprs IS NULL AND ix.indpred IS NULL ORDER BY t.relname, ix.indexrelid"
        ).rows
        pks: dict[str, tuple[str, ...]] = {}
        uniques: dict[str, list[tuple[str, ...]]] = {}
        fks: list[ForeignKey] = []
        for table, kind, cols, ref_table, ref_cols, same_schema in constraints:
            cols = tuple(cols)
            if kind == "p":
                pks[table] = cols
            elif kind == "u":
                if cols not in uniques.setdefault(table, []):
                    uniques[table].append(cols)
            elif same_schema and ref_table in columns:
                fk = ForeignKey(table, cols, ref_table, tuple(ref_cols))
                if fk not in fks:
                    fks.append(fk)
        for table, cols, nkey in indexes:
            cols = tuple(cols)
            if len(cols) == nkey and cols not in uniques.setdefault(table, []):
                uniques[table].append(cols)
        tables = []
        for name, cols in columns.items():
            pk = pks.get(name, ())
            unique = tuple(u for u in uniques.get(name, ()) if set(u) != set(pk))
            tables.append(Table(name, tuple(cols), pk, unique, True, table_comments.get(name)))
        return Catalog(tuple(tables), tuple(fks))

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> PostgresEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_LEADING = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/|\()*", re.DOTALL)


def _reads_only(sql: str) -> bool:
    """Whether the statement starts with SELECT or WITH (after blanks, comments and parentheses)."""
    leading = _LEADING.match(sql)  # always matches (possibly the empty prefix)
    rest = sql[leading.end() if leading else 0:]
    word = re.match(r"[A-Za-z]+", rest)
    return word is not None and word.group(0).upper() in ("SELECT", "WITH")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
