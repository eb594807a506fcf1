"""Which base columns an analyst query reads and returns (lineage), and the table rewrite.

The analyst may send any single query the engine runs (SELECT, set operations, CTEs,
subqueries, aggregates, window functions). This module

* refuses anything else: several statements, DML/DDL, table functions (``read_csv``),
  tables outside the catalog or in another schema, names with the compiler's ``__p_`` prefix,
  and every function outside :data:`CI_FUNCTIONS` (an allow-list: aggregates, window functions
  and deterministic scalar functions of their arguments; refused are in particular those that
  read the server, ``current_setting()``, ``version()``, ``current_database()``, its files or
  its clock);
* finds every base column the query *references* (select list, WHERE, JOIN, GROUP BY, ...)
  using sqlglot's ``qualify`` and scopes, and per output column the base columns it
  *returns* (for the report);
* rewrites each base-table reference to the authorized view of that table.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, traverse_scope

from pimento.errors import Highlight, SqlError
from pimento.schema import Catalog
from pimento.sql.quote import quote_identifier

__all__ = ["CI_FUNCTIONS", "AnalyzedQuery", "analyze_query", "qualifier_schema", "qualify_query"]

_PREFIX = "__p_"

#: The functions an analyst query may call (names as sqlglot writes them, lower-case: a function
#: sqlglot knows by its own name, e.g. ``STRFTIME`` is ``time_to_str``, anything else as written).
#: Each is a function of its arguments alone: nothing that reads the server (settings, version,
#: database or user names, files, the environment, the clock), draws randomness, sleeps or raises
#: on request. Boolean connectives (``AND``, ``OR``) are operators and always allowed.
CI_FUNCTIONS: frozenset[str] = frozenset({
    # syntax that sqlglot represents as a function
    "case", "if", "cast", "try_cast", "coalesce", "nullif", "exists", "extract", "greatest", "least",
    # aggregates
    "count", "count_if", "sum", "avg", "min", "max", "median", "stddev", "stddev_pop", "stddev_samp",
    "variance", "variance_pop", "var_samp", "var_pop", "any_value", "first", "last", "array_agg", "group_concat",
    "string_agg", "list", "percentile_cont", "percentile_disc", "quantile_cont", "quantile_disc", "mode",
    "logical_and", "logical_or", "bool_and", "bool_or", "corr", "covar_pop", "covar_samp", "approx_distinct",
    # window functions
    "row_number", "rank", "dense_rank", "ntile", "lag", "lead", "first_value", "last_value", "nth_value",
    "percent_rank", "cume_dist",
    # text
    "lower", "upper", "length", "char_length", "character_length", "trim", "ltrim", "rtrim", "substring", "substr",
    "concat", "concat_ws", "replace", "left", "right", "reverse", "str_position", "strpos", "instr", "split_part",
    "pad", "lpad", "rpad", "starts_with", "ends_with", "contains", "repeat", "initcap",
    # numbers
    "abs", "round", "floor", "ceil", "ceiling", "trunc", "sqrt", "ln", "log", "log10", "log2", "exp", "power", "pow",
    "sign", "mod", "div", "pi",
    # dates and times (of a value, never of the clock)
    "year", "month", "day", "quarter", "week", "day_of_week", "day_of_year", "dayofweek", "dayofyear", "hour",
    "minute", "second", "date", "datetime", "time", "date_trunc", "timestamp_trunc", "date_part", "datepart",
    "date_diff", "datediff", "date_add", "date_sub", "time_to_str", "strftime", "to_char", "last_day",
    "date_from_parts", "make_date", "julianday", "epoch",
})
_ALLOWED_SCHEMAS = {"", "main"}


@dataclass(frozen=True)
class AnalyzedQuery:
    """A validated analyst query with its lineage."""

    sql: str
    tree: exp.Query
    #: relation (catalog spelling) -> referenced column names (catalog spelling).
    referenced: dict[str, frozenset[str]]
    #: output column name -> base columns (relation, column) it is computed from.
    returned: tuple[tuple[str, frozenset[tuple[str, str]]], ...]

    def rewrite(self, table_name: dict[str, str]) -> tuple[str, list[str], bool]:
        """The query with each base table replaced by ``table_name[relation]``.

        Returns the body (without its WITH clause), its own CTEs rendered as
        ``name AS (...)`` in the query's dialect, and whether its WITH was RECURSIVE.
        """
        tree = self.tree.copy()
        for table in _base_tables(tree):
            relation = table.meta["pimento_relation"]
            alias = table.alias or table.name
            new = exp.Table(this=exp.to_identifier(table_name[relation]))
            new.set("alias", exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))
            if table.args.get("alias") is not None and table.args["alias"].columns:
                new.args["alias"].set("columns", table.args["alias"].columns)
            table.replace(new)
        with_ = tree.args.get("with_")
        ctes: list[str] = []
        recursive = False
        if with_ is not None:
            ctes = [cte.sql(self._dialect) for cte in with_.expressions]
            recursive = bool(with_.args.get("recursive"))
            tree.set("with_", None)
        return tree.sql(self._dialect), ctes, recursive

    @property
    def _dialect(self) -> str:
        return self.tree.meta.get("pimento_dialect", "duckdb")


def _base_tables(tree: exp.Expr) -> list[exp.Table]:
    return [t for t in tree.find_all(exp.Table) if "pimento_relation" in t.meta]


_CACHE: OrderedDict[tuple[str, str, int], AnalyzedQuery] = OrderedDict()


def qualify_query(tree: exp.Query, catalog: Catalog, dialect: str) -> exp.Query:
    """A copy of an analyzed query's tree with every column qualified by its source (sqlglot's ``qualify``).

    Base tables resolve as :func:`analyze_query` found them (the catalog's table, whatever the
    case the query wrote it in): in the copy each is named by the catalog's exact spelling, quoted,
    and keeps the name the query wrote as its alias, so columns qualified by that name still find it.
    Columns resolve by the dialect's own rules against :func:`qualifier_schema` (on PostgreSQL
    ``"Name"`` names the column ``Name`` and ``name`` the column ``name``, as the engine reads them).

    Raises:
        OptimizeError, SqlglotError: a column that resolves to no source, or to several.
    """
    copy = tree.copy()
    for table in _base_tables(copy):
        if not table.alias:
            table.set("alias", exp.TableAlias(this=table.this.copy()))
        table.set("this", exp.to_identifier(table.meta["pimento_relation"], quoted=True))
    return qualify(copy, schema=qualifier_schema(catalog, dialect), dialect=dialect, validate_qualify_columns=True,
                   quote_identifiers=False, expand_alias_refs=True)


def qualifier_schema(catalog: Catalog, dialect: str | None = None) -> dict[str, object]:
    """The catalog as sqlglot's qualifier reads it in ``dialect``.

    With a dialect, every name is a quoted identifier of that dialect (:func:`pimento.sql.quote.quote_identifier`):
    the catalog holds the names the engine reports, exact, so sqlglot must not fold them as it
    folds unquoted names. On PostgreSQL a table created as ``"Patient"`` is named ``Patient``, and
    folding it to ``patient`` would make every query that names it (``FROM "Patient"``) unresolvable.
    Case-insensitive dialects still compare quoted names their own way (DuckDB and SQLite fold
    ASCII letters only, as the engines do; Spark folds all). Without a dialect the names are given
    unquoted, in the catalog's spelling, and sqlglot folds them as unquoted names (the policy
    checks' canonical texts, where both sides are folded alike).
    """

    def name(text: str) -> str:
        return text if dialect is None else quote_identifier(text, dialect)

    return {name(t.name): {name(c.name): (c.raw_type or "TEXT") for c in t.columns} for t in catalog.tables}


def analyze_query(sql: str, catalog: Catalog, *, dialect: str = "duckdb") -> AnalyzedQuery:
    """Validate ``sql`` and compute its lineage (cached per text, dialect and catalog)."""
    key = (sql, dialect, id(catalog))
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit
    result = _analyze(sql, catalog, dialect)
    _CACHE[key] = result
    if len(_CACHE) > 256:
        _CACHE.popitem(last=False)
    return result


def _error(sql: str, message: str, node: exp.Expr | None = None, hint: str | None = None) -> SqlError:
    highlight = None
    if node is not None:
        text = node.sql() if not isinstance(node, exp.Identifier) else node.name
        start = sql.lower().find(text.lower()) if text else -1
        if start >= 0:
            highlight = Highlight(sql, start, start + len(text))
    return SqlError(message, highlight=highlight, hint=hint)


def _written_name(sql: str, node: exp.Func, name: str) -> str:
    """The function's name as the query wrote it (``version``, which sqlglot calls ``current_version``)."""
    start, end = node.meta.get("start"), node.meta.get("end")
    if isinstance(start, int) and isinstance(end, int) and 0 <= start <= end < len(sql):
        written = sql[start:end + 1]
        if written.replace("_", "").isalnum():
            return written
    return name


