"""Writing the synthetic DuckDB file: the source's DDL (or DDL from the catalog), the rows, the marker table."""

from __future__ import annotations

import json
import re
from typing import Any

import duckdb
import numpy as np

from pimento.engines.base import Engine
from pimento.errors import DataSourceError
from pimento.schema import Catalog
from pimento.schema.synthetic import SYNTH_META_TABLE as META_TABLE
from pimento.sql.quote import quote_identifier, quote_identifiers

__all__ = ["write_database", "source_ddl", "META_TABLE"]


def _table_order(catalog: Catalog) -> list[str]:
    names = [t.name for t in catalog.tables if not t.name.startswith("_pimento")]
    done: list[str] = []
    pending = list(names)
    while pending:
        progressed = False
        for t in list(pending):
            refs = {fk.ref_table for fk in catalog.foreign_keys_of(t) if fk.ref_table != t}
            if refs <= set(done) or not (refs & set(pending)):
                done.append(t)
                pending.remove(t)
                progressed = True
        if not progressed:
            done.extend(pending)
            break
    return done


_DUCK_TYPES = {"integer": "BIGINT", "real": "DOUBLE", "date": "DATE", "timestamp": "TIMESTAMP", "boolean": "BOOLEAN"}


def _ddl_from_catalog(catalog: Catalog, table: str, families: dict[tuple[str, str], str] | None = None) -> str:
    t = catalog.table(table)
    declared = _declared_foreign_keys(catalog, table)
    parts = [
        f"{quote_identifier(c.name)} {_column_type(catalog, table, c.name, families)}" + (" NOT NULL" if not c.nullable else "")
        for c in t.columns
    ]
    if t.primary_key:
        parts.append(f"PRIMARY KEY ({quote_identifiers(t.primary_key)})")
    for u in t.unique:
        parts.append(f"UNIQUE ({quote_identifiers(u)})")
    for fk in declared:
        parts.append(
            f"FOREIGN KEY ({quote_identifiers(fk.columns)}) REFERENCES {quote_identifier(fk.ref_table)} ({quote_identifiers(fk.ref_columns)})"
        )
    return f"CREATE TABLE {quote_identifier(t.name)} (" + ", ".join(parts) + ")"


def _declared_foreign_keys(catalog: Catalog, table: str) -> list[Any]:
    """The foreign keys of ``table`` written as constraints: those that reference a key of another table."""
    out = []
    for fk in catalog.foreign_keys_of(table):
        ref = catalog.table(fk.ref_table)
        keys = [ref.primary_key, *ref.unique]
        if any(tuple(k.lower() for k in key) == tuple(c.lower() for c in fk.ref_columns) for key in keys if key) and ref.name != table:
            out.append(fk)
    return out


def _column_type(catalog: Catalog, table: str, column: str, families: dict[tuple[str, str], str] | None, depth: int = 0) -> str:
    """The DuckDB type of a column of the generated DDL. A column of a written foreign key gets the type of the
    column it references (DuckDB refuses a foreign key between ``INT(11)``'s fallback BIGINT and an INTEGER;
    its values are copies of the referenced key's anyway)."""
    if depth < 8:  # a chain of foreign keys; a cycle stops at the declared type
        for fk in _declared_foreign_keys(catalog, table):
            for c, rc in zip(fk.columns, fk.ref_columns):
                if c.lower() == column.lower():
                    ref = catalog.table(fk.ref_table).column(rc)
                    return _column_type(catalog, fk.ref_table, ref.name, families, depth + 1)
    c = catalog.table(table).column(column)
    fam = (families or {}).get((table, c.name), c.type)
    if fam != c.type:
        # The DP type test chose another family than the declared one (a TEXT column of
        # numbers, a DATE column of integers): a type the written values fit.
        raw = _DUCK_TYPES.get(fam, "VARCHAR")
    else:
        raw = c.raw_type or _DUCK_TYPES.get(c.type, "VARCHAR")
    return _duck_type(raw, fam)


def _duck_type(raw: str, family: str) -> str:
    try:
        duckdb.sql(f"SELECT CAST(NULL AS {raw})")
        return raw
    except duckdb.Error:
        return _DUCK_TYPES.get(family, "VARCHAR")


def source_ddl(engine: Engine, catalog: Catalog, families: dict[tuple[str, str], str] | None = None) -> dict[str, str]:
    """CREATE TABLE statements: the source's own (DuckDB) or generated from the catalog, where a
    column whose family the DP type test changed (``families``) gets a type its values fit."""
    out: dict[str, str] = {}
    if getattr(engine, "name", "") == "duckdb":
        rows = engine.execute("SELECT table_name, sql FROM duckdb_tables() WHERE schema_name = current_schema()").rows
        have = {r[0]: r[1] for r in rows}
        for t in catalog.tables:
            if t.name in have and have[t.name] and _stored_ddl_usable(have[t.name], catalog, t.name):
                out[t.name] = have[t.name]
    for t in catalog.tables:
        if t.name not in out and not t.name.startswith("_pimento"):
            out[t.name] = _ddl_from_catalog(catalog, t.name, families)
    return out


