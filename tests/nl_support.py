"""Small schemas for the offline parser's rule tests: a catalog from tables, and the value index a
small DP synthetic copy gives (every text column only the placeholder)."""

from __future__ import annotations

from pimento.nl import ValueIndex
from pimento.schema import Catalog


def catalog(tables, fks=()) -> Catalog:
    return Catalog(tuple(tables), tuple(fks))


def placeholder_index(cat: Catalog) -> ValueIndex:
    return ValueIndex.from_values(
        {(t.name, c.name): ["[synthetic]"] for t in cat.tables for c in t.columns if c.type == "text"}, synthetic=True
    )
