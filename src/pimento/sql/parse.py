"""Parse SQL into a :class:`~pimento.sql.ir.CountQuery`, or say precisely why it is outside the class.

The DP-compatible class: ``COUNT(*)``, ``COUNT(col)`` or ``COUNT(DISTINCT col)`` over equi-joins
(``JOIN ... ON`` / ``USING`` / ``WHERE a.x = b.y``) of distinct tables, with selection predicates
that each mention a single relation (comparisons, IN lists, BETWEEN, LIKE, IS NULL, AND/OR/NOT).

Everything else raises :class:`~pimento.errors.UnsupportedQuery` whose ``construct`` is one of
:data:`REJECTION_REASONS` and whose highlight points at the offending text.

Semi-joins: ``x IN (SELECT b.y FROM B WHERE <predicate on B>)`` is rewritten to a join with B when
the rewrite preserves the count:

* the outer aggregate is ``COUNT(DISTINCT col)``: joining with B can only duplicate rows, and
  duplicates do not change a distinct count; or
* the outer query reads a single table with a one-column primary key and counts ``*`` (or a
  NOT NULL column): it becomes ``COUNT(DISTINCT pk)`` over the join.

Other subqueries (NOT IN, EXISTS, scalar subqueries, nested or multi-table subqueries) are rejected.

Selections are checked against the allow-list of :mod:`pimento.sql.allowlist` (functions that
cannot fail on the data, reveal it, or vary between statements), and every relation must be
joined to the others (a cross product is refused). SQL text longer than ``max_chars`` or nested
deeper than :data:`MAX_NESTING` is a :class:`~pimento.errors.SqlError` before sqlglot sees it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import cast

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from pimento.config import MAX_SQL_CHARS
from pimento.errors import CatalogError, Highlight, Refusal, SqlError, UnsupportedQuery
from pimento.schema import Catalog
from pimento.sql.allowlist import SELECTION_REASONS, check_selection, column_family, unrunnable_character
from pimento.sql.ir import (
    AggregateKind,
    AggregateQuery,
    Attribute,
    Count,
    CountQuery,
    JoinCondition,
    Relation,
    Selection,
    quoted_if_needed,
)
from pimento.sql.join_types import JOIN_TYPES_CONSTRUCT, check_join_types

__all__ = ["MAX_NESTING", "REJECTION_REASONS", "parse_aggregate_query", "parse_count_query"]

#: Deepest nesting accepted: parentheses in the text, and levels of the parsed tree. Deeper
#: input is refused with a SqlError instead of exhausting Python's recursion limit.
MAX_NESTING = 64
_MAX_TREE_DEPTH = 4 * MAX_NESTING

#: Stable identifiers of the constructs outside the class, with a human description.
REJECTION_REASONS: dict[str, str] = {
    "multiple_statements": "more than one SQL statement",
    "not_select": "not a SELECT statement",
    "set_operation": "set operation (UNION / INTERSECT / EXCEPT)",
    "cte": "common table expression (WITH)",
    "group_by": "GROUP BY",
    "having": "HAVING",
    "order_by": "ORDER BY",
    "limit": "LIMIT / OFFSET",
    "select_distinct": "SELECT DISTINCT",
    "window": "window function",
    "multiple_outputs": "more than one output column",
    "not_count": "output is not a COUNT aggregate",
    "other_aggregate": "aggregate other than COUNT (SUM, AVG, MIN, MAX, ...)",
    "count_expression": "COUNT over an expression rather than *, a column, or DISTINCT column",
    "derived_table": "derived table (subquery in FROM)",
    "table_function": "table function or VALUES in FROM",
    "outer_join": "outer join (LEFT / RIGHT / FULL)",
    "natural_join": "NATURAL JOIN",
    "non_equi_join": "join condition that is not an equality of two columns",
    "cross_relation_predicate": "predicate spanning several relations (other than an equi-join)",
    "self_join": "self-join (a table used twice)",
    "subquery": "subquery in a predicate (EXISTS, scalar, NOT IN, or not rewritable to a join)",
    "no_from": "no FROM clause",
    JOIN_TYPES_CONSTRUCT: "join between columns of different types (or with a collation)",
    "cross_product": "cross product (a relation joined to the others by no equality)",
    **SELECTION_REASONS,
}


def parse_count_query(
    sql: str, catalog: Catalog, *, dialect: str | None = None, max_chars: int = MAX_SQL_CHARS
) -> CountQuery:
    """Parse ``sql`` into a CountQuery resolved against ``catalog``.

    Args:
        sql: one SELECT statement.
        catalog: the database's catalog (resolves unqualified columns, table spelling).
        dialect: sqlglot dialect of ``sql`` (default: sqlglot's generic dialect, which reads
            DuckDB, SQLite and PostgreSQL counting queries alike).
        max_chars: longest text accepted (``[database] max_sql_chars`` of pimento.toml).

    Raises:
        SqlError: the text does not parse, is too long or too deeply nested, or names an
            unknown or ambiguous column.
        CatalogError: an unknown table.
        UnsupportedQuery: valid SQL outside the DP-compatible class (``.construct`` says which).

    >>> from pimento.schema import Catalog, Table, Column
    >>> cat = Catalog((Table("t", (Column("a", "integer"),)),))
    >>> str(parse_count_query("select count(*) from t where a > 1", cat))
    'SELECT COUNT(*) FROM t WHERE t.a > 1'
    """
    _check_size(sql, max_chars)
    try:
        return check_join_types(_Parser(sql, catalog, dialect).run(), catalog)
    except RecursionError:
        raise _too_deep("its expressions exhaust the parser's recursion") from None


def parse_aggregate_query(
    sql: str, catalog: Catalog, *, dialect: str | None = None, max_chars: int = MAX_SQL_CHARS
) -> AggregateQuery:
    """Parse a grouped COUNT, or a SUM or AVG of a column, into an :class:`~pimento.sql.ir.AggregateQuery`.

    The accepted shape is ``SELECT g1, ..., AGG FROM <body> [GROUP BY g1, ...]`` where the body
    is what :func:`parse_count_query` accepts, every ``g`` is a plain column, the non-aggregate
    outputs are exactly the GROUP BY columns, and AGG is ``COUNT(...)`` as there, or ``SUM(col)``
    / ``AVG(col)``. Subqueries (the ``IN (SELECT ...)`` rewrite) are refused here. Same errors
    as :func:`parse_count_query`; a plain scalar COUNT parses too (no group, kind COUNT).

    >>> from pimento.schema import Catalog, Table, Column
    >>> cat = Catalog((Table("t", (Column("a", "integer"), Column("g", "text"))),))
    >>> str(parse_aggregate_query("select g, sum(a) from t group by g", cat))
    'SELECT t.g, SUM(t.a) FROM t GROUP BY t.g'
    """
    _check_size(sql, max_chars)
    parser = _AggregateParser(sql, catalog, dialect)
    try:
        body = check_join_types(parser.run(), catalog)
    except RecursionError:
        raise _too_deep("its expressions exhaust the parser's recursion") from None
    return parser.finish(body)


# --------------------------------------------------------------------------- internals


def _check_size(sql: str, max_chars: int) -> None:
    """Refuse a text longer than ``max_chars`` or nested deeper than :data:`MAX_NESTING`, before parsing."""
    if len(sql) > max_chars:
        raise SqlError(
            f"the SQL text has {len(sql):,} characters, more than the {max_chars:,} accepted",
            hint="shorten the query (the limit is [database] max_sql_chars in pimento.toml)",
        )
    depth = _parenthesis_depth(sql)
    if depth > MAX_NESTING:
        raise _too_deep(f"{depth} levels of parentheses, at most {MAX_NESTING} are accepted")


@dataclass
class _Scope:
    """Relations in FROM, keyed by lower-case alias."""

    relations: dict[str, Relation] = field(default_factory=dict)

    def add(self, relation: Relation) -> None:
        self.relations[relation.alias.lower()] = relation


class _Parser:
    def __init__(self, sql: str, catalog: Catalog, dialect: str | None):
        self.sql = sql
        self.catalog = catalog
        self.dialect = dialect
        self.scope = _Scope()
        self.joins: list[JoinCondition] = []
        self.selections: dict[str, list[exp.Expr]] = {}
        self._pending_semi_joins: list[exp.In] = []
        self._sources: dict[str, exp.Expr] = {}

    # ------------------------------------------------------------------ errors
    def _highlight(self, node: exp.Expr | None, keyword: str | None = None) -> Highlight | None:
        if keyword:
            match = re.search(keyword, self.sql, flags=re.IGNORECASE)
            if match:
                return Highlight(self.sql, match.start(), match.end())
        if node is None:
            return None
        starts, ends = [], []
        for sub in node.walk():
            meta = sub.meta if sub is not None else None
            if meta and "start" in meta and "end" in meta:
                starts.append(meta["start"])
                ends.append(meta["end"] + 1)
        if not starts:
            return None
        start, end = min(starts), max(ends)
        if isinstance(node, exp.Func) and not isinstance(node, exp.Column):
            # Reach back over "NAME(" to the function's name (sqlglot keeps offsets of tokens only).
            match = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(\s*$", self.sql[:start])
            if match:
                start = match.start(1)
            empty_call = re.match(r"\s*\(\s*\)", self.sql[end:])
            if empty_call and "(" not in self.sql[start:end]:
                end += empty_call.end()
        # Extend to a closing parenthesis that belongs to the node (e.g. COUNT(...)).
        depth = self.sql[start:end].count("(") - self.sql[start:end].count(")")
        while depth > 0 and end < len(self.sql):
            if self.sql[end] == ")":
                depth -= 1
            elif self.sql[end] == "(":
                depth += 1
            end += 1
        return Highlight(self.sql, start, end)

    def _reject(self, construct: str, node: exp.Expr | None = None, *, keyword: str | None = None, detail: str = "") -> UnsupportedQuery:
        what = REJECTION_REASONS[construct]
        message = f"outside the DP-compatible counting class: {what}"
        if detail:
            message += f" ({detail})"
        return UnsupportedQuery(
            construct,
            message,
            highlight=self._highlight(node, keyword),
            hint="Pimento releases COUNT queries over equi-joins with single-relation filters; in mode dp also GROUP BY, "
            "SUM and AVG (docs/grouped.md)",
        )

    # ------------------------------------------------------------------ entry
    def run(self) -> CountQuery:
        if not self.sql or not self.sql.strip():
            raise SqlError("empty SQL text", hint="pass one SELECT COUNT(...) statement")
        try:
            statements = [s for s in sqlglot.parse(self.sql, read=self.dialect) if s is not None]
        except (ParseError, TokenError) as exc:
            raise self._parse_error(exc) from None
        for statement in statements:
            if _tree_depth(statement) > _MAX_TREE_DEPTH:
                raise _too_deep(f"its expressions nest more than {_MAX_TREE_DEPTH} levels")
        if len(statements) != 1:
            if not statements:
                raise SqlError("empty SQL text", hint="pass one SELECT COUNT(...) statement")
            raise self._reject("multiple_statements", statements[1])
        tree = statements[0]
        if isinstance(tree, (exp.Union, exp.Intersect, exp.Except)):
            raise self._reject("set_operation", None, keyword=r"\b(UNION|INTERSECT|EXCEPT)\b")
        if not isinstance(tree, exp.Select):
            raise self._reject("not_select", tree, detail=type(tree).__name__.upper())
        return self._select(tree)

    def _parse_error(self, exc: Exception) -> SqlError:
        errors = getattr(exc, "errors", None) or []
        highlight = None
        message = str(exc).splitlines()[0] if str(exc) else "cannot parse SQL"
        if errors:
            first = errors[0]
            message = first.get("description") or message
            start = len(first.get("start_context") or "")
            text = first.get("highlight") or ""
            offset = self.sql.find((first.get("start_context") or "") + text)
            if offset >= 0:
                highlight = Highlight(self.sql, offset + start, offset + start + max(1, len(text)))
        return SqlError(f"SQL does not parse: {message}", highlight=highlight)

    # ------------------------------------------------------------------ SELECT
    def _select(self, select: exp.Select) -> CountQuery:
        args = select.args
        if args.get("with_") or args.get("with"):
            raise self._reject("cte", None, keyword=r"\bWITH\b")
        if args.get("group"):
            raise self._reject("group_by", args["group"], keyword=r"\bGROUP\s+BY\b")
        if args.get("having"):
            raise self._reject("having", args["having"], keyword=r"\bHAVING\b")
        if args.get("order"):
            raise self._reject("order_by", args["order"], keyword=r"\bORDER\s+BY\b")
        if args.get("limit") or args.get("offset") or args.get("fetch"):
            raise self._reject("limit", None, keyword=r"\b(LIMIT|OFFSET|FETCH)\b")
        if args.get("distinct"):
            raise self._reject("select_distinct", None, keyword=r"\bSELECT\s+DISTINCT\b")
        if select.find(exp.Window):
            raise self._reject("window", select.find(exp.Window))
        if not args.get("from_") and not args.get("from"):
            raise self._reject("no_from", select)

        self._from(select)
        count_node = self._output(select)
        where = args.get("where")
        if where is not None:
            for conjunct in _conjuncts(where.this):
                self._condition(conjunct, in_on=False)
        count = self._count(count_node)
        count = self._semi_joins(count)
        return self._build(count)

    def _output(self, select: exp.Select) -> exp.Count:
        outputs = select.expressions
        if len(outputs) != 1:
            raise self._reject("multiple_outputs", outputs[1] if len(outputs) > 1 else select)
        node = outputs[0]
        if isinstance(node, exp.Alias):
            node = node.this
        if isinstance(node, exp.Count):
            return node
        agg = node.find(exp.AggFunc)
        if agg is not None and not isinstance(agg, exp.Count):
            raise self._reject("other_aggregate", agg, detail=type(agg).__name__.upper())
        if agg is not None:
            raise self._reject("count_expression", node, detail="arithmetic over COUNT")
        raise self._reject("not_count", node)

    # ------------------------------------------------------------------ FROM
    def _from(self, select: exp.Select) -> None:
        from_ = select.args.get("from_") or select.args.get("from")
        assert from_ is not None, "callers reject a SELECT without FROM first"
        self._add_source(from_.this)
        for extra in from_.expressions or []:  # old-style comma lists on some versions
            self._add_source(extra)
        for join in select.args.get("joins") or []:
            side = (join.args.get("side") or "").upper()
            kind = (join.args.get("kind") or "").upper()
            method = (join.args.get("method") or "").upper()
            if side in ("LEFT", "RIGHT", "FULL") or kind in ("OUTER", "FULL"):
                raise self._reject(
                    "outer_join", join, keyword=r"\b(LEFT|RIGHT|FULL)(\s+OUTER)?\s+JOIN\b", detail=f"{side or kind} JOIN"
                )
            if method == "NATURAL" or kind == "NATURAL":
                raise self._reject("natural_join", join)
            if kind in ("SEMI", "ANTI", "ASOF", "LATERAL") or side in ("SEMI", "ANTI"):
                raise self._reject("non_equi_join", join, detail=f"{kind or side} JOIN")
            before = dict(self.scope.relations)
            relation = self._add_source(join.this)
            on = join.args.get("on")
            using = join.args.get("using")
            if on is not None:
                for conjunct in _conjuncts(on):
                    self._condition(conjunct, in_on=True)
            if using:
                for ident in using:
                    name = ident.name
                    owners = [r for r in before.values() if self.catalog.table(r.table).has_column(name)]
                    if len(owners) != 1:
                        raise SqlError(
                            f"USING ({name}) matches {len(owners)} earlier relations",
                            highlight=self._highlight(ident),
                            hint="write the join as ON a.col = b.col",
                        )
                    left = Attribute(owners[0].alias, self.catalog.table(owners[0].table).column(name).name)
                    right = Attribute(relation.alias, self.catalog.table(relation.table).column(name).name)
                    self.joins.append(JoinCondition(left, right))

    def _add_source(self, source: exp.Expr) -> Relation:
        if isinstance(source, exp.Subquery):
            raise self._reject("derived_table", source)
        if isinstance(source, (exp.Values, exp.Unnest, exp.Lateral)) or not isinstance(source, exp.Table):
            raise self._reject("table_function", source)
        if not isinstance(source.this, exp.Identifier):
            raise self._reject("table_function", source)
        try:
            table = self.catalog.table(source.name)
        except CatalogError as exc:
            raise CatalogError(exc.message, hint=exc.hint) from None
        alias = source.alias or table.name
        unrunnable = unrunnable_character(alias)
        if unrunnable is not None:  # the counted SQL names the alias: no engine would run it
            raise SqlError(f"the alias of {table.name} holds {unrunnable}", highlight=self._highlight(source))
        for existing in self.scope.relations.values():
            if existing.table.lower() == table.name.lower():
                raise self._reject("self_join", source, detail=f"table {table.name} appears twice")
        if alias.lower() in self.scope.relations:
            raise SqlError(f"alias {alias!r} is used twice", highlight=self._highlight(source))
        relation = Relation(alias, table.name)
        self.scope.add(relation)
        self._sources[alias.lower()] = source
        return relation

    # ------------------------------------------------------------------ predicates
    def _resolve(self, column: exp.Column) -> Attribute:
        name = column.name
        qualifier = column.table
        if qualifier:
            relation = self.scope.relations.get(qualifier.lower())
            if relation is None:
                # A qualifier may be the table name of an aliased relation.
                matches = [r for r in self.scope.relations.values() if r.table.lower() == qualifier.lower()]
                if len(matches) == 1:
                    relation = matches[0]
            if relation is None:
                raise SqlError(f"unknown relation {qualifier!r} in {column.sql()}", highlight=self._highlight(column))
            table = self.catalog.table(relation.table)
            if not table.has_column(name):
                raise SqlError(
                    f"relation {relation.alias} ({table.name}) has no column {name!r}",
                    highlight=self._highlight(column),
                    hint=_close(name, table.column_names),
                )
            return Attribute(relation.alias, table.column(name).name)
        owners = [r for r in self.scope.relations.values() if self.catalog.table(r.table).has_column(name)]
        if len(owners) == 1:
            return Attribute(owners[0].alias, self.catalog.table(owners[0].table).column(name).name)
        if not owners:
            raise SqlError(f"unknown column {name!r}", highlight=self._highlight(column))
        raise SqlError(
            f"ambiguous column {name!r}: it is in {', '.join(r.alias for r in owners)}",
            highlight=self._highlight(column),
            hint="qualify it with a relation alias",
        )

    def _columns_of(self, node: exp.Expr) -> list[tuple[exp.Column, Attribute]]:
        """Resolve every column reference in ``node`` (not descending into subqueries)."""
        out = []
        for column in list(node.find_all(exp.Column)):
            if column.find_ancestor(exp.Subquery, exp.Select) not in (None, node.find_ancestor(exp.Select)):
                continue
            if isinstance(column.this, exp.Star):
                continue
            try:
                out.append((column, self._resolve(column)))
            except SqlError:
                literal = self._double_quoted_string(column)
                if literal is None:
                    raise
                column.replace(literal)
        return out

    def _double_quoted_string(self, column: exp.Column) -> exp.Literal | None:
        """SQLite (and MySQL) read an unresolvable "double-quoted" identifier as a string literal."""
        ident = column.this
        if column.table or not isinstance(ident, exp.Identifier) or not ident.quoted:
            return None
        if self.dialect not in (None, "sqlite", "mysql"):
            return None
        return exp.Literal.string(ident.name)

    def _condition(self, node: exp.Expr, *, in_on: bool) -> None:
        for sub in node.walk():
            if isinstance(sub, (exp.Subquery, exp.Exists)) or (isinstance(sub, exp.Select) and sub is not node):
                if isinstance(node, exp.In) and node.args.get("query") is not None and not _has_not_above(node):
                    self._pending_semi_joins.append(node)
                    return
                if isinstance(node, exp.Not) and isinstance(node.this, exp.In):
                    detail = "NOT IN (SELECT ...) is an anti-join"
                elif isinstance(sub, exp.Exists) or node.find(exp.Exists):
                    detail = "EXISTS"
                else:
                    detail = "scalar subquery"
                raise self._reject("subquery", sub, detail=detail)
            if isinstance(sub, exp.AggFunc):
                raise self._reject("other_aggregate", sub, detail="aggregate in a predicate")
        resolved = self._columns_of(node)
        aliases = {attr.alias for _, attr in resolved}
        if (
            isinstance(node, exp.EQ)
            and isinstance(node.this, exp.Column)
            and isinstance(node.expression, exp.Column)
            and len(aliases) == 2
        ):
            left = self._resolve(node.this)
            right = self._resolve(node.expression)
            self.joins.append(JoinCondition(left, right))
            return
        if len(aliases) > 1:
            column_pair = all(isinstance(c, exp.Column) for c in (node.args.get("this"), node.args.get("expression")))
            if in_on and column_pair and isinstance(node, (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NEQ)):
                raise self._reject("non_equi_join", node)
            construct = "non_equi_join" if (in_on or column_pair) and not isinstance(node, (exp.Or, exp.Not)) else "cross_relation_predicate"
            raise self._reject(construct, node, detail=f"mentions {', '.join(sorted(aliases))}")
        target = next(iter(aliases)) if aliases else next(iter(self.scope.relations.values())).alias
        if self.dialect == "sqlite":
            node = self._sqlite_text_affinity(node)
        try:
            node = check_selection(node, self._family)
        except Refusal as refusal:
            keyword = None
            if self._highlight(refusal.node) is None and isinstance(refusal.node, exp.Func):
                keyword = r"\b" + re.escape(refusal.node.sql_name()) + r"\b"
            raise self._reject(refusal.construct, refusal.node, keyword=keyword, detail=refusal.detail) from None
        qualified = node.copy()
        for column in qualified.find_all(exp.Column):
            if isinstance(column.this, exp.Star):
                continue
            attr = self._resolve(column)
            column.set("table", quoted_if_needed(attr.alias))  # a keyword or odd name stays one identifier
            column.set("this", quoted_if_needed(attr.column))
        self.selections.setdefault(target, []).append(qualified)

    def _family(self, column: exp.Column) -> str:
        """The comparison family (:func:`~pimento.sql.allowlist.column_family`) of a column."""
        attr = self._resolve(column)
        table = self.catalog.table(self.scope.relations[attr.alias.lower()].table)
        col = table.column(attr.column)
        return column_family(col.type, col.raw_type)

    def _sqlite_text_affinity(self, node: exp.Expr) -> exp.Expr:
        """Make SQLite's comparison rule explicit: a TEXT-affinity column against a number compares text.

        SQLite applies the column's TEXT affinity to a numeric literal (``horsepower > 150`` with
        ``horsepower TEXT`` compares ``'130' > '150'`` as strings), while DuckDB and PostgreSQL refuse
        or cast the other way. Writing the literal as the string SQLite compares keeps the query's
        meaning on every engine (and lets it run on a DuckDB copy of the data).
        """
        comparisons = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
        node = node.copy()
        for cmp in list(node.find_all(*comparisons)):
            sides = (cmp.this, cmp.expression)
            for column, other in (sides, sides[::-1]):
                if isinstance(column, exp.Column) and self._has_text_affinity(column):
                    text = _sqlite_number_text(other)
                    if text is not None:
                        other.replace(exp.Literal.string(text))
        for member in list(node.find_all(exp.In)):
            if isinstance(member.this, exp.Column) and self._has_text_affinity(member.this):
                for item in list(member.expressions):
                    text = _sqlite_number_text(item)
                    if text is not None:
                        item.replace(exp.Literal.string(text))
        return node

    def _has_text_affinity(self, column: exp.Column) -> bool:
        try:
            attr = self._resolve(column)
        except SqlError:
            return False
        table = self.scope.relations[attr.alias.lower()].table if attr.alias.lower() in self.scope.relations else None
        if table is None:
            return False
        raw = (self.catalog.table(table).column(attr.column).raw_type or "").upper()
        # SQLite's affinity rules (section 3.1 of "Datatypes In SQLite"), in their order.
        if "INT" in raw:
            return False
        return any(k in raw for k in ("CHAR", "CLOB", "TEXT"))

    # ------------------------------------------------------------------ COUNT
    def _count(self, node: exp.Count) -> Count:
        inner = node.this
        if inner is None or isinstance(inner, exp.Star):
            return Count()
        if isinstance(inner, exp.Distinct):
            exprs = inner.expressions
            if len(exprs) != 1 or not isinstance(exprs[0], exp.Column):
                raise self._reject("count_expression", node, detail="DISTINCT over several columns or an expression")
            return Count(self._resolve(exprs[0]), distinct=True)
        if isinstance(inner, exp.Column) and isinstance(inner.this, exp.Star):
            return Count()
        if isinstance(inner, exp.Column):
            return Count(self._resolve(inner))
        raise self._reject("count_expression", node)

    def _semi_joins(self, count: Count) -> Count:
        for node in self._pending_semi_joins:
            count = self._semi_join(node, count)
        return count

    def _semi_join(self, node: exp.In, count: Count) -> Count:
        query = node.args["query"]
        sub = query.this if isinstance(query, exp.Subquery) else query
        if not isinstance(sub, exp.Select):
            raise self._reject("subquery", node, detail="IN over a set operation")
        outer = node.this
        if not isinstance(outer, exp.Column):
            raise self._reject("subquery", node, detail="IN subquery on an expression")
        outer_attr = self._resolve(outer)
        inner_ok = (
            len(sub.expressions) == 1
            and isinstance(_unalias(sub.expressions[0]), exp.Column)
            and not sub.args.get("joins")
            and not sub.args.get("group")
            and not sub.args.get("having")
            and not sub.args.get("limit")
            and not sub.args.get("order")
            and isinstance(getattr(sub.args.get("from_") or sub.args.get("from"), "this", None), exp.Table)
        )
        if not inner_ok:
            raise self._reject("subquery", node, detail="only IN (SELECT col FROM one_table WHERE ...) is rewritten")
        single_pk = None
        if not count.distinct:
            if len(self.scope.relations) == 1:
                only = next(iter(self.scope.relations.values()))
                pk = self.catalog.table(only.table).primary_key
                if len(pk) == 1 and (count.column is None or count.column.column.lower() == pk[0].lower() or not self.catalog.table(only.table).column(count.column.column).nullable):
                    single_pk = Attribute(only.alias, self.catalog.table(only.table).column(pk[0]).name)
            if single_pk is None:
                raise self._reject(
                    "subquery",
                    node,
                    detail="IN (SELECT ...) is rewritten to a join only under COUNT(DISTINCT) or over one table with a primary key",
                )
        # Parse the subquery in its own scope, then merge it as a new relation.
        inner = _Parser(sub.sql(), self.catalog, None)
        inner._from(sub)
        where = sub.args.get("where")
        if where is not None:
            for conjunct in _conjuncts(where.this):
                inner._condition(conjunct, in_on=False)
        if inner._pending_semi_joins or inner.joins or len(inner.scope.relations) != 1:
            raise self._reject("subquery", node, detail="nested subquery")
        inner_rel = next(iter(inner.scope.relations.values()))
        if inner_rel.alias.lower() in self.scope.relations or any(
            r.table.lower() == inner_rel.table.lower() for r in self.scope.relations.values()
        ):
            new_alias = _fresh_alias(inner_rel.table, self.scope.relations)
            if any(r.table.lower() == inner_rel.table.lower() for r in self.scope.relations.values()):
                raise self._reject("self_join", node, detail=f"the subquery reads {inner_rel.table} again")
            inner = _rename(inner, inner_rel.alias, new_alias)
            inner_rel = Relation(new_alias, inner_rel.table)
        inner_col = inner._resolve(cast(exp.Column, _unalias(sub.expressions[0])))  # inner_ok checked it
        self.scope.add(inner_rel)
        self.joins.append(JoinCondition(outer_attr, Attribute(inner_rel.alias, inner_col.column)))
        for alias, preds in inner.selections.items():
            self.selections.setdefault(inner_rel.alias if alias == inner_col.alias else alias, []).extend(preds)
        if single_pk is not None:
            return Count(single_pk, distinct=True)
        return count

    # ------------------------------------------------------------------ build
    def _build(self, count: Count) -> CountQuery:
        self._check_connected()
        selections = []
        for alias, preds in self.selections.items():
            combined = preds[0] if len(preds) == 1 else exp.and_(*[_paren_or(p) for p in preds])
            selections.append(Selection(alias, combined.sql()))
        return CountQuery(
            relations=tuple(self.scope.relations.values()),
            joins=tuple(self.joins),
            selections=tuple(selections),
            count=count,
        )


    def _check_connected(self) -> None:
        """Refuse a cross product: every relation must be joined to the others by an equality."""
        relations = list(self.scope.relations.values())
        if len(relations) < 2:
            return
        probe = CountQuery(relations=tuple(relations), joins=tuple(self.joins))
        components = probe.components()
        if len(components) == 1:
            return
        first = next(c for c in components if relations[0].alias in c)
        loose = next(r for r in relations if r.alias not in first)
        names = ", ".join(sorted(r.alias for r in relations if r.alias not in first))
        raise self._reject(
            "cross_product",
            self._sources.get(loose.alias.lower()),
            detail=f"{names} {'is' if names.count(',') == 0 else 'are'} not joined to {relations[0].alias}",
        )


class _AggregateParser(_Parser):
    """The counting parser on the SELECT with GROUP BY removed and the aggregate replaced by a COUNT.

    The body (FROM, joins, WHERE) goes through the counting parser unchanged; the original
    text stays ``self.sql``, so highlights point into what the user wrote.
    """

    def __init__(self, sql: str, catalog: Catalog, dialect: str | None):
        super().__init__(sql, catalog, dialect)
        self._keys: list[exp.Column] = []
        self._outputs: list[exp.Column] = []
        self._kind = AggregateKind.COUNT
        self._aggregate: exp.Expr | None = None

    def _select(self, select: exp.Select) -> CountQuery:
        group = select.args.get("group")
        if group is not None:
            for extra in ("rollup", "cube", "grouping_sets", "totals"):
                if group.args.get(extra):
                    raise self._reject("group_by", group, keyword=r"\bGROUP\s+BY\b", detail=f"{extra.upper()}")
            for key in group.expressions:
                if not isinstance(key, exp.Column) or isinstance(key.this, exp.Star):
                    raise self._reject("group_by", key, detail="GROUP BY an expression: only plain columns are grouped")
                self._keys.append(key)
        aggregates = []
        for node in select.expressions:
            inner = node.this if isinstance(node, exp.Alias) else node
            if isinstance(inner, exp.Column) and not isinstance(inner.this, exp.Star):
                self._outputs.append(inner)
            else:
                aggregates.append(inner)
        if not aggregates:
            raise self._reject("not_count", select.expressions[0] if select.expressions else select, detail="no aggregate")
        if len(aggregates) > 1:
            raise self._reject("multiple_outputs", aggregates[1], detail="one aggregate per query")
        count_node = self._aggregate_as_count(aggregates[0])
        body = select.copy()
        body.set("group", None)
        body.set("expressions", [count_node])
        return super()._select(body)

    def _aggregate_as_count(self, node: exp.Expr) -> exp.Expr:
        """The COUNT the body is parsed with: the COUNT itself, or ``COUNT(col)`` for SUM/AVG(col)."""
        if isinstance(node, exp.Count):
            return node
        if isinstance(node, (exp.Sum, exp.Avg)):
            self._kind = AggregateKind.SUM if isinstance(node, exp.Sum) else AggregateKind.AVG
            column = node.this
            if not isinstance(column, exp.Column) or isinstance(column.this, exp.Star):
                raise self._reject("other_aggregate", node, detail=f"{self._kind.value.upper()} over an expression: only a column is aggregated")
            self._aggregate = column
            return exp.Count(this=column.copy())
        return node  # the counting parser names what it is (another aggregate, not a COUNT, ...)

    def finish(self, body: CountQuery) -> AggregateQuery:
        """The AggregateQuery over ``body``: keys resolved, outputs checked against them."""
        if self._pending_semi_joins:
            raise self._reject("subquery", self._pending_semi_joins[0], detail="not rewritten under GROUP BY, SUM or AVG")
        keys = [self._resolve(k) for k in self._keys]
        if len(set(keys)) != len(keys):
            raise self._reject("group_by", None, keyword=r"\bGROUP\s+BY\b", detail="a column is grouped twice")
        shown = [self._resolve(c) for c in self._outputs]
        for column, attr in zip(self._outputs, shown, strict=True):
            if attr not in keys:
                raise self._reject("group_by" if keys else "multiple_outputs", column, detail=f"{attr} is output but not grouped by")
        if set(shown) != set(keys) or len(shown) != len(keys):
            raise self._reject("group_by", None, keyword=r"\bGROUP\s+BY\b", detail="every GROUP BY column must be output once")
        if self._kind is AggregateKind.COUNT:
            return AggregateQuery(body, tuple(shown))
        return AggregateQuery(body.with_count(Count()), tuple(shown), self._kind, body.count.column)


def _too_deep(what: str) -> SqlError:
    return SqlError(
        f"the SQL text is nested too deeply ({what})",
        hint="flatten the query: use IN (...) lists instead of long OR chains, drop redundant parentheses",
    )


def _parenthesis_depth(sql: str) -> int:
    """Deepest nesting of parentheses outside string literals, quoted names and comments."""
    depth = deepest = 0
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"`":
            end = sql.find(ch, i + 1)
            i = n if end == -1 else end + 1
            continue
        if sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end == -1 else end + 1
            continue
        if sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = n if end == -1 else end + 2
            continue
        if ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth = max(0, depth - 1)
        i += 1
    return deepest


def _tree_depth(tree: exp.Expr) -> int:
    """Levels of a parsed tree, counted without recursion."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in node.iter_expressions())
    return deepest


