"""Expanders propose the children of a search node.

``Expander.propose(state, *, exclude, limit)`` returns new actions for a node, never reusing a
relation key already taken by a sibling (``exclude``). Built-in expanders register through the same
registry a third party would use (:func:`register_expander`).

The offline :class:`SchemaGraphExpander` needs no LLM: from a node it proposes relations reachable
over foreign keys (join predicates taken from the keys), relations that share a referenced key with
one already placed (``R1.a -> P.k <- R2.b`` gives ``R1.a = R2.b``: the join through P is eliminated
because P.k is a key), moves each pending filter to a relation that holds the same columns, and
proposes ``SetCount`` on every relation that holds the count target once all filters are placed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from pimento.schema import Catalog, ForeignKey
from pimento.search.actions import Action, AddRelation, PartialQuery, SetCount, Stop
from pimento.search.intent import Intent
from pimento.sql.ir import Attribute, JoinCondition, Relation

__all__ = ["Expander", "NodeState", "SchemaGraphExpander", "make_expander", "register_expander"]


@dataclass(frozen=True)
class NodeState:
    """What an expander sees: the prefix, the intent it follows, which intent filters are placed."""

    prefix: PartialQuery
    intent: Intent
    placed: frozenset[int] = frozenset()

    def pending(self) -> tuple[int, ...]:
        return tuple(i for i in range(len(self.intent.filters)) if i not in self.placed)


class Expander(Protocol):
    name: str

    def propose(self, state: NodeState, *, exclude: frozenset[str], limit: int) -> list[tuple[Action, frozenset[int]]]:
        """New actions for ``state`` with the intent filters each one places."""
        ...


_REGISTRY: dict[str, Callable[..., Expander]] = {}


def register_expander(name: str, factory: Callable[..., Expander]) -> None:
    _REGISTRY[name] = factory


def make_expander(name: str, **kwargs) -> Expander:
    from pimento.errors import UserError

    if name not in _REGISTRY:
        raise UserError(f"unknown expander {name!r}", hint=f"use one of {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name](**kwargs)


@dataclass
class SchemaGraphExpander:
    """Offline expander over the foreign-key graph of the catalog."""

    catalog: Catalog
    max_relations: int = 5
    name: str = "schema-graph"
    _edges: dict[str, list[tuple[str, str, str, str]]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        edges: dict[str, list[tuple[str, str, str, str]]] = {}

        def add(a: str, ac: str, b: str, bc: str) -> None:
            if a.lower() == b.lower():
                return
            for x, xc, y, yc in ((a, ac, b, bc), (b, bc, a, ac)):
                entry = (x, xc, y, yc)
                if entry not in edges.setdefault(x.lower(), []):
                    edges[x.lower()].append(entry)

        single = [fk for fk in self.catalog.foreign_keys if len(fk.columns) == 1]
        for fk in single:
            add(fk.table, fk.columns[0], fk.ref_table, fk.ref_columns[0])
        # Key siblings: R1.a -> P.k and R2.b -> P.k, with P.k a key: R1.a = R2.b without P.
        by_target: dict[tuple[str, str], list[ForeignKey]] = {}
        for fk in single:
            by_target.setdefault((fk.ref_table.lower(), fk.ref_columns[0].lower()), []).append(fk)
        for fks in by_target.values():
            for i, f1 in enumerate(fks):
                for f2 in fks[i + 1 :]:
                    add(f1.table, f1.columns[0], f2.table, f2.columns[0])
        self._edges = edges

    # ------------------------------------------------------------------ proposals
    def propose(self, state: NodeState, *, exclude: frozenset[str], limit: int) -> list[tuple[Action, frozenset[int]]]:
        prefix = state.prefix
        if prefix.stopped:
            return []
        if prefix.count is not None:
            return [] if "stop" in exclude else [(Stop(), frozenset())]
        proposals: list[tuple[Action, frozenset[int], float]] = []
        pending = state.pending()
        if not prefix.relations:
            for table in self._start_tables(state):
                proposals.append((*self._add(state, table, ()), self._prior(state, table)))
        else:
            if len(prefix.relations) < self.max_relations:
                for table, joins in self._reachable(prefix):
                    action, placed = self._add(state, table, joins)
                    proposals.append((action, placed, self._prior(state, table)))
            if not pending:
                for relation in prefix.relations:
                    if state.intent.count.hostable_by(relation.table, self.catalog):
                        count = state.intent.count.on(relation.alias, relation.table, self.catalog)
                        origin = relation.table == state.intent.count.origin_table
                        proposals.append((SetCount(count), frozenset(), 3.0 if origin else 1.0))
        seen = set(exclude)
        out = []
        for action, placed, _score in sorted(proposals, key=lambda p: -p[2]):
            if action.key in seen:
                continue
            seen.add(action.key)
            out.append((action, placed))
            if len(out) >= limit:
                break
        return out

    def _start_tables(self, state: NodeState) -> list[str]:
        intent = state.intent
        tables = set(intent.origin_tables)
        for f in intent.filters:
            tables.update(t.name for t in self.catalog.tables if f.hostable_by(t.name, self.catalog))
        return sorted(tables)

    def _prior(self, state: NodeState, table: str) -> float:
        """Prefer tables that host pending filters, then tables of the warm start."""
        score = 0.0
        for i in state.pending():
            if state.intent.filters[i].hostable_by(table, self.catalog):
                score += 2.0
        if table in state.intent.origin_tables:
            score += 1.0
        return score

    def _reachable(self, prefix: PartialQuery) -> list[tuple[str, tuple[JoinCondition, ...]]]:
        out: dict[str, list[JoinCondition]] = {}
        for relation in prefix.relations:
            for _a, ac, b, bc in self._edges.get(relation.table.lower(), []):
                if prefix.has_table(b):
                    continue
                alias = _alias_for(b, prefix)
                join = JoinCondition(Attribute(relation.alias, ac), Attribute(alias, bc))
                joins = out.setdefault(b, [])
                if join not in joins:
                    joins.append(join)
        # One join predicate per new relation keeps the query a tree (the common, cheap case);
        # the first edge found follows a declared foreign key before any key-sibling edge.
        return [(table, (joins[0],)) for table, joins in out.items()]

    def _add(self, state: NodeState, table: str, joins: tuple[JoinCondition, ...]) -> tuple[AddRelation, frozenset[int]]:
        alias = _alias_for(table, state.prefix)
        placed = [i for i in state.pending() if state.intent.filters[i].hostable_by(table, self.catalog)]
        parts = [state.intent.filters[i].on(alias) for i in placed]
        selection = " AND ".join(f"({p})" if " OR " in p.upper() else p for p in parts) if parts else None
        relation = Relation(alias, self.catalog.table(table).name)
        joins = tuple(JoinCondition(j.left if j.left.alias != alias else Attribute(alias, j.left.column), j.right) for j in joins)
        return AddRelation(relation, joins, selection), frozenset(placed)


def _alias_for(table: str, prefix: PartialQuery) -> str:
    """The table name, or the table name with a suffix when a warm-start alias already took it."""
    for relation in prefix.relations:
        if relation.table.lower() == table.lower():
            return relation.alias
    taken = {a.lower() for a in prefix.aliases}
    alias, i = table, 1
    while alias.lower() in taken:
        i += 1
        alias = f"{table}_{i}"
    return alias


register_expander("schema-graph", lambda **kw: SchemaGraphExpander(**kw))
