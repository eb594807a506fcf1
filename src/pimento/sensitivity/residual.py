"""T_E for the residual queries of a CountQuery, computed by the engine in one shared SQL statement.

Model (Dong & Yi 2021, natural-join form). Every equivalence class of join attributes of the
query is one *variable*; relation ``r`` binds the variables of the classes its columns belong to
(two columns of ``r`` in one class must be equal: an intra-relation selection). The residual
query ``q_E`` on a set ``E`` of relations is the natural join of the relations of ``E`` (each
filtered by its own selection, see below) on their shared variables. Its *boundary* ``B_E`` is
the set of variables bound by a relation of ``E`` and by a relation outside ``E``. Then

    T_{} = 1,
    T_E  = prod over the connected components C of E of T_C,
    T_C  = max over values b of B_C of |{join results of q_C whose boundary variables equal b}|,

where a boundary value containing NULL is skipped (a NULL never joins, so no tuple of the
removed relations can meet it). A component without a boundary contributes its full count.

Selections are pushed to their relations; ``COUNT(col)`` and ``COUNT(DISTINCT col)`` add
``col IS NOT NULL`` to the relation of ``col`` (see PROOF.md for why that keeps the bound).

How the engine computes it, without materialising joins where the hypergraph is acyclic:

1. ``base_r``: each relation filtered by its selection and grouped by all of its variables,
   with ``COUNT(*)`` as ``c`` (one scan of each table, shared by every T_E).
2. For a connected component ``C`` whose hypergraph is acyclic, a join tree of ``C`` (the
   restriction of the whole query's join tree when that is a subtree, else GYO on ``C``) is
   evaluated bottom-up: the message of node ``v`` is ``SUM`` of products of counts of ``base_v``
   and its children's messages, grouped by the variables ``v`` shares with its parent plus the
   boundary variables of ``C`` found in ``v``'s subtree. Messages are keyed by (relations of the
   subtree, grouping variables) and emitted once: components share them (the suffixes of a
   chain are all the same messages).
3. A cyclic component (a triangle) falls back to joining its ``base_r`` tables (already
   aggregated) and grouping by the boundary: correct, not linear.
4. Every T_C is a ``MAX`` over its root message; all of them are columns of ONE statement.
5. Keys (primary / unique, from the catalog) made of join columns: a keyed base needs no GROUP
   BY (c = 1, and it is not materialised: a filtered projection is cheaper to rescan than to
   copy); a message whose grouping variables determine every base of its subtree through keys
   skips its GROUP BY (it is the identity); a component's root is chosen to need the fewest new
   GROUP BYs; a T_C over rows that all have c = 1 is an ``EXISTS``. PROOF.md, section 2.
6. Keys need not be declared: before the T_E statement, one small statement checks which join
   variable of each relation with two or more variables (and no declared key) is unique among the rows the T_E reads
   (``COUNT(*) = COUNT(DISTINCT col)`` under the base's own WHERE); such a variable is a key of
   this instance and is used as one (item 5). Nothing undeclared is trusted, the T_E values are
   the same, and a TPC-H chain without keys needs 4 GROUP BYs instead of 9 (4 relations).

Counts are BIGINT first; only if the engine reports an overflow (DuckDB and PostgreSQL raise,
they never wrap) is the statement run again with counts cast to HUGEINT (DuckDB, exact to 2^127)
or NUMERIC (PostgreSQL, unbounded) or DECIMAL(38, 0) (Spark, ANSI mode: it raises too). Products over components are Python integers. Results that come back as floats (SQLite
turns an overflowing integer product into REAL) are refused.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import combinations

import sqlglot
from sqlglot import exp

from pimento.engines.base import Engine
from pimento.errors import EngineError, InternalError, UnsupportedQuery
from pimento.schema import Catalog
from pimento.sensitivity._collation import check_join_collations
from pimento.sql.ir import CountQuery
from pimento.sql.join_types import check_join_types
from pimento.sql.quote import quote_identifier

__all__ = [
    "ResidualCounts",
    "compute_te",
    "needed_subsets",
    "te_key",
]

Subset = frozenset[str]


def te_key(subset: Iterable[str]) -> str:
    """The key of T_E in results and JSON: sorted aliases joined by commas, ``{}`` for the empty set."""
    names = sorted(subset)
    return ",".join(names) if names else "{}"


# --------------------------------------------------------------------------- hypergraph
@dataclass(frozen=True)
class _Hypergraph:
    """Relations (aliases) and the variables (join classes) each binds."""

    aliases: tuple[str, ...]
    #: alias -> {variable index: columns of that relation in the class (first is representative)}
    columns: Mapping[str, Mapping[int, tuple[str, ...]]]

    @classmethod
    def of(cls, query: CountQuery) -> _Hypergraph:
        columns: dict[str, dict[int, list[str]]] = {a: {} for a in query.aliases}
        for index, klass in enumerate(query.equivalence_classes):
            for attr in sorted(klass):
                columns[attr.alias].setdefault(index, []).append(attr.column)
        frozen = {a: {v: tuple(cols) for v, cols in sorted(m.items())} for a, m in columns.items()}
        return cls(query.aliases, frozen)

    def vars(self, alias: str) -> frozenset[int]:
        return frozenset(self.columns[alias])

    def vars_of(self, aliases: Iterable[str]) -> frozenset[int]:
        out: set[int] = set()
        for a in aliases:
            out |= self.columns[a].keys()
        return frozenset(out)

    def boundary(self, subset: Iterable[str]) -> frozenset[int]:
        inside = set(subset)
        outside = [a for a in self.aliases if a not in inside]
        return self.vars_of(inside) & self.vars_of(outside)

    def components(self, subset: Iterable[str]) -> tuple[Subset, ...]:
        """Connected components of ``subset``: relations are adjacent when they share a variable."""
        keep = [a for a in self.aliases if a in set(subset)]
        seen: set[str] = set()
        out = []
        for start in keep:
            if start in seen:
                continue
            comp, stack = set(), [start]
            while stack:
                a = stack.pop()
                if a in comp:
                    continue
                comp.add(a)
                stack.extend(b for b in keep if b not in comp and self.columns[a].keys() & self.columns[b].keys())
            seen |= comp
            out.append(frozenset(comp))
        return tuple(out)


def _gyo_tree(graph: _Hypergraph, members: Iterable[str], prefer_root: str | None = None) -> dict[str, str | None] | None:
    """A join tree (child -> parent, root -> None) of the relations ``members`` by GYO ear removal.

    Returns None when their hypergraph is cyclic. ``prefer_root`` is kept to the end when possible.
    """
    order = [a for a in graph.aliases if a in set(members)]
    if prefer_root in order:
        order.remove(prefer_root)
        order.append(prefer_root)
    edges = {a: set(graph.vars(a)) for a in order}
    remaining = list(order)
    parent: dict[str, str | None] = {}
    changed = True
    while changed and len(remaining) > 1:
        changed = False
        counts: dict[int, int] = {}
        for a in remaining:
            for v in edges[a]:
                counts[v] = counts.get(v, 0) + 1
        for a in remaining:
            edges[a] = {v for v in edges[a] if counts[v] > 1}
        for a in remaining:
            host = next((b for b in reversed(remaining) if b != a and edges[a] <= edges[b]), None)
            if host is not None:
                parent[a] = host
                remaining.remove(a)
                changed = True
                break
    if len(remaining) != 1:
        return None
    parent[remaining[0]] = None
    return parent


def _restricted_tree(full: Mapping[str, str | None], members: Subset) -> dict[str, str | None] | None:
    """The full join tree restricted to ``members`` if they form a connected subtree of it."""
    tops = []
    parent: dict[str, str | None] = {}
    for a in members:
        p = full[a]
        if p is not None and p in members:
            parent[a] = p
        else:
            parent[a] = None
            tops.append(a)
    return parent if len(tops) == 1 else None


# --------------------------------------------------------------------------- subsets
def needed_subsets(query: CountQuery, private: Iterable[str], *, attribution: bool = True) -> tuple[Subset, ...]:
    """The sets E whose T_E the envelope (and, with ``attribution``, the Shapley value function) reads.

    Envelope: E = [n] minus S for every non-empty S within the private set. Attribution reads
    T_E for every E that misses at least one private relation.
    """
    aliases = query.aliases
    priv = [a for a in aliases if a in set(private)]
    out: set[Subset] = set()
    if attribution:
        for size in range(len(aliases) + 1):
            for combo in combinations(aliases, size):
                if any(p not in combo for p in priv):
                    out.add(frozenset(combo))
    else:
        for size in range(1, len(priv) + 1):
            for removed in combinations(priv, size):
                out.add(frozenset(aliases) - frozenset(removed))
    return tuple(sorted(out, key=lambda s: (len(s), sorted(s))))


# --------------------------------------------------------------------------- SQL plan
@dataclass(frozen=True)
class ResidualCounts:
    """T_E values (Python ints) and what it cost to get them."""

    values: Mapping[Subset, int]
    statements: int
    seconds: float
    sql: tuple[str, ...] = ()
    cyclic_components: tuple[Subset, ...] = ()
    #: The statement that checked which join variables are unique on the data ("" if none ran);
    #: not counted in ``statements`` or listed in ``sql`` (those are the T_E statements).
    unique_sql: str = ""
    #: (alias, join column) pairs found unique on the data and used as keys.
    unique_on_data: tuple[tuple[str, str], ...] = ()

    def __getitem__(self, subset: Iterable[str]) -> int:
        return self.values[frozenset(subset)]

    def by_key(self) -> dict[str, int]:
        return {te_key(s): v for s, v in sorted(self.values.items(), key=lambda kv: (len(kv[0]), sorted(kv[0])))}


@dataclass
class _TeSqlBuilder:
    """Builds the one statement that computes every T_E of a query: a CTE per relation
    (grouped by its join variables), messages grouped by boundary, cyclic components."""

    graph: _Hypergraph
    query: CountQuery
    catalog: Catalog | None
    dialect: str
    ctes: dict[str, str] = field(default_factory=dict)  # name -> body, in creation order
    uses: dict[str, int] = field(default_factory=dict)
    #: (members, boundary variables) -> CTE name; a relation's base CTE has boundary {"__base__"}.
    keys: dict[tuple[Subset, frozenset[int] | frozenset[str]], str] = field(default_factory=dict)
    cyclic: list[Subset] = field(default_factory=list)
    wide: bool = False  # cast counts to the engine's widest exact integer type
    #: alias -> variable sets that contain a key of the relation (from the catalog)
    key_vars: Mapping[str, tuple[frozenset[int], ...]] = field(default_factory=dict)
    #: CTEs whose every row has c = 1 (keyed bases, and joins of them without GROUP BY)
    unit: set[str] = field(default_factory=set)
    grouped: int = 0  # GROUP BY messages emitted (for tests and the benchmark)

    # ---- naming
    def q(self, name: str) -> str:
        return quote_identifier(name, self.dialect)

    def count_type(self) -> str | None:
        if not self.wide:
            return None
        return self.count_type_wide()

    def count_type_wide(self) -> str | None:
        return {"duckdb": "HUGEINT", "postgres": "NUMERIC", "redshift": "NUMERIC", "spark": "DECIMAL(38, 0)"}.get(self.dialect)

    def _use(self, name: str) -> str:
        self.uses[name] = self.uses.get(name, 0) + 1
        return name

    # ---- keys
    def keyed(self, alias: str, variables: frozenset[int]) -> bool:
        """True if ``variables`` contain a key of ``alias``'s relation: one row per value."""
        return any(k <= variables for k in self.key_vars.get(alias, ()))

    def determined(self, members: Iterable[str], group: frozenset[int]) -> bool:
        """True if ``group`` determines one row of every base in ``members`` (keys as FDs).

        Then the join of those bases has at most one row per value of ``group`` and a GROUP BY
        on ``group`` is the identity (PROOF.md, section 2).
        """
        known = set(group)
        todo = [a for a in members]
        changed = True
        while changed:
            changed = False
            for a in todo:
                vars_a = self.graph.vars(a)
                if not vars_a <= known and self.keyed(a, frozenset(known) & vars_a):
                    known |= vars_a
                    changed = True
        return all(self.graph.vars(a) <= known for a in todo)

    # ---- base tables
    def table_name(self, alias: str) -> str:
        table = self.query.relation(alias).table
        if self.catalog is not None and self.catalog.has_table(table):
            table = self.catalog.table(table).name
        return table

    def conditions(self, alias: str) -> list[str]:
        """The WHERE of ``alias``'s base: join columns not NULL, intra-relation equalities, its selection."""
        conds: list[str] = []
        qa = self.q(alias)
        for cols in self.graph.columns[alias].values():
            rep = f"{qa}.{self.q(cols[0])}"
            conds.append(f"{rep} IS NOT NULL")
            for other in cols[1:]:
                conds.append(f"{rep} = {qa}.{self.q(other)}")
        predicate = self.query.selection_of(alias)
        if predicate is not None:
            conds.append("(" + _render_predicate(predicate, self.dialect) + ")")
        count = self.query.count
        if count.column is not None and count.column.alias == alias:
            conds.append(f"{qa}.{self.q(count.column.column)} IS NOT NULL")
        return conds

    def uniqueness_checks(self) -> list[tuple[str, int, str]]:
        """(alias, variable, SQL giving 1 if the variable's value is unique among the base's rows).

        For every relation with two or more variables whose table declares no key at all (a
        custodian who declares a table's keys declares its unique join columns too; checking
        them would only add a statement per call), each of its variables. A variable unique on the data is a key of this instance: the plan may
        skip GROUP BYs on it exactly as on a declared key (the same T_E; PROOF.md, section 2),
        and nothing undeclared is trusted, since it is checked on the rows the T_E reads.
        """
        out = []
        for alias in self.graph.aliases:
            variables = self.graph.columns[alias]
            if len(variables) < 2 or self.declares_keys(alias):
                continue
            qa = self.q(alias)
            where = " AND ".join(self.conditions(alias))
            for v, cols in variables.items():
                if self.keyed(alias, frozenset([v])):
                    continue
                rep = f"{qa}.{self.q(cols[0])}"
                out.append((alias, v, f"SELECT CASE WHEN COUNT(*) = COUNT(DISTINCT {rep}) THEN 1 ELSE 0 END "
                                      f"FROM {self.q(self.table_name(alias))} AS {qa} WHERE {where}"))
        return out

    def declares_keys(self, alias: str) -> bool:
        table = self.query.relation(alias).table
        if self.catalog is None or not self.catalog.has_table(table):
            return False
        declared = self.catalog.table(table)
        return bool(declared.primary_key or declared.unique)

    def base(self, alias: str) -> str:
        key = (frozenset([alias]), frozenset(["__base__"]))
        if key in self.keys:
            return self._use(self.keys[key])
        name = f"base_{len(self.keys)}"
        table = self.table_name(alias)
        qa = self.q(alias)
        conds = self.conditions(alias)
        selects: list[str] = []
        groups: list[str] = []
        for v, cols in self.graph.columns[alias].items():
            rep = f"{qa}.{self.q(cols[0])}"
            selects.append(f"{rep} AS {self.q(f'v{v}')}")
            groups.append(rep)
        unique = bool(groups) and self.keyed(alias, self.graph.vars(alias))
        if unique:
            cnt = "1"  # a key among the join columns: one row per value, no GROUP BY
        elif self.count_type():
            cnt = f"CAST(COUNT(*) AS {self.count_type()})"
        elif self.dialect == "duckdb":
            cnt = "CAST(COUNT(*) AS BIGINT)"
        else:
            cnt = "COUNT(*)"
        sql = f"SELECT {', '.join([*selects, cnt + ' AS c'])} FROM {self.q(table)} AS {qa}"
        if conds:
            sql += " WHERE " + " AND ".join(conds)
        if groups and not unique:
            sql += " GROUP BY " + ", ".join(groups)
        self.keys[key] = name
        self.ctes[name] = sql
        if unique:
            self.unit.add(name)
        return self._use(name)

    # ---- messages
    def message(self, members: Subset, tree: Mapping[str, str | None], node: str, group: frozenset[int], boundary: frozenset[int]) -> str:
        """CTE with columns v<var> for ``group`` and ``c``: counts of the join of ``node``'s subtree."""
        subtree = _subtree(tree, node)
        key = (subtree, group)
        if key in self.keys:
            return self._use(self.keys[key])
        children = sorted(a for a, p in tree.items() if p == node)
        node_vars = self.graph.vars(node)
        base = self.base(node)
        identity = self.determined(subtree, group)
        if not children and (group == node_vars or (identity and group <= node_vars)):
            self.uses[base] -= 1
            return self._use(base)  # the base table already is this message (extra columns unused)
        parts = [f"{self.q(base)} AS {self.q('b')}"]
        factors = [] if base in self.unit else [f"{self.q('b')}.{self.q('c')}"]
        carried: dict[int, str] = {v: "b" for v in node_vars}
        for k, child in enumerate(children):
            child_subtree = _subtree(tree, child)
            child_group = (self.graph.vars(child) & node_vars) | (boundary & self.graph.vars_of(child_subtree))
            m = self.message(members, tree, child, frozenset(child_group), boundary)
            alias = f"m{k}"
            on = [f"{self.q('b')}.{self.q(f'v{v}')} = {self.q(alias)}.{self.q(f'v{v}')}" for v in sorted(child_group & node_vars)]
            if on:
                parts.append(f"JOIN {self.q(m)} AS {self.q(alias)} ON " + " AND ".join(on))
            else:
                parts.append(f"CROSS JOIN {self.q(m)} AS {self.q(alias)}")
            if m not in self.unit:
                factors.append(f"{self.q(alias)}.{self.q('c')}")
            for v in child_group - node_vars:
                carried[v] = alias
        cols = [f"{self.q(carried[v])}.{self.q(f'v{v}')}" for v in sorted(group)]
        select = [f"{c} AS {self.q(f'v{v}')}" for c, v in zip(cols, sorted(group), strict=True)]
        product = " * ".join(factors) if factors else "1"
        name = f"msg_{len(self.keys)}"
        if identity and cols:
            sql = f"SELECT {', '.join([*select, product + ' AS c'])} FROM " + " ".join(parts)
            if not factors:
                self.unit.add(name)
        else:
            sql = f"SELECT {', '.join([*select, 'SUM(' + product + ') AS c'])} FROM " + " ".join(parts)
            if cols:
                sql += " GROUP BY " + ", ".join(cols)
            self.grouped += 1
        self.keys[key] = name
        self.ctes[name] = sql
        return self._use(name)

    def cost(self, tree: Mapping[str, str | None], node: str, group: frozenset[int], boundary: frozenset[int], seen: set) -> int:
        """GROUP BY messages that :meth:`message` would add for this (sub)tree (a dry run)."""
        subtree = _subtree(tree, node)
        key = (subtree, group)
        if key in self.keys or key in seen:
            return 0
        seen.add(key)
        children = [a for a, p in tree.items() if p == node]
        node_vars = self.graph.vars(node)
        identity = self.determined(subtree, group)
        total = 0
        if not children and (group == node_vars or (identity and group <= node_vars)):
            return 0
        for child in children:
            child_group = (self.graph.vars(child) & node_vars) | (boundary & self.graph.vars_of(_subtree(tree, child)))
            total += self.cost(tree, child, frozenset(child_group), boundary, seen)
        return total + (0 if identity and group else 1)

    def cyclic_component(self, members: Subset, boundary: frozenset[int]) -> str:
        key = (members, boundary)
        if key in self.keys:
            return self._use(self.keys[key])
        self.cyclic.append(members)
        order = [a for a in self.graph.aliases if a in members]
        parts: list[str] = []
        factors: list[str] = []
        seen: dict[int, str] = {}  # join variable -> the first alias that carries it
        for k, alias in enumerate(order):
            t = f"t{k}"
            base = self.base(alias)
            on = []
            for v in sorted(self.graph.vars(alias)):
                if v in seen:
                    on.append(f"{self.q(seen[v])}.{self.q(f'v{v}')} = {self.q(t)}.{self.q(f'v{v}')}")
                else:
                    seen[v] = t
            if k == 0:
                parts.append(f"{self.q(base)} AS {self.q(t)}")
            elif on:
                parts.append(f"JOIN {self.q(base)} AS {self.q(t)} ON " + " AND ".join(on))
            else:
                parts.append(f"CROSS JOIN {self.q(base)} AS {self.q(t)}")
            factors.append(f"{self.q(t)}.{self.q('c')}")
        cols = [f"{self.q(seen[v])}.{self.q(f'v{v}')}" for v in sorted(boundary)]
        select = [f"{c} AS {self.q(f'v{v}')}" for c, v in zip(cols, sorted(boundary), strict=True)]
        sql = f"SELECT {', '.join([*select, 'SUM(' + ' * '.join(factors) + ') AS c'])} FROM " + " ".join(parts)
        if cols:
            sql += " GROUP BY " + ", ".join(cols)
        name = f"cyc_{len(self.keys)}"
        self.keys[key] = name
        self.ctes[name] = sql
        self.grouped += 1
        return self._use(name)

    def statement(self, finals: list[tuple[Subset, str]]) -> str:
        materialize = self.dialect in ("duckdb", "postgres", "sqlite")
        ctes = []
        for name, body in self.ctes.items():
            if self.uses.get(name, 0) <= 0:
                continue
            # a keyed base is a filtered projection: scanning the table again is cheaper than a copy
            mat = " MATERIALIZED" if materialize and self.uses[name] > 1 and not (name in self.unit and name.startswith("base_")) else ""
            ctes.append(f"{self.q(name)} AS{mat} ({body})")
        columns = []
        for k, (_, name) in enumerate(finals):
            if name in self.unit:
                # every row has c = 1: T is 1 if there is a row, else 0 (no full scan needed)
                if self.dialect == "spark":  # Spark allows EXISTS only in filters and joins
                    columns.append(f"(SELECT COUNT(*) FROM (SELECT 1 FROM {self.q(name)} LIMIT 1) AS e) AS {self.q(f't{k}')}")
                else:
                    columns.append(f"(CASE WHEN EXISTS (SELECT 1 FROM {self.q(name)}) THEN 1 ELSE 0 END) AS {self.q(f't{k}')}")
            else:
                columns.append(f"(SELECT COALESCE(MAX({self.q('c')}), 0) FROM {self.q(name)}) AS {self.q(f't{k}')}")
        return "WITH " + ",\n".join(ctes) + "\nSELECT " + ", ".join(columns)


