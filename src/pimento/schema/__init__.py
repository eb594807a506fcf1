"""Catalog of a database: tables, columns, keys, foreign keys, functional dependencies."""

from __future__ import annotations

from pimento.schema.catalog import Catalog, Column, ForeignKey, FunctionalDependency, Table, normalize_type

__all__ = ["Catalog", "Column", "ForeignKey", "FunctionalDependency", "Table", "normalize_type"]
