"""The target schema: a SQL DDL file, or the catalog of an existing database.

:func:`load_target` returns the :class:`Target`: the catalog (tables, keys, unique keys, foreign
keys) the extracted rows must satisfy and the DDL statements that create those tables in the
output DuckDB database. A DDL file is executed as DuckDB SQL on an in-memory database first, so a
bad statement is reported before anything is written; an existing database (any engine Pimento
opens) contributes its catalog, and the DDL is generated from it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pimento.errors import CatalogError, DataSourceError, UserError
from pimento.schema import Catalog, Table
from pimento.sql.quote import quote_identifier as _q

__all__ = ["INTERNAL_PREFIX", "Target", "ddl_from_catalog", "load_target", "table_order"]

#: Tables whose name starts with this are Pimento's own bookkeeping, never part of the target.
INTERNAL_PREFIX = "_pimento_"

_DDL_SUFFIXES = (".sql", ".ddl")


@dataclass(frozen=True)
class Target:
    """The schema to fill: its catalog, the DDL creating it, and a fingerprint of that DDL."""

    catalog: Catalog
    ddl: tuple[str, ...]
    source: str

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256("\n;\n".join(self.ddl).encode("utf-8")).hexdigest()

    @property
    def order(self) -> tuple[str, ...]:
        return table_order(self.catalog)


def load_target(schema: str | Path) -> Target:
    """Read the target schema from a DDL file (``.sql``/``.ddl``) or an existing database.

    Raises:
        DataSourceError: the file is missing or unreadable. CatalogError: the DDL does not run, or
            defines no table.
    """
    path = Path(schema)
    text_schema = path.suffix.lower() in _DDL_SUFFIXES
    if not str(schema).startswith("postgresql://") and not path.exists():
        raise DataSourceError(f"schema not found: {schema}", hint="give a SQL DDL file (.sql) or an existing database")
    if text_schema:
        return _from_ddl(path)
    return _from_database(str(schema))


def _from_ddl(path: Path) -> Target:
    from pimento.engines.duckdb_engine import DuckDBEngine

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataSourceError(f"cannot read the schema file {path}: {exc}") from exc
    try:
        parsed = duckdb.extract_statements(text)
    except duckdb.Error as exc:
        raise CatalogError(f"{path}: the DDL does not parse: {_first_line(exc)}") from exc
    for statement in parsed:
        if statement.type != duckdb.StatementType.CREATE:
            first = " ".join(str(statement.query).split())[:80]
            raise CatalogError(f"{path}: only CREATE statements belong in a schema file, found: {first}")
    ddl = tuple(str(s.query).strip() for s in parsed)
    engine = DuckDBEngine(":memory:", read_only=False)
    created: list[str] = []  # table names in the order the DDL creates them
    try:
        for one in ddl:
            try:
                engine.connection.execute(one)
            except duckdb.Error as exc:
                raise CatalogError(f"{path}: the DDL does not run on DuckDB: {_first_line(exc)}") from exc
            names = [r[0] for r in engine.connection.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
            created.extend(n for n in names if n not in created)
        catalog = engine.introspect()
    finally:
        engine.close()
    tables = sorted(catalog.tables, key=lambda t: created.index(t.name) if t.name in created else len(created))
    catalog = Catalog(tuple(tables), catalog.foreign_keys, catalog.functional_dependencies)
    return _checked(Target(catalog, ddl, str(path)))


def _from_database(location: str) -> Target:
    from pimento.engines.database import load_database

    try:
        database = load_database(location)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - an unreadable file is the user's input
        raise DataSourceError(f"cannot read the schema of {location}: {exc}") from exc
    try:
        catalog = database.catalog
    finally:
        database.close()
    tables = tuple(t for t in catalog.tables if not t.name.lower().startswith(INTERNAL_PREFIX))
    catalog = Catalog(
        tables,
        tuple(fk for fk in catalog.foreign_keys if catalog.has_table(fk.table) and not fk.table.startswith(INTERNAL_PREFIX)),
    )
    return _checked(Target(catalog, ddl_from_catalog(catalog), location))


def _checked(target: Target) -> Target:
    if not target.catalog.tables:
        raise CatalogError(f"{target.source}: the schema defines no table")
    for table in target.catalog.tables:
        if table.name.lower().startswith(INTERNAL_PREFIX):
            raise CatalogError(f"{target.source}: table names starting with {INTERNAL_PREFIX!r} are reserved")
    return target


def ddl_from_catalog(catalog: Catalog) -> tuple[str, ...]:
    """``CREATE TABLE`` statements (DuckDB) for ``catalog``: types, NOT NULL, keys and foreign keys."""
    statements = []
    for name in table_order(catalog):
        table = catalog.table(name)
        parts = [f"{_q(c.name)} {c.raw_type or 'VARCHAR'}{'' if c.nullable else ' NOT NULL'}" for c in table.columns]
        if table.primary_key:
            parts.append(f"PRIMARY KEY ({', '.join(_q(c) for c in table.primary_key)})")
        parts.extend(f"UNIQUE ({', '.join(_q(c) for c in u)})" for u in table.unique)
        for fk in catalog.foreign_keys_of(table.name):
            if fk.declared:
                continue  # pimento.toml declarations are checked by Pimento, not by the engine
            parts.append(
                f"FOREIGN KEY ({', '.join(_q(c) for c in fk.columns)}) "
                f"REFERENCES {_q(fk.ref_table)} ({', '.join(_q(c) for c in fk.ref_columns)})"
            )
        statements.append(f"CREATE TABLE {_q(table.name)} (\n    " + ",\n    ".join(parts) + "\n)")
    return tuple(statements)


def table_order(catalog: Catalog) -> tuple[str, ...]:
    """Table names with every table after the tables its foreign keys point to (catalog order on ties).

    A foreign-key cycle is broken in catalog order (its rows are then checked by the engine).
    """
    names = list(catalog.table_names)
    deps = {
        n: {catalog.table(fk.ref_table).name for fk in catalog.foreign_keys_of(n) if catalog.has_table(fk.ref_table)} - {n}
        for n in names
    }
    ordered: list[str] = []
    while len(ordered) < len(names):
        ready = [n for n in names if n not in ordered and deps[n] <= set(ordered)]
        if not ready:
            ready = [next(n for n in names if n not in ordered)]
        ordered.append(ready[0])
    return tuple(ordered)


def key_of(table: Table) -> tuple[str, ...]:
    """The columns that identify a row: the primary key, else the first unique key, else none."""
    if table.primary_key:
        return tuple(table.primary_key)
    return tuple(table.unique[0]) if table.unique else ()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
