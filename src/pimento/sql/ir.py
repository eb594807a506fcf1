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
from fractions import Fraction
from functools import cached_property

import sqlglot
from sqlglot import exp

from pimento._compat import StrEnum
from pimento.errors import InternalError, SqlError

__all__ = [
    "AggregateKind",
    "AggregateQuery",
    "Attribute",
    "ClipBounds",
    "Count",
    "CountQuery",
    "JoinCondition",
    "Relation",
    "Selection",
]


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


class AggregateKind(StrEnum):
    """The aggregate of an :class:`AggregateQuery`; its value is the SQL function's name in lower case."""

    COUNT = "count"
    SUM = "sum"
    AVG = "avg"


@dataclass(frozen=True)
class ClipBounds:
    """The custodian's clipping interval ``[lower, upper]`` of a summed column, exact.

    Each value must have a finite decimal expansion (a denominator of the form 2^a 5^b) so that
    the engine receives it exactly as a decimal literal. ``bound`` = max(|lower|, |upper|) is the
    largest contribution of one join result to a clipped sum.
    """

    lower: Fraction
    upper: Fraction

    def __post_init__(self) -> None:
        for name in ("lower", "upper"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, Fraction)):
                raise InternalError(f"clip bound {name} must be an int or a Fraction, got {value!r}")
            value = Fraction(value)
            if _decimal_literal(value) is None:
                raise InternalError(f"clip bound {name} = {value} has no finite decimal expansion")
            object.__setattr__(self, name, value)
        if self.lower > self.upper:
            raise InternalError(f"clip bounds [{self.lower}, {self.upper}] are empty")

    @property
    def bound(self) -> Fraction:
        return max(abs(self.lower), abs(self.upper))


@dataclass(frozen=True)
class AggregateQuery:
    """``SELECT g1, ..., COUNT/SUM/AVG(..) FROM <body> GROUP BY g1, ...``: a grouped or summed query.

    ``body`` holds the relations, equi-joins and selections (a :class:`CountQuery`, so the
    structure, validation and self-join refusal are that class's). For ``COUNT`` the body's
    ``count`` is the aggregate; for ``SUM``/``AVG`` the body's count is ``COUNT(*)`` and
    ``column`` is the aggregated column. ``group_by`` may be empty (an ungrouped SUM or AVG).

    ``bounds`` (SUM/AVG only) is the custodian's clipping interval. With bounds, :meth:`to_sql`
    renders the statement the engine runs: every value clipped in the engine as
    ``CASE WHEN c < lo THEN lo WHEN c > hi THEN hi ELSE c END`` (NULL stays NULL: SQL's SUM
    skips it; a group whose values are all NULL sums to 0 through ``COALESCE``; NaN, where the
    engine has it, compares above every number on DuckDB and PostgreSQL and is clipped to
    ``hi``), and AVG as two outputs, the clipped SUM and ``COUNT(c)``, released separately.
    Without bounds it renders the analyst's reading (``SUM(c)``, ``AVG(c)``), never for release.
    Groups are the key values present in the join; zero-filling a public domain is the release
    layer's (a LEFT JOIN from the domain is not rendered here).
    """

    body: CountQuery
    group_by: tuple[Attribute, ...] = ()
    kind: AggregateKind = AggregateKind.COUNT
    column: Attribute | None = None
    bounds: ClipBounds | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", AggregateKind(self.kind))
        object.__setattr__(self, "group_by", tuple(self.group_by))
        known = set(self.body.aliases)
        if len(set(self.group_by)) != len(self.group_by):
            raise InternalError(f"duplicate group-by column in {[str(g) for g in self.group_by]}")
        for g in self.group_by:
            if g.alias not in known:
                raise InternalError(f"group-by column {g} names a relation not in the query")
        if self.kind is AggregateKind.COUNT:
            if self.column is not None or self.bounds is not None:
                raise InternalError("a grouped COUNT keeps its column in body.count and takes no clip bounds")
            return
        if self.column is None or self.column.alias not in known:
            raise InternalError(f"{self.kind.value.upper()} needs a column of a relation of the query")
        if self.body.count != Count():
            raise InternalError(f"the body of a {self.kind.value.upper()} counts *, not {self.body.count}")

    @property
    def count_query(self) -> CountQuery:
        """The ungrouped count whose local sensitivity bounds this query's (sensitivity/PROOF.md, section 5).

        COUNT: the body itself. SUM/AVG: ``COUNT(column)``, the join results that contribute.
        """
        if self.kind is AggregateKind.COUNT:
            return self.body
        assert self.column is not None, "checked in __post_init__"
        return self.body.with_count(Count(self.column))

    def with_bounds(self, bounds: ClipBounds) -> AggregateQuery:
        if self.kind is AggregateKind.COUNT:
            raise InternalError("a COUNT takes no clip bounds")
        return replace(self, bounds=bounds)

    def canonical(self) -> AggregateQuery:
        """The same query with every alias renamed to its table name (see :meth:`CountQuery.canonical`)."""
        mapping = {r.alias: r.table for r in self.body.relations}

        def attr(a: Attribute) -> Attribute:
            return Attribute(mapping[a.alias], a.column)

        return replace(
            self,
            body=self.body.canonical(),
            group_by=tuple(attr(g) for g in self.group_by),
            column=attr(self.column) if self.column is not None else None,
        )

    def to_sql(self, dialect: str = "duckdb", *, pretty: bool = False) -> str:
        """Render in any sqlglot dialect: group columns first, then the aggregate(s); see the class doc."""
        outputs: list[exp.Expr] = [_qualified(g) for g in self.group_by]
        outputs.extend(self._aggregates())
        select = _select_from(self.body, outputs)
        if self.group_by:
            select.set("group", exp.Group(expressions=[_qualified(g) for g in self.group_by]))
        return _sql(select, dialect, pretty)

    def _aggregates(self) -> list[exp.Expr]:
        if self.kind is AggregateKind.COUNT:
            return [_count_expression(self.body.count)]
        assert self.column is not None, "checked in __post_init__"
        col = _qualified(self.column)
        if self.bounds is None:
            func = exp.Sum if self.kind is AggregateKind.SUM else exp.Avg
            return [func(this=col)]
        # proof: clip-in-engine
        lo, hi = _number(self.bounds.lower), _number(self.bounds.upper)
        clipped = exp.Case(
            ifs=[
                exp.If(this=exp.LT(this=col.copy(), expression=lo), true=lo.copy()),
                exp.If(this=exp.GT(this=col.copy(), expression=hi), true=hi.copy()),
            ],
            default=col.copy(),
        )
        total = exp.Coalesce(this=exp.Sum(this=clipped), expressions=[exp.Literal.number(0)])
        if self.kind is AggregateKind.SUM:
            return [total]
        return [total, exp.Count(this=col.copy())]

    def __str__(self) -> str:
        return self.to_sql()


