"""What a warm-start query asks for, independent of its join structure.

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

__all__ = ["CountIntent", "FilterIntent", "Intent", "intent_of"]


@dataclass(frozen=True)
class FilterIntent:
    """A single-relation predicate, stored with the placeholder alias ``__r``."""

    template: str
    columns: frozenset[str]
    origin_table: str
    origin_alias: str

    def on(self, alias: str) -> str:
        """The predicate with its columns qualified by ``alias``."""
        tree = sqlglot.parse_one(self.template)
        for column in tree.find_all(exp.Column):
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

    def on(self, alias: str, table: str, catalog: Catalog) -> Count:
        if self.column is None:
            return Count()
        return Count(Attribute(alias, catalog.table(table).column(self.column).name), self.distinct)


@dataclass(frozen=True)
class Intent:
    filters: tuple[FilterIntent, ...]
    count: CountIntent
    origin_tables: frozenset[str]

    @property
    def size(self) -> int:
        return len(self.origin_tables)


def intent_of(query: CountQuery) -> Intent:
    """Split each relation's selection into conjuncts and abstract the alias away."""
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
    column = query.count.column
    count = CountIntent(
        column.column.lower() if column else None,
        query.count.distinct,
        query.relation(column.alias).table if column else None,
    )
    return Intent(tuple(filters), count, frozenset(r.table for r in query.relations))
