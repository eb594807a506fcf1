"""The DP-compatible action space of the search: SetCount, AddRelation, Stop.

A node of the search tree holds a :class:`PartialQuery`; an edge is an :class:`Action`.
``AddRelation(R, J, F)`` adds relation R joined to the prefix by the equalities J with
the filter F on R; ``SetCount(x)`` fixes the aggregate; ``Stop`` completes the query.
Any sequence of actions builds a query inside the CountQuery class by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pimento.errors import InternalError
from pimento.sql.ir import Attribute, Count, CountQuery, JoinCondition, Relation, Selection

__all__ = [
    "Action",
    "AddRelation",
    "PartialQuery",
    "SetCount",
    "Stop",
    "decompose",
]


@dataclass(frozen=True)
class AddRelation:
    """Add ``relation`` joined to the prefix by ``joins`` (each with one end in ``relation``), filtered by ``selection``."""

    relation: Relation
    joins: tuple[JoinCondition, ...] = ()
    selection: str | None = None

    @property
    def key(self) -> str:
        """The relation key siblings must not reuse (the table, case-folded)."""
        return self.relation.table.lower()

    def __str__(self) -> str:
        parts = [f"AddRelation({self.relation.table} AS {self.relation.alias}"]
        if self.joins:
            parts.append("ON " + " AND ".join(str(j) for j in self.joins))
        if self.selection:
            parts.append(f"WHERE {self.selection}")
        return " ".join(parts) + ")"


@dataclass(frozen=True)
class SetCount:
    """Set the aggregate to ``count`` (COUNT(*) is the default when no SetCount is taken)."""

    count: Count

    @property
    def key(self) -> str:
        return f"count:{self.count}"

    def __str__(self) -> str:
        return f"SetCount({self.count})"


@dataclass(frozen=True)
class Stop:
    """Complete the query."""

    @property
    def key(self) -> str:
        return "stop"

    def __str__(self) -> str:
        return "Stop()"


Action = AddRelation | SetCount | Stop


@dataclass(frozen=True)
class PartialQuery:
    """The query built so far by a sequence of actions."""

    relations: tuple[Relation, ...] = ()
    joins: tuple[JoinCondition, ...] = ()
    selections: tuple[Selection, ...] = ()
    count: Count | None = None
    stopped: bool = False
    _tables: frozenset[str] = field(default=frozenset(), repr=False)

    @property
    def aliases(self) -> frozenset[str]:
        return frozenset(r.alias for r in self.relations)

    def has_table(self, table: str) -> bool:
        return table.lower() in self._tables

    def apply(self, action: Action) -> PartialQuery:
        """The prefix after ``action``; raises InternalError for an action that does not fit."""
        if self.stopped:
            raise InternalError("no action after Stop")
        if isinstance(action, AddRelation):
            if self.has_table(action.relation.table):
                raise InternalError(f"{action.relation.table} is already in the query")
            if action.relation.alias in self.aliases:
                raise InternalError(f"alias {action.relation.alias} is taken")
            for join in action.joins:
                ends = set(join.aliases)
                if action.relation.alias not in ends or not (ends - {action.relation.alias}) <= self.aliases:
                    raise InternalError(f"join {join} does not connect {action.relation.alias} to the prefix")
            selections = self.selections
            if action.selection:
                selections = (*selections, Selection(action.relation.alias, action.selection))
            return replace(
                self,
                relations=(*self.relations, action.relation),
                joins=(*self.joins, *action.joins),
                selections=selections,
                _tables=self._tables | {action.relation.table.lower()},
            )
        if isinstance(action, SetCount):
            if self.count is not None:
                raise InternalError("the count is already set")
            return replace(self, count=action.count)
        if isinstance(action, Stop):
            return replace(self, stopped=True)
        raise InternalError(f"unknown action {action!r}")

    def complete(self) -> CountQuery | None:
        """The CountQuery this prefix denotes, or None when it is not a valid query yet."""
        if not self.relations:
            return None
        count = self.count or Count()
        if count.column is not None and count.column.alias not in self.aliases:
            return None
        query = CountQuery(self.relations, self.joins, self.selections, count)
        return query if query.is_connected else None


def decompose(query: CountQuery) -> list[Action]:
    """Action path that rebuilds ``query``: relations in join-graph order, then SetCount, then Stop.

    The first relation is the one the count refers to (or the first alias); each next relation is
    one joined to those already placed, so every AddRelation carries its join predicates.
    """
    start = query.count.column.alias if query.count.column is not None else query.aliases[0]
    order = [start]
    while len(order) < len(query.aliases):
        ordered = set(order)
        nxt = next(
            (a for a in query.aliases if a not in ordered and query.neighbours(a) & ordered),
            next(a for a in query.aliases if a not in ordered),
        )
        order.append(nxt)
    actions: list[Action] = []
    placed: set[str] = set()
    for alias in order:
        joins = tuple(j for j in query.joins if alias in j.aliases and (set(j.aliases) - {alias}) <= placed)
        actions.append(AddRelation(query.relation(alias), joins, query.selection_of(alias)))
        placed.add(alias)
    actions.append(SetCount(query.count))
    actions.append(Stop())
    return actions


def attribute_of(relation: Relation, column: str) -> Attribute:
    return Attribute(relation.alias, column)