def _analyze(sql: str, catalog: Catalog, dialect: str) -> AnalyzedQuery:
    if not isinstance(sql, str) or not sql.strip():
        raise SqlError("the query is empty")
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        raise SqlError(f"the query does not parse: {first.get('description', exc)}") from None
    if len(statements) != 1:
        raise SqlError(
            f"send exactly one query, not {len(statements)} statements",
            hint="CI mode runs a single SELECT; remove the ';' and what follows",
        )
    tree = statements[0]
    if not isinstance(tree, exp.Query):
        raise SqlError(f"only a query (SELECT) can be authorized, not {tree.key.upper()}")
    for node in tree.walk():
        if isinstance(node, (exp.Insert, exp.Update, exp.Delete, exp.Drop, exp.Create, exp.Alter, exp.Command)):
            raise _error(sql, f"{node.key.upper()} is not allowed in an analyst query", node)
        if isinstance(node, exp.Identifier) and node.name.lower().startswith(_PREFIX):
            raise _error(sql, f"names starting with {_PREFIX!r} are reserved", node)
        if isinstance(node, exp.Placeholder) or isinstance(node, exp.Parameter):
            raise _error(sql, "parameters are not allowed in an analyst query", node)
        if isinstance(node, exp.Func) and not isinstance(node, exp.Connector):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            if name not in CI_FUNCTIONS:
                raise _error(
                    sql, f"function {_written_name(sql, node, name)}() is not allowed in an analyst query", node,
                    hint="call aggregates, window functions and functions of the row's values only "
                    "(docs/authorize.md lists them)",
                )
    tree.meta["pimento_dialect"] = dialect

    names = {t.name.lower(): t for t in catalog.tables}
    try:
        scopes = traverse_scope(tree)
    except (OptimizeError, SqlglotError) as exc:
        raise SqlError(f"the query cannot be resolved: {exc}") from None
    seen: set[int] = set()
    for scope in scopes:
        for table in scope.tables:
            seen.add(id(table))
            source = scope.sources.get(table.alias_or_name)
            if isinstance(source, Scope):
                continue  # a CTE reference
            if not isinstance(table.this, exp.Identifier):
                raise _error(sql, f"table functions are not allowed ({table.sql(dialect)})", table)
            if (table.db or "").lower() not in _ALLOWED_SCHEMAS or table.catalog:
                raise _error(sql, f"table {table.sql(dialect)} is outside the database's main schema", table)
            found = names.get(table.name.lower())
            if found is None:
                raise _error(sql, f"unknown table {table.name!r}", table,
                             hint=f"tables: {', '.join(catalog.table_names)}")
            table.meta["pimento_relation"] = found.name
    for table in tree.find_all(exp.Table):
        if id(table) not in seen:
            raise _error(sql, f"unsupported table reference {table.sql(dialect)}", table)

    try:
        resolved = qualify_query(tree, catalog, dialect)
        qscopes = traverse_scope(resolved)
    except (OptimizeError, SqlglotError) as exc:
        raise SqlError(f"the query cannot be resolved against the schema: {exc}") from None
    referenced: dict[str, set[str]] = {}
    for scope in qscopes:
        for table in scope.tables:
            source = scope.sources.get(table.alias_or_name)
            if isinstance(source, exp.Table) and source.name.lower() in names:
                referenced.setdefault(names[source.name.lower()].name, set())
        for col in scope.columns:
            source = scope.sources.get(col.table)
            if isinstance(source, exp.Table) and source.name.lower() in names:
                t = names[source.name.lower()]
                referenced.setdefault(t.name, set()).add(t.column(col.name).name)
    returned = _returned(resolved, names)
    return AnalyzedQuery(sql, tree, {k: frozenset(v) for k, v in referenced.items()}, returned)