_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _stored_ddl_usable(ddl: str, catalog: Catalog, table: str) -> bool:
    """Whether DuckDB's stored CREATE TABLE of ``table`` can be replayed: DuckDB writes the table
    a foreign key references without quotes (``REFERENCES my table(id)``), so a referenced name
    that is not a plain identifier, or a statement that does not parse, falls back to the DDL
    generated from the catalog (which quotes every name)."""
    if any(not _PLAIN_NAME.fullmatch(fk.ref_table) for fk in catalog.foreign_keys_of(table)):
        return False
    try:
        duckdb.extract_statements(ddl)
    except duckdb.Error:
        return False
    return True


def write_database(
    path: str,
    catalog: Catalog,
    ddl: dict[str, str],
    tables: dict[str, dict[str, np.ndarray]],
    meta: dict[str, Any],
    families: dict[tuple[str, str], str] | None = None,
) -> None:
    """Write the synthetic tables and the marker table in one transaction. ``tables`` is emptied
    as it goes: each table's arrays are dropped once inserted, so the peak is one table's copy."""
    try:
        con = duckdb.connect(path)
    except duckdb.Error as exc:
        raise DataSourceError(f"cannot create {path}: {exc}") from exc
    try:
        con.execute("BEGIN")
        for t in _table_order(catalog):
            con.execute(ddl[t])
            cols = [c.name for c in catalog.table(t).columns]
            data = tables.pop(t, None)  # the caller's copy: freed as soon as it is written
            n = len(next(iter(data.values()))) if data else 0
            if data and n:
                frame: dict[str, np.ndarray] = {}
                select = []
                for i, c in enumerate(catalog.table(t).columns):
                    values, null = _column_array(data[c.name], (families or {}).get((t, c.name), c.type))
                    frame[f"c{i}"] = values
                    frame[f"n{i}"] = null
                    select.append(f'CASE WHEN n{i} THEN NULL ELSE CAST(c{i} AS {_target_type(con, t, c.name)}) END')
                data = None
                con.register("_pimento_frame", frame)
                con.execute(f"INSERT INTO {quote_identifier(t)} SELECT " + ", ".join(select) + " FROM _pimento_frame")
                con.unregister("_pimento_frame")
                frame.clear()
        con.execute(
            f"CREATE TABLE {META_TABLE} (epsilon VARCHAR NOT NULL, delta VARCHAR NOT NULL, root VARCHAR NOT NULL, "
            "seed BIGINT NOT NULL, source_fingerprint VARCHAR NOT NULL, created_at TIMESTAMP NOT NULL, "
            "pimento_version VARCHAR NOT NULL, ledger_charge VARCHAR, details VARCHAR NOT NULL, "
            "copy_id VARCHAR NOT NULL, database_key VARCHAR NOT NULL)"
        )
        con.execute(
            f"INSERT INTO {META_TABLE} VALUES (?, ?, ?, ?, ?, CAST(? AS TIMESTAMP), ?, ?, ?, ?, ?)",
            [
                meta["epsilon"], meta["delta"], meta["root"], meta["seed"], meta["source_fingerprint"],
                meta["created_at"], meta["pimento_version"], meta.get("ledger_charge"), json.dumps(meta["details"], default=str),
                meta["copy_id"], meta["database"],
            ],
        )
        con.execute("COMMIT")
    except duckdb.Error as exc:
        con.execute("ROLLBACK")
        raise DataSourceError(f"writing the synthetic database {path} failed: {str(exc).splitlines()[0]}") from exc
    finally:
        con.close()


def _target_type(con: Any, table: str, column: str) -> str:
    row = con.execute(
        "SELECT data_type FROM information_schema.columns WHERE table_name = ? AND column_name = ?", [table, column]
    ).fetchone()
    return row[0] if row else "VARCHAR"


def _column_array(values: np.ndarray, family: str) -> tuple[np.ndarray, np.ndarray]:
    """A typed numpy array (fast to scan) and a NULL mask for an object column."""
    items = [v.item() if isinstance(v, np.generic) else v for v in values.tolist()]
    null = np.array([v is None or (isinstance(v, float) and v != v) for v in items], dtype=bool)
    if family == "integer":
        try:
            return np.array([0 if m else int(v) for v, m in zip(items, null)], dtype=np.int64), null
        except (TypeError, ValueError, OverflowError):
            pass
    if family == "real":
        try:
            return np.array([0.0 if m else float(v) for v, m in zip(items, null)], dtype=np.float64), null
        except (TypeError, ValueError):
            pass
    if family == "boolean":
        return np.array([False if m else bool(v) for v, m in zip(items, null)], dtype=bool), null
    return np.array(["" if m else str(v) for v, m in zip(items, null)], dtype=str), null