def _sqlite_number_text(node: exp.Expr | None) -> str | None:
    """The text SQLite gives a numeric literal when TEXT affinity applies to it, or None."""
    negative = isinstance(node, exp.Neg)
    literal = node.this if isinstance(node, exp.Neg) else node
    if not isinstance(literal, exp.Literal) or literal.is_string:
        return None
    raw = literal.this
    try:
        value: int | float = int(raw)
    except ValueError:
        try:
            value = float(raw)
        except ValueError:
            return None
    if negative:
        value = -value
    return str(value) if isinstance(value, int) else repr(value)


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    while isinstance(node, exp.Paren) and not isinstance(node.this, exp.Tuple):
        node = node.this
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def _paren_or(node: exp.Expr) -> exp.Expr:
    return exp.paren(node, copy=False) if isinstance(node, exp.Or) else node


def _unalias(node: exp.Expr) -> exp.Expr:
    return node.this if isinstance(node, exp.Alias) else node


def _has_not_above(node: exp.Expr) -> bool:
    return isinstance(node.parent, exp.Not)


def _fresh_alias(table: str, taken: dict[str, Relation]) -> str:
    i = 1
    while f"{table}_{i}".lower() in taken:
        i += 1
    return f"{table}_{i}"


def _rename(parser: _Parser, old: str, new: str) -> _Parser:
    relation = parser.scope.relations.pop(old.lower())
    parser.scope.add(Relation(new, relation.table))
    renamed = {}
    for alias, preds in parser.selections.items():
        fixed = []
        for p in preds:
            p = p.copy()
            for col in p.find_all(exp.Column):
                if col.table == old:
                    col.set("table", exp.to_identifier(new))
            fixed.append(p)
        renamed[new if alias == old else alias] = fixed
    parser.selections = renamed
    return parser


def _close(name: str, candidates: tuple[str, ...]) -> str | None:
    import difflib

    close = difflib.get_close_matches(name.lower(), [c.lower() for c in candidates], n=1)
    return f"did you mean {close[0]!r}?" if close else None