def _returned(qualified: exp.Query, names: dict[str, Any]) -> tuple[tuple[str, frozenset[tuple[str, str]]], ...]:
    """Per output column, the base columns it depends on (following CTEs and subqueries)."""
    scopes = {id(s.expression): s for s in traverse_scope(qualified)}

    def deps(node: exp.Expr, scope: Scope, depth: int = 0) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        if depth > 32:
            return out
        for col in node.find_all(exp.Column):
            source = scope.sources.get(col.table)
            if isinstance(source, exp.Table) and source.name.lower() in names:
                t = names[source.name.lower()]
                out.add((t.name, t.column(col.name).name))
            elif isinstance(source, Scope) and isinstance(source.expression, exp.Select):
                for sel in source.expression.selects:
                    if sel.alias_or_name.lower() == col.name.lower():
                        out |= deps(sel, source, depth + 1)
            elif isinstance(source, Scope):  # set operation: every branch
                for branch in source.expression.find_all(exp.Select):
                    bscope = scopes.get(id(branch))
                    if bscope is None:
                        continue
                    for sel in branch.selects:
                        if sel.alias_or_name.lower() == col.name.lower():
                            out |= deps(sel, bscope, depth + 1)
        return out

    root = scopes.get(id(qualified))
    result = []
    selects = qualified.selects if isinstance(qualified, exp.Query) else []
    for i, sel in enumerate(selects):
        name = sel.alias_or_name or f"col{i}"
        branch_scope = root
        if branch_scope is None or not isinstance(qualified, exp.Select):
            first = qualified.find(exp.Select)
            branch_scope = scopes.get(id(first)) if first is not None else None
        result.append((name, frozenset(deps(sel, branch_scope) if branch_scope else set())))
    return tuple(result)
