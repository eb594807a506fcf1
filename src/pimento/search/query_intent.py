"""What a warm-start count query asks for (its intent), independent of its join structure.

The schema-graph expander explores other join structures that keep the same *intent*: the same
filters (each a predicate over column names, re-targetable to any relation holding those columns)
and the same count target. Correctness is then judged by execution clusters on the synthetic
database, never assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from pimento.schema import Catalog
from pimento.sql.ir import Attribute, Count, CountQuery

__all__ = ["CountIntent", "FilterIntent", "Intent", "grain", "intent_of"]


@dataclass(frozen=True)
class FilterIntent:
    """A single-relation predicate, stored with the placeholder alias ``__r``."""

    template: str
    columns: frozenset[str]
    origin_table: str
    origin_alias: str

    def on(self, alias: str, rename: dict[str, str] | None = None) -> str:
        """The predicate with its columns qualified by ``alias`` (and renamed by ``rename``, lower-cased keys)."""
        tree = sqlglot.parse_one(self.template)
        for column in tree.find_all(exp.Column):
            if rename and column.name.lower() in rename:
                column.set("this", exp.to_identifier(rename[column.name.lower()]))
            column.set("table", exp.to_identifier(alias))
        return tree.sql()

    def hostable_by(self, table: str, catalog: Catalog) -> bool:
        t = catalog.table(table)
        return all(t.has_column(c) for c in self.columns)


@dataclass(frozen=True)
class CountIntent:
    """COUNT(*) (column None) or COUNT([DISTINCT] column) by column name."""

    column: str | None
    distinct: bool
    origin_table: str | None

    def hostable_by(self, table: str, catalog: Catalog) -> bool:
        return self.column is None or catalog.table(table).has_column(self.column)

    def on(self, alias: str, table: str, catalog: Catalog, column: str | None = None) -> Count:
        if self.column is None:
            return Count()
        return Count(Attribute(alias, catalog.table(table).column(column or self.column).name), self.distinct)


@dataclass(frozen=True)
class Intent:
    filters: tuple[FilterIntent, ...]
    count: CountIntent
    origin_tables: frozenset[str]
    #: The warm start's :func:`grain` (None: not computed, no grain check).
    grain: frozenset[str] | None = None
    #: The warm start's own join predicates as (table, column, table, column): the expander may
    #: use them like foreign keys (a proposal can join on columns the catalog declares no key for).
    joins: frozenset[tuple[str, str, str, str]] = frozenset()

    @property
    def size(self) -> int:
        return len(self.origin_tables)


def _references(catalog: Catalog, table: str, column: str, ref_table: str, ref_column: str) -> bool:
    for fk in catalog.foreign_keys_of(table):
        if (
            len(fk.columns) == 1
            and fk.columns[0].lower() == column.lower()
            and fk.ref_table.lower() == ref_table.lower()
            and fk.ref_columns[0].lower() == ref_column.lower()
        ):
            return True
    return False


def grain(query: CountQuery, catalog: Catalog) -> frozenset[str]:
    """The tables that decide how many rows a COUNT(*) counts, ignoring filters (lower-cased names).

    A relation P is eliminated when every join predicate touching it is on one unique key column
    P.k of P and every partner column references P.k by a foreign key: each partner row then
    matches exactly one row of P, so dropping P (and joining the partners to each other on the
    key value) keeps the row count, filters aside. Elimination repeats until nothing changes.
    The relation holding the count column is never eliminated. Two formulations of one question
    that count the same thing have the same grain; a formulation that drops the table whose rows
    are counted (``COUNT(*) FROM countries WHERE ...`` for "how many car models ...") does not.
    A 1:1 extension (Prescription.order_id, a unique foreign key to MedicationOrders) stands for
    the row it extends. The grain also matters for COUNT(DISTINCT x): joining a table that
    references x's table (Has_Pet for Pets) keeps only the referenced rows.
    """
    tables = {r.alias: r.table for r in query.relations}
    joins = [(j.left, j.right) for j in query.joins]
    keep = query.count.column.alias if query.count.column is not None else None
    changed = True
    while changed and len(tables) > 1:
        changed = False
        for alias in sorted(tables):
            if alias == keep:
                continue
            touching = [(a, b) if a.alias == alias else (b, a) for a, b in joins if alias in (a.alias, b.alias)]
            if not touching or any(other.alias == alias for _, other in touching):
                continue
            columns = {mine.column.lower() for mine, _ in touching}
            if len(columns) != 1:
                continue
            column = touching[0][0].column
            table = tables[alias]
            if not catalog.has_table(table) or not catalog.table(table).is_key((column,)):
                continue
            if not all(_references(catalog, tables[o.alias], o.column, table, column) for _, o in touching):
                continue
            partners = [o for _, o in touching]
            joins = [(a, b) for a, b in joins if alias not in (a.alias, b.alias)]
            joins += [(partners[0], o) for o in partners[1:]]
            del tables[alias]
            changed = True
            break
    return frozenset(_extension_root(catalog, t) for t in tables.values())


def _extension_root(catalog: Catalog, table: str) -> str:
    """Follow 1:1 extensions (a foreign key that is a key of its table) to the row they extend."""
    seen = {table.lower()}
    while True:
        nxt = next(
            (
                fk.ref_table
                for fk in catalog.foreign_keys_of(table)
                if catalog.has_table(table) and catalog.table(table).is_key(fk.columns) and fk.ref_table.lower() not in seen
            ),
            None,
        )
        if nxt is None:
            return table.lower()
        table = nxt
        seen.add(table.lower())


def intent_of(query: CountQuery, catalog: Catalog | None = None) -> Intent:
    """Split each relation's selection into conjuncts and abstract the alias away.

    With ``catalog``, also record the query's :func:`grain`.
    """
    filters: list[FilterIntent] = []
    for selection in query.selections:
        table = query.relation(selection.alias).table
        tree = sqlglot.parse_one(selection.predicate)
        conjuncts = list(tree.flatten()) if isinstance(tree, exp.And) else [tree]
        for conjunct in conjuncts:
            conjunct = conjunct.copy()
            columns = set()
            for column in conjunct.find_all(exp.Column):
                column.set("table", exp.to_identifier("__r"))
                columns.add(column.name.lower())
            filters.append(FilterIntent(conjunct.sql(), frozenset(columns), table, selection.alias))
    counted = query.count.column
    count = CountIntent(
        counted.column.lower() if counted else None,
        query.count.distinct,
        query.relation(counted.alias).table if counted else None,
    )
    g = grain(query, catalog) if catalog is not None else None
    joins = frozenset(
        (query.relation(j.left.alias).table, j.left.column, query.relation(j.right.alias).table, j.right.column)
        for j in query.joins
    )
    return Intent(tuple(filters), count, frozenset(r.table for r in query.relations), g, joins)
