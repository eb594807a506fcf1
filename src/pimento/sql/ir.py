"""CountQuery: the intermediate representation of the DP-compatible counting class.

A CountQuery is ``SELECT COUNT(x) FROM R1 a1, ..., Rn an WHERE <equi-joins> AND <selections>``
where every selection mentions a single relation and every table appears once (no self-joins).
``x`` is ``*``, a column, or ``DISTINCT column``.

The IR is made of frozen dataclasses, so queries are hashable values that can key caches
(the search keys its T_E cache on them). Selections are kept as SQL text in sqlglot's
default dialect, with every column qualified by its relation alias.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property

import sqlglot
from sqlglot import exp

from pimento.errors import InternalError, SqlError

__all__ = ["Attribute", "Count", "CountQuery", "JoinCondition", "Relation", "Selection"]


@dataclass(frozen=True, order=True)
class Attribute:
    """A column of one relation of the query: ``alias.column``."""

    alias: str
    column: str

    def __str__(self) -> str:
        return f"{self.alias}.{self.column}"


@dataclass(frozen=True)
class Relation:
    """A table of the query and the alias it goes by (the table name when none was given)."""

    alias: str
    table: str

    def __post_init__(self) -> None:
        if not self.alias or not self.table:
            raise InternalError("a relation needs an alias and a table")


@dataclass(frozen=True)
class JoinCondition:
    """An equi-join ``left = right`` between two different relations (stored ordered)."""

    left: Attribute
    right: Attribute

    def __post_init__(self) -> None:
        if self.left.alias == self.right.alias:
            raise InternalError(f"join condition {self} compares a relation with itself")
        if self.right < self.left:
            left, right = self.right, self.left
            object.__setattr__(self, "left", left)
            object.__setattr__(self, "right", right)

    def __str__(self) -> str:
        return f"{self.left} = {self.right}"

    @property
    def aliases(self) -> tuple[str, str]:
        return (self.left.alias, self.right.alias)


@dataclass(frozen=True)
class Selection:
    """A predicate over one relation, as SQL text with columns qualified by ``alias``."""

    alias: str
    predicate: str

    def __post_init__(self) -> None:
        # One spelling per predicate, so that equal selections compare equal whoever wrote them.
        object.__setattr__(self, "predicate", _canonical_predicate(self.predicate))

    def expression(self) -> exp.Expr:
        return sqlglot.parse_one(self.predicate)


@dataclass(frozen=True)
class Count:
    """The aggregate: ``COUNT(*)`` when ``column`` is None, else ``COUNT([DISTINCT] column)``."""

    column: Attribute | None = None
    distinct: bool = False

    def __post_init__(self) -> None:
        if self.distinct and self.column is None:
            raise InternalError("COUNT(DISTINCT *) is not a thing")

    def __str__(self) -> str:
        if self.column is None:
            return "COUNT(*)"
        return f"COUNT({'DISTINCT ' if self.distinct else ''}{self.column})"


@dataclass(frozen=True)
class CountQuery:
    """A counting query over equi-joins with single-relation selections."""

    relations: tuple[Relation, ...]
    joins: tuple[JoinCondition, ...] = ()
    selections: tuple[Selection, ...] = ()
    count: Count = field(default_factory=Count)

    def __post_init__(self) -> None:
        if not self.relations:
            raise InternalError("a CountQuery needs at least one relation")
        aliases = [r.alias.lower() for r in self.relations]
        if len(set(aliases)) != len(aliases):
            raise InternalError(f"duplicate relation alias in {aliases}")
        tables = [r.table.lower() for r in self.relations]
        if len(set(tables)) != len(tables):
            raise InternalError(f"self-join in {tables}: the IR holds each table once")
        known = {r.alias for r in self.relations}
        for join in self.joins:
            if not set(join.aliases) <= known:
                raise InternalError(f"join {join} names a relation not in the query")
        for sel in self.selections:
            if sel.alias not in known:
                raise InternalError(f"selection on unknown alias {sel.alias}")
        if len({s.alias for s in self.selections}) != len(self.selections):
            raise InternalError("at most one selection per relation (conjunctions are merged)")
        if self.count.column is not None and self.count.column.alias not in known:
            raise InternalError(f"count column {self.count.column} names a relation not in the query")
        # Canonical order so that equal queries compare equal.
        object.__setattr__(self, "relations", tuple(sorted(self.relations, key=lambda r: (r.alias.lower(), r.alias))))
        object.__setattr__(self, "joins", tuple(sorted(set(self.joins), key=lambda j: (j.left, j.right))))
        object.__setattr__(self, "selections", tuple(sorted(self.selections, key=lambda s: s.alias)))

    # ----------------------------------------------------------------- structure
    @property
    def aliases(self) -> tuple[str, ...]:
        return tuple(r.alias for r in self.relations)

    def relation(self, alias: str) -> Relation:
        for r in self.relations:
            if r.alias == alias:
                return r
        raise InternalError(f"no relation with alias {alias!r}")

    def alias_of(self, table: str) -> str:
        for r in self.relations:
            if r.table.lower() == table.lower():
                return r.alias
        raise InternalError(f"table {table!r} is not in the query")

    def selection_of(self, alias: str) -> str | None:
        for s in self.selections:
            if s.alias == alias:
                return s.predicate
        return None

    @cached_property
    def equivalence_classes(self) -> tuple[frozenset[Attribute], ...]:
        """Join attributes that the equi-joins force equal, as classes (union-find)."""
        parent: dict[Attribute, Attribute] = {}

        def find(a: Attribute) -> Attribute:
            parent.setdefault(a, a)
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for join in self.joins:
            ra, rb = find(join.left), find(join.right)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        classes: dict[Attribute, set[Attribute]] = {}
        for a in list(parent):
            classes.setdefault(find(a), set()).add(a)
        return tuple(sorted((frozenset(c) for c in classes.values()), key=lambda c: min(c)))

    def neighbours(self, alias: str) -> frozenset[str]:
        """Aliases joined directly with ``alias``."""
        out: set[str] = set()
        for j in self.joins:
            if alias in j.aliases:
                out.update(j.aliases)
        out.discard(alias)
        return frozenset(out)

    def components(self, aliases: Iterable[str] | None = None) -> tuple[frozenset[str], ...]:
        """Connected components of the join graph restricted to ``aliases`` (default: all)."""
        keep = set(self.aliases if aliases is None else aliases)
        seen: set[str] = set()
        out = []
        for start in self.aliases:
            if start not in keep or start in seen:
                continue
            stack, comp = [start], set()
            while stack:
                a = stack.pop()
                if a in comp:
                    continue
                comp.add(a)
                stack.extend(n for n in self.neighbours(a) if n in keep and n not in comp)
            seen |= comp
            out.append(frozenset(comp))
        return tuple(out)

    @property
    def is_connected(self) -> bool:
        return len(self.components()) == 1

    def restricted_to(self, aliases: Iterable[str]) -> CountQuery:
        """The sub-query on the given relations: their joins (both ends kept) and selections, COUNT(*)."""
        keep = set(aliases)
        if not keep:
            raise InternalError("cannot restrict a query to no relation")
        unknown = keep - set(self.aliases)
        if unknown:
            raise InternalError(f"unknown aliases {sorted(unknown)}")
        return CountQuery(
            relations=tuple(r for r in self.relations if r.alias in keep),
            joins=tuple(j for j in self.joins if set(j.aliases) <= keep),
            selections=tuple(s for s in self.selections if s.alias in keep),
            count=Count(),
        )

    def boundary(self, aliases: Iterable[str]) -> tuple[Attribute, ...]:
        """Attributes of relations in ``aliases`` that join with a relation outside it."""
        keep = set(aliases)
        out: set[Attribute] = set()
        for j in self.joins:
            inside = [a for a in (j.left, j.right) if a.alias in keep]
            if len(inside) == 1:
                out.add(inside[0])
        return tuple(sorted(out))

    def with_count(self, count: Count) -> CountQuery:
        return replace(self, count=count)

    def canonical(self) -> CountQuery:
        """The same query with every alias renamed to its table name (each table appears once).

        Two formulations that differ only in alias names compare equal after this.
        """
        mapping = {r.alias: r.table for r in self.relations}
        if all(a == t for a, t in mapping.items()):
            return self

        def attr(a: Attribute) -> Attribute:
            return Attribute(mapping[a.alias], a.column)

        selections = []
        for s in self.selections:
            tree = s.expression()
            for col in tree.find_all(exp.Column):
                if col.table in mapping:
                    col.set("table", exp.to_identifier(mapping[col.table]))
            selections.append(Selection(mapping[s.alias], tree.sql()))
        count = Count(attr(self.count.column), self.count.distinct) if self.count.column else self.count
        return CountQuery(
            tuple(Relation(r.table, r.table) for r in self.relations),
            tuple(JoinCondition(attr(j.left), attr(j.right)) for j in self.joins),
            tuple(selections),
            count,
        )

    # ----------------------------------------------------------------- rendering
    def to_sql(self, dialect: str = "duckdb", *, pretty: bool = False) -> str:
        """Render as SQL in any sqlglot dialect (joins as ``JOIN ... ON``)."""
        return _render_with_joins(self, dialect, pretty)

    def __str__(self) -> str:
        return self.to_sql()


def quoted_if_needed(name: str) -> exp.Identifier:
    """``name`` as a sqlglot identifier, quoted only when it must be (a keyword, a space, a quote...)."""
    safe = name.isidentifier() and name.lower() == name.lower().strip()
    return exp.to_identifier(name, quoted=not safe or _is_reserved(name))


@functools.lru_cache(maxsize=8192)
def _canonical_predicate(text: str) -> str:
    """The predicate re-rendered by sqlglot with identifiers quoted only where needed."""
    try:
        tree = sqlglot.parse_one(text)
    except sqlglot.errors.ParseError as exc:
        raise SqlError(f"invalid selection predicate {text!r}: {exc}") from None
    for ident in tree.find_all(exp.Identifier):
        ident.set("quoted", not _plain_identifier(ident.name))
    return tree.sql()


def _plain_identifier(name: str) -> bool:
    return name.isidentifier() and not _is_reserved(name)


@functools.lru_cache(maxsize=4096)
def _is_reserved(name: str) -> bool:
    try:
        sqlglot.parse_one(f"SELECT 1 AS {name}")
        return False
    except sqlglot.errors.ParseError:
        return True


def _render_with_joins(query: CountQuery, dialect: str, pretty: bool) -> str:
    """SELECT COUNT(..) FROM r1 JOIN r2 ON ... JOIN r3 ON ... WHERE selections.

    Relations are emitted in an order where each one after the first joins an earlier one
    when the join graph is connected; disconnected parts become CROSS JOINs.
    """
    if query.count.column is None:
        agg: exp.Expr = exp.Count(this=exp.Star())
    else:
        col = _qualified(query.count.column)
        agg = exp.Count(this=exp.Distinct(expressions=[col]) if query.count.distinct else col)

    order: list[str] = []
    remaining = list(query.aliases)
    while remaining:
        pick = next((a for a in remaining if query.neighbours(a) & set(order)), None)
        if pick is None:
            pick = remaining[0]
        order.append(pick)
        remaining.remove(pick)

    def table_expr(alias: str) -> exp.Expr:
        rel = query.relation(alias)
        table = exp.Table(this=quoted_if_needed(rel.table))
        if rel.alias != rel.table:
            return exp.alias_(table, quoted_if_needed(rel.alias), table=True)
        return table

    select = exp.Select(expressions=[agg])
    select.set("from_", exp.From(this=table_expr(order[0])))
    placed = {order[0]}
    joins = []
    used: set[JoinCondition] = set()
    for alias in order[1:]:
        conds = [j for j in query.joins if alias in j.aliases and (set(j.aliases) - {alias}) <= placed]
        used.update(conds)
        if conds:
            on = exp.and_(*[exp.EQ(this=_qualified(j.left), expression=_qualified(j.right)) for j in conds])
            joins.append(exp.Join(this=table_expr(alias), on=on))
        else:
            joins.append(exp.Join(this=table_expr(alias), kind="CROSS"))
        placed.add(alias)
    if joins:
        select.set("joins", joins)
    leftovers = [j for j in query.joins if j not in used]
    where: list[exp.Expr] = [exp.EQ(this=_qualified(j.left), expression=_qualified(j.right)) for j in leftovers]
    for s in query.selections:
        where.append(_requalify(s.expression()))
    if where:
        wrapped = [exp.paren(w, copy=False) if isinstance(w, exp.Or) else w for w in where]
        select.set("where", exp.Where(this=exp.and_(*wrapped)))
    try:
        return select.sql(dialect=dialect, pretty=pretty)
    except Exception as exc:  # noqa: BLE001 - sqlglot raises assorted errors per dialect
        raise SqlError(f"cannot render the query in dialect {dialect!r}: {exc}") from exc


def _qualified(attr: Attribute) -> exp.Column:
    return exp.Column(this=quoted_if_needed(attr.column), table=quoted_if_needed(attr.alias))


def _requalify(expression: exp.Expr) -> exp.Expr:
    """Re-quote identifiers of a stored predicate consistently with the rest of the query."""
    expression = expression.copy()
    for col in expression.find_all(exp.Column):
        col.set("this", quoted_if_needed(col.name))
        if col.table:
            col.set("table", quoted_if_needed(col.table))
    return expression
