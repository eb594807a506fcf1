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
from typing import Literal, Protocol

from pimento.registry import Registry
from pimento.schema import Catalog, ForeignKey
from pimento.search.actions import Action, AddRelation, PartialQuery, SetCount, Stop
from pimento.search.query_intent import Intent, grain
from pimento.sql.ir import Attribute, Count, JoinCondition, Relation

__all__ = ["Expander", "NodeState", "SchemaGraphExpander", "forced_proposals", "make_expander", "register_expander"]


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


_EXPANDERS: Registry[Callable[..., Expander]] = Registry()


def register_expander(name: str, factory: Callable[..., Expander]) -> None:
    """Make :func:`make_expander` build ``factory(**kwargs)`` for ``name`` (registered again: replaced)."""
    _EXPANDERS.register(name, factory)


def forced_proposals(prefix: PartialQuery, exclude: frozenset[str]) -> list[tuple[Action, frozenset[int]]] | None:
    """What every expander must propose where the action space leaves no choice, else None.

    A stopped prefix has no children; once the count is set, the only action is Stop.
    """
    if prefix.stopped:
        return []
    if prefix.count is not None:
        return [] if "stop" in exclude else [(Stop(), frozenset())]
    return None


def make_expander(name: str, **kwargs) -> Expander:
    from pimento.errors import UserError

    factory = _EXPANDERS.get(name)
    if factory is None:
        raise UserError(f"unknown expander {name!r}", hint=f"use one of {', '.join(sorted(_EXPANDERS.names()))}")
    return factory(**kwargs)