def _subtree(tree: Mapping[str, str | None], node: str) -> Subset:
    out = {node}
    frontier = [node]
    while frontier:
        n = frontier.pop()
        for a, p in tree.items():
            if p == n and a not in out:
                out.add(a)
                frontier.append(a)
    return frozenset(out)


def _reroot(tree: Mapping[str, str | None], root: str) -> dict[str, str | None]:
    """The same undirected tree oriented away from ``root``."""
    adjacent: dict[str, set[str]] = {a: set() for a in tree}
    for a, p in tree.items():
        if p is not None:
            adjacent[a].add(p)
            adjacent[p].add(a)
    out: dict[str, str | None] = {root: None}
    stack = [root]
    while stack:
        n = stack.pop()
        for m in sorted(adjacent[n]):
            if m not in out:
                out[m] = n
                stack.append(m)
    return out


@functools.lru_cache(maxsize=4096)
@functools.lru_cache(maxsize=4096)
def _render_predicate(predicate: str, dialect: str) -> str:
    expression = sqlglot.parse_one(predicate)
    for col in expression.find_all(exp.Column):
        col.set("this", exp.to_identifier(col.name, quoted=True))
        if col.table:
            col.set("table", exp.to_identifier(col.table, quoted=True))
    return expression.sql(dialect=dialect)