def _decimal_literal(value: Fraction) -> str | None:
    """``value`` as an exact decimal string, or None when its expansion does not terminate."""
    den, twos, fives = value.denominator, 0, 0
    while den % 2 == 0:
        den, twos = den // 2, twos + 1
    while den % 5 == 0:
        den, fives = den // 5, fives + 1
    if den != 1:
        return None
    digits = max(twos, fives)
    scaled = abs(value) * 10**digits
    assert scaled.denominator == 1
    text = str(scaled.numerator).rjust(digits + 1, "0")
    body = text if digits == 0 else f"{text[:-digits]}.{text[-digits:]}"
    return ("-" if value < 0 else "") + body


def _number(value: Fraction) -> exp.Expr:
    text = _decimal_literal(value)
    assert text is not None, "ClipBounds admits finite decimals only"
    if text.startswith("-"):
        return exp.Neg(this=exp.Literal.number(text[1:]))
    return exp.Literal.number(text)


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
    select = _select_from(query, [_count_expression(query.count)])
    return _sql(select, dialect, pretty)


def _count_expression(count: Count) -> exp.Expr:
    """``COUNT(*)``, ``COUNT(col)`` or ``COUNT(DISTINCT col)`` as a sqlglot expression."""
    if count.column is None:
        return exp.Count(this=exp.Star())
    col = _qualified(count.column)
    return exp.Count(this=exp.Distinct(expressions=[col]) if count.distinct else col)


def _sql(select: exp.Select, dialect: str, pretty: bool) -> str:
    try:
        return select.sql(dialect=dialect, pretty=pretty)
    except Exception as exc:  # noqa: BLE001 - sqlglot raises assorted errors per dialect
        raise SqlError(f"cannot render the query in dialect {dialect!r}: {exc}") from exc


def _select_from(query: CountQuery, outputs: list[exp.Expr]) -> exp.Select:
    """``SELECT outputs FROM`` the query's joins ``WHERE`` its selections (the body of every rendering)."""
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

    select = exp.Select(expressions=outputs)
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
    return select


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
