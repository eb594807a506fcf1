"""Join paths over the foreign-key graph: connect the relations a question mentions.

Nodes are tables, edges are foreign keys (one edge per foreign key, so two foreign keys between
the same pair of tables, such as ``flights.source -> airports`` and ``flights.dest -> airports``,
are two alternative edges). :func:`join_trees` grows Steiner-like trees from the counted table:
each further terminal is attached through a shortest path (and near-shortest alternatives) to the
tree built so far, and the cheapest distinct trees are returned.

When the catalog declares no foreign key that reaches a terminal, edges are *inferred* from
names (a column named like another table's single-column primary key, or like the other table
itself, e.g. ``flights.Airline -> airlines.uid``). Inferred edges cost more and are labelled in
explanations; declared foreign keys always win when they connect.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from pimento.nl.text import lemma, name_words
from pimento.schema import Catalog

__all__ = ["JoinEdge", "JoinTree", "join_edges", "join_trees"]


@dataclass(frozen=True)
class JoinEdge:
    """``child(columns) = parent(ref_columns)``: child rows reference one parent row each."""

    child: str
    columns: tuple[str, ...]
    parent: str
    ref_columns: tuple[str, ...]
    inferred: bool = False

    def other(self, table: str) -> str:
        return self.parent if table == self.child else self.child

    def touches(self, table: str) -> bool:
        return table in (self.child, self.parent)

    def __str__(self) -> str:
        cols = ", ".join(f"{self.child}.{c} = {self.parent}.{r}" for c, r in zip(self.columns, self.ref_columns))
        return cols + (" (inferred from names)" if self.inferred else " (foreign key)")


@dataclass(frozen=True)
class JoinTree:
    """A set of edges connecting ``tables`` without cycles; ``cost`` ranks alternatives."""

    tables: frozenset[str]
    edges: tuple[JoinEdge, ...]
    cost: float

    def multiplies(self, root: str) -> bool:
        """True if joining may repeat a row of ``root`` (some edge leads, away from root, to children).

        Walking the tree from ``root``: an edge walked from its parent side to its child side is 1:n,
        so one row of ``root`` can meet several rows; edges walked child -> parent are n:1.
        """
        seen = {root}
        frontier = [root]
        while frontier:
            node = frontier.pop()
            for e in self.edges:
                if e.touches(node) and e.other(node) not in seen:
                    nxt = e.other(node)
                    if e.parent == node and e.child == nxt:
                        return True
                    seen.add(nxt)
                    frontier.append(nxt)
        return False


@lru_cache(maxsize=64)
def join_edges(catalog: Catalog, *, infer: bool = True) -> tuple[JoinEdge, ...]:
    """Declared foreign keys as edges, plus name-inferred edges for tables no foreign key reaches."""
    edges: list[JoinEdge] = []
    for fk in catalog.foreign_keys:
        if not catalog.has_table(fk.table) or not catalog.has_table(fk.ref_table):
            continue
        child, parent = catalog.table(fk.table).name, catalog.table(fk.ref_table).name
        if child == parent:
            continue
        edges.append(JoinEdge(child, fk.columns, parent, fk.ref_columns))
    if infer:
        edges.extend(_inferred_edges(catalog, edges))
    return tuple(dict.fromkeys(edges))


def _inferred_edges(catalog: Catalog, declared: list[JoinEdge]) -> list[JoinEdge]:
    have = {(e.child.lower(), tuple(c.lower() for c in e.columns)) for e in declared}
    out = []
    for parent in catalog.tables:
        if len(parent.primary_key) != 1:
            continue
        pk = parent.primary_key[0]
        pk_type = parent.column(pk).type
        parent_words = name_words(parent.name)
        for child in catalog.tables:
            if child.name == parent.name:
                continue
            for col in child.columns:
                if (child.name.lower(), (col.name.lower(),)) in have:
                    continue
                if col.type != pk_type and {col.type, pk_type} != {"integer", "real"}:
                    continue
                same_name = col.name.lower() == pk.lower() and not _is_generic(pk) and (col.name,) != child.primary_key
                named_like_table = name_words(col.name) in (parent_words, parent_words + ("id",))
                if same_name or (named_like_table and (col.name,) != child.primary_key):
                    out.append(JoinEdge(child.name, (col.name,), parent.name, (pk,), inferred=True))
    return out


def _is_generic(column: str) -> bool:
    return lemma(column.lower()) in {"id", "name", "code", "key", "type"}


def join_trees(
    catalog: Catalog,
    root: str,
    terminals: Iterable[str],
    *,
    edge_bonus: dict[JoinEdge, float] | None = None,
    limit: int = 4,
    max_path: int = 4,
) -> list[JoinTree]:
    """Cheapest trees containing ``root`` and every terminal, best first (at most ``limit``).

    Cost: 1 per edge, +0.6 per inferred edge, minus ``edge_bonus`` (question words that name the
    edge's columns, e.g. "departing" for ``source_airport``). Empty if some terminal is unreachable.
    """
    bonus = edge_bonus or {}
    edges = join_edges(catalog)
    wanted = [t for t in dict.fromkeys(terminals) if t != root]

    def edge_cost(e: JoinEdge) -> float:
        return 1.0 + (0.6 if e.inferred else 0.0) - bonus.get(e, 0.0)

    beam: list[tuple[float, frozenset[str], tuple[JoinEdge, ...]]] = [(0.0, frozenset({root}), ())]
    for terminal in wanted:
        new_beam = []
        for cost, nodes, tree_edges in beam:
            if terminal in nodes:
                new_beam.append((cost, nodes, tree_edges))
                continue
            paths = _paths_to_tree(edges, terminal, nodes, max_path)
            if not paths:
                continue
            shortest = min(len(p) for p in paths)
            for path in paths:
                if len(path) > shortest + 1:
                    continue
                path_nodes = {terminal} | {e.child for e in path} | {e.parent for e in path}
                new_beam.append(
                    (cost + sum(edge_cost(e) for e in path), nodes | path_nodes, tree_edges + tuple(path))
                )
        if not new_beam:
            return []
        new_beam.sort(key=lambda item: item[0])
        beam = _dedupe(new_beam)[: limit * 3]
    trees = [JoinTree(nodes, edges_, cost) for cost, nodes, edges_ in beam]
    return _dedupe_trees(trees)[:limit]


def _paths_to_tree(
    edges: tuple[JoinEdge, ...], start: str, tree: frozenset[str], max_path: int
) -> list[tuple[JoinEdge, ...]]:
    """Simple paths (as edge lists) from ``start`` to any node of ``tree``, avoiding tree nodes on the way."""
    found: list[tuple[JoinEdge, ...]] = []
    adjacency: dict[str, list[JoinEdge]] = {}
    for e in edges:
        adjacency.setdefault(e.child, []).append(e)
        adjacency.setdefault(e.parent, []).append(e)

    def walk(node: str, visited: set[str], path: list[JoinEdge]) -> None:
        if len(found) > 40:
            return
        for e in adjacency.get(node, ()):
            nxt = e.other(node)
            if nxt in visited:
                continue
            if nxt in tree:
                found.append(tuple(path + [e]))
                continue
            if len(path) + 1 < max_path:
                visited.add(nxt)
                walk(nxt, visited, path + [e])
                visited.discard(nxt)

    walk(start, {start}, [])
    found.sort(key=len)
    return found


def _dedupe(items: list[tuple[float, frozenset[str], tuple[JoinEdge, ...]]]) -> list:
    seen: set[frozenset[JoinEdge]] = set()
    out = []
    for cost, nodes, tree_edges in items:
        key = frozenset(tree_edges)
        if key in seen:
            continue
        seen.add(key)
        out.append((cost, nodes, tree_edges))
    return out


def _dedupe_trees(trees: list[JoinTree]) -> list[JoinTree]:
    seen: set[frozenset[JoinEdge]] = set()
    out = []
    for tree in sorted(trees, key=lambda t: t.cost):
        key = frozenset(tree.edges)
        if key in seen:
            continue
        seen.add(key)
        out.append(tree)
    return out