@dataclass
class SchemaGraphExpander:
    """Offline expander over the foreign-key graph of the catalog."""

    catalog: Catalog
    max_relations: int = 5
    #: Propose SetCount only where the query counts the same rows as the warm start (same
    #: :func:`~pimento.search.query_intent.grain`); off, every join structure may complete.
    preserve_grain: bool = True
    #: Where a filter or count column may move: ``"keys"``, to a column that holds the same value
    #: through foreign keys (R.a -> P.k: a predicate on P.k is one on R.a), or to the same-named
    #: column across a 1:1 foreign key; ``"names"``, also to any table with a column of the same
    #: name (looser; the benchmark's ground-truth enumeration uses it).
    moves: str = "keys"
    name: str = "schema-graph"
    _edges: dict[str, list[tuple[str, str, str, str]]] = field(default_factory=dict, init=False, repr=False)
    _same: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.moves not in ("keys", "names"):
            raise ValueError(f"moves must be 'keys' or 'names', not {self.moves!r}")
        # Columns that hold the same values through single-column foreign keys (union-find).
        parent: dict[tuple[str, str], tuple[str, str]] = {}

        def find(x: tuple[str, str]) -> tuple[str, str]:
            parent.setdefault(x, x)
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for fk in self.catalog.foreign_keys:
            if len(fk.columns) == 1:
                a = find((fk.table.lower(), fk.columns[0].lower()))
                b = find((fk.ref_table.lower(), fk.ref_columns[0].lower()))
                parent[a] = b
        self._same = {x: find(x) for x in list(parent)}
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
        forced = forced_proposals(prefix, exclude)
        if forced is not None:
            return forced
        proposals: list[tuple[Action, frozenset[int], float]] = []
        pending = state.pending()
        if not prefix.relations:
            for table in self._start_tables(state):
                proposals.append((*self._add(state, table, ()), self._prior(state, table)))
        else:
            if len(prefix.relations) < self.max_relations:
                for table, joins in self._reachable(prefix, state.intent):
                    action, placed = self._add(state, table, joins)
                    if self._leaves_grain(prefix, action, state):
                        continue
                    proposals.append((action, placed, self._prior(state, table)))
            if not pending:
                for relation in prefix.relations:
                    host = self.count_host(state.intent, relation.table)
                    if host is not False:
                        count = state.intent.count.on(relation.alias, relation.table, self.catalog, host)
                        if not self._same_grain(state, count):
                            continue
                        origin = relation.table == state.intent.count.origin_table
                        proposals.append((SetCount(count), frozenset(), 3.0 if origin else 1.0))
        seen = set(exclude)
        out: list[tuple[Action, frozenset[int]]] = []
        for proposed, placed, _score in sorted(proposals, key=lambda p: -p[2]):
            if proposed.key in seen:
                continue
            seen.add(proposed.key)
            out.append((proposed, placed))
            if len(out) >= limit:
                break
        return out

    def _column_in(self, origin: str, column: str, table: str) -> str | None:
        """The column of ``table`` holding ``origin.column``'s value (same table: itself)."""
        t = self.catalog.table(table)
        if table.lower() == origin.lower() or (self.moves == "names" and t.has_column(column)):
            return t.column(column).name if t.has_column(column) else None
        root = self._same.get((origin.lower(), column.lower()))
        if root is not None:
            for c in t.columns:
                if self._same.get((table.lower(), c.name.lower())) == root:
                    return c.name
        # A 1:1 extension (a foreign key that is a key of its table, such as Prescription.order_id
        # -> MedicationOrders) usually copies attributes of the row it extends under the same name.
        if t.has_column(column) and any(
            {fk.table.lower(), fk.ref_table.lower()} == {origin.lower(), table.lower()}
            and self.catalog.table(fk.table).is_key(fk.columns)
            for fk in self.catalog.foreign_keys
        ):
            return t.column(column).name
        return None

    def filter_host(self, f, table: str) -> dict[str, str] | None:
        """How ``table`` can host filter ``f``: its column renaming, or None when it cannot."""
        rename = {}
        for column in f.columns:
            found = self._column_in(f.origin_table, column, table)
            if found is None:
                return None
            rename[column] = found
        return rename

    def count_host(self, intent: Intent, table: str) -> str | None | Literal[False]:
        """The column of ``table`` to count (None for COUNT(*)), or False when it cannot host the count."""
        c = intent.count
        if c.column is None:
            return None
        if c.origin_table is None:
            return False
        found = self._column_in(c.origin_table, c.column, table)
        return False if found is None else found

    def _leaves_grain(self, prefix: PartialQuery, action: AddRelation, state: NodeState) -> bool:
        """True when adding ``action`` puts a table outside the warm start's grain for good.

        A relation stays in the grain unless it is joined on its own key (it only ever gains
        joins), so a prefix whose grain already holds a table the warm start does not count
        cannot complete with the same grain: proposing it would only waste rollouts.
        """
        if not self.preserve_grain or state.intent.grain is None:
            return False
        query = prefix.apply(action).apply(SetCount(Count())).complete()
        if query is None:
            return False
        return not grain(query, self.catalog) <= state.intent.grain

    def _same_grain(self, state: NodeState, count: Count) -> bool:
        if not self.preserve_grain or state.intent.grain is None:
            return True
        query = state.prefix.apply(SetCount(count)).complete()
        return query is not None and grain(query, self.catalog) == state.intent.grain

    def _start_tables(self, state: NodeState) -> list[str]:
        intent = state.intent
        tables = set(intent.origin_tables)
        for f in intent.filters:
            tables.update(t.name for t in self.catalog.tables if self.filter_host(f, t.name) is not None)
        return sorted(tables)

    def _prior(self, state: NodeState, table: str) -> float:
        """Prefer tables that host pending filters, then tables of the warm start."""
        score = 0.0
        for i in state.pending():
            if self.filter_host(state.intent.filters[i], table) is not None:
                score += 2.0
        if table in state.intent.origin_tables:
            score += 1.0
        return score

    def _reachable(self, prefix: PartialQuery, intent: Intent | None = None) -> list[tuple[str, tuple[JoinCondition, ...]]]:
        out: dict[str, list[JoinCondition]] = {}
        extra: dict[str, list[tuple[str, str, str, str]]] = {}
        for a, ac, b, bc in sorted(intent.joins) if intent is not None else ():
            # The warm start's own joins (e.g. on columns with no declared foreign key).
            extra.setdefault(a.lower(), []).append((a, ac, b, bc))
            extra.setdefault(b.lower(), []).append((b, bc, a, ac))
        for relation in prefix.relations:
            edges = self._edges.get(relation.table.lower(), []) + extra.get(relation.table.lower(), [])
            for _a, ac, b, bc in edges:
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
        hosts = {i: self.filter_host(state.intent.filters[i], table) for i in state.pending()}
        placed = [i for i, h in hosts.items() if h is not None]
        parts = [state.intent.filters[i].on(alias, hosts[i]) for i in placed]
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