def _key_vars(graph: _Hypergraph, query: CountQuery, catalog: Catalog | None) -> dict[str, tuple[frozenset[int], ...]]:
    """For each alias, the keys of its table (primary and unique, from the catalog) made only of
    join columns, as sets of variables. Keys with other columns cannot make a group unique."""
    if catalog is None:
        return {}
    out: dict[str, tuple[frozenset[int], ...]] = {}
    for alias in query.aliases:
        table_name = query.relation(alias).table
        if not catalog.has_table(table_name):
            continue
        table = catalog.table(table_name)
        var_of = {col.lower(): v for v, cols in graph.columns[alias].items() for col in cols}
        found = []
        for key in (table.primary_key, *table.unique):
            if key and all(c.lower() in var_of for c in key):
                found.append(frozenset(var_of[c.lower()] for c in key))
        if found:
            out[alias] = tuple(found)
    return out


def compute_te(
    engine: Engine,
    query: CountQuery,
    catalog: Catalog | None,
    subsets: Iterable[Iterable[str]],
    *,
    timeout_s: float | None = None,
    unique_check: bool = True,
) -> ResidualCounts:
    """T_E for each E in ``subsets`` (sets of aliases), computed by ``engine`` in one statement.

    With a catalog, the primary and unique keys it lists (which the engine enforces, or
    ``load_database`` checked on the data) let a GROUP BY on a key be skipped.

    Raises UnsupportedQuery, before reading any row, when a join class equates columns whose
    engine equality is not the equality a GROUP BY counts by (different join types, checked on
    ``catalog`` or, without one, on the engine's own; or a collation): PROOF.md, section 1.

    >>> # see tests/unit/sensitivity for runnable examples against DuckDB
    """
    started = time.perf_counter()
    wanted = [frozenset(s) for s in subsets]
    for s in wanted:
        unknown = s - set(query.aliases)
        if unknown:
            raise InternalError(f"T_E asked for unknown aliases {sorted(unknown)}")
    if query.joins:
        check_join_types(query, catalog if catalog is not None else engine.introspect())
        check_join_collations(engine, query)
    dialect = getattr(engine, "dialect", "duckdb")
    graph, full_tree, key_vars = _structure(query, catalog)
    unique_sql, unique_found = "", []
    if unique_check and len(query.aliases) > 2:
        # Variables unique on the data act as keys (checked, not trusted): one small statement.
        checks = _TeSqlBuilder(graph, query, catalog, dialect, key_vars=key_vars).uniqueness_checks()
        if checks:
            sql = "SELECT " + ", ".join(f"({c}) AS {quote_identifier(f'u{k}', dialect)}" for k, (_, _, c) in enumerate(checks))
            unique_sql = sql
            row = (engine.execute(sql, timeout_s=timeout_s) if timeout_s is not None else engine.execute(sql)).rows[0]
            merged = {a: list(ks) for a, ks in key_vars.items()}
            for (alias, v, _), unique in zip(checks, row, strict=True):
                if unique is not None and int(unique) == 1:
                    merged.setdefault(alias, []).append(frozenset([v]))
                    unique_found.append((alias, graph.columns[alias][v][0]))
            key_vars = {a: tuple(ks) for a, ks in merged.items()}

    def build(wide: bool) -> tuple[_TeSqlBuilder, list[tuple[Subset, str]]]:
        plan = _TeSqlBuilder(graph, query, catalog, dialect, wide=wide, key_vars=key_vars)
        components: dict[Subset, str] = {}
        finals: list[tuple[Subset, str]] = []
        for s in wanted:
            for comp in graph.components(s):
                if comp in components:
                    continue
                boundary = graph.boundary(comp)
                tree = _restricted_tree(full_tree, comp) if full_tree is not None else None
                if tree is None:
                    top_pref = next(a for a in query.aliases if a in comp)
                    tree = _gyo_tree(graph, comp, prefer_root=top_pref)
                if tree is None:
                    name = plan.cyclic_component(comp, boundary)
                else:
                    if key_vars and len(comp) > 1:
                        # the root whose messages need the fewest new GROUP BYs (ties: the default)
                        default = next(a for a, p in tree.items() if p is None)
                        options = [default, *sorted(a for a in comp if a != default)]
                        scored = [(plan.cost(_reroot(tree, r), r, boundary, boundary, set()), k, r) for k, r in enumerate(options)]
                        tree = _reroot(tree, min(scored)[2])
                    root = next(a for a, p in tree.items() if p is None)
                    name = plan.message(comp, tree, root, boundary, boundary)
                components[comp] = name
                finals.append((comp, name))
        return plan, finals

    plan, finals = build(False)
    values: dict[Subset, int] = {}
    sql_texts: tuple[str, ...] = ()
    statements = 0
    comp_values: dict[Subset, int] = {}
    if finals:
        # First with the engine's 64-bit integers (fast; DuckDB and PostgreSQL raise on overflow,
        # they never wrap), then, only if that overflowed, again with HUGEINT / NUMERIC.
        for wide in (False, True):
            if wide:
                plan, finals = build(True)
            sql = plan.statement(finals)
            sql_texts = (*sql_texts, sql)
            statements += 1
            try:
                result = engine.execute(sql, timeout_s=timeout_s) if timeout_s is not None else engine.execute(sql)
            except EngineError as exc:
                if _is_overflow(exc) and not wide and plan.count_type_wide() is not None:
                    continue
                if _is_overflow(exc):
                    raise UnsupportedQuery(
                        "count_overflow",
                        f"a residual join count exceeds what the engine can hold exactly: {exc.message}",
                        hint="the bound would be astronomically large; restrict the query with selections",
                    ) from exc
                raise
            row = result.rows[0]
            comp_values = {comp: _exact_int(row[k]) for k, (comp, _) in enumerate(finals)}
            break
    for s in wanted:
        value = 1
        for comp in graph.components(s):
            value *= comp_values[comp]
        values[s] = value
    return ResidualCounts(
        values=values,
        statements=statements,
        seconds=time.perf_counter() - started,
        sql=sql_texts,
        cyclic_components=tuple(plan.cyclic),
        unique_sql=unique_sql,
        unique_on_data=tuple(unique_found),
    )


def _structure(query: CountQuery, catalog: Catalog | None):
    """Hypergraph, full join tree and key variables of ``query`` (cached per query and catalog)."""
    try:
        return _structure_cached(query, catalog)
    except TypeError:  # an unhashable catalog
        return _structure_uncached(query, catalog)


def _structure_uncached(query: CountQuery, catalog: Catalog | None):
    graph = _Hypergraph.of(query)
    full_tree = _gyo_tree(graph, query.aliases, prefer_root=query.aliases[0])
    return graph, full_tree, _key_vars(graph, query, catalog)


_structure_cached = functools.lru_cache(maxsize=256)(_structure_uncached)


def _is_overflow(exc: Exception) -> bool:
    text = str(exc).lower()
    return "overflow" in text or "out of range" in text


def _exact_int(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, bool):
        raise InternalError(f"count came back as a boolean: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    raise EngineError(
        f"the engine returned a join count as {type(value).__name__} ({value!r}), not an exact integer",
        hint="the count overflowed the engine's integer type; use DuckDB or PostgreSQL",
    )
