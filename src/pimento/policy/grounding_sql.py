"""The SQL that grounds a policy in a schema, shared by the compiler and information implication.

* :class:`GroundingTarget`: the database a policy is grounded on. Every grounded SQL fragment is
  parsed with sqlglot (one expression, no statements), its tables checked against the catalog,
  and run once with ``LIMIT 0`` on the engine; a fragment that fails names its clause (coverage).
* :func:`subject_expression_sql` and :func:`subject_path_sql`: the data subject of a row, by a
  declared column or foreign-key path, the subject principal's key, or a foreign key to it.
* :func:`row_key_columns`: the key that gives a relation's cells their provenance.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from pimento.engines.base import Engine
from pimento.errors import CatalogError, EngineError, PolicyError
from pimento.policy.views_sql import NO_SUBJECT, PREFIX, quote
from pimento.schema import Catalog

__all__ = [
    "GroundingTarget",
    "declared_subject",
    "row_key_columns",
    "subject_expression_sql",
    "subject_path_sql",
]


@dataclass(frozen=True)
class GroundingTarget:
    """The database a policy is grounded on: its catalog, the engine that probes each fragment
    (None: fragments are parsed and checked against the catalog but not run), the SQL dialect."""

    catalog: Catalog
    engine: Engine | None
    dialect: str

    def fragment(self, sql: str, *, clause: str, what: str, select: bool) -> exp.Expr:
        """A grounded SQL fragment, parsed and checked against the catalog (see :func:`_parse_fragment`)."""
        tree = _parse_fragment(sql, clause=clause, what=what, dialect=self.dialect, select=select)
        _check_tables(tree, self.catalog, clause=clause, what=what, dialect=self.dialect)
        return tree

    def predicate(self, sql: str, relation: str, *, clause: str, what: str) -> str:
        """A row predicate over ``relation``, its columns qualified with ``t``, NULL read as FALSE."""
        tree = self.fragment(sql, clause=clause, what=what, select=False)
        cols = {c.lower() for c in self.catalog.table(relation).column_names}
        return f"COALESCE(({_qualify_to(tree, 't', cols).sql(self.dialect)}), FALSE)"

    def probe(self, sql: str, *, clause: str, what: str) -> tuple[str, ...]:
        return _probe(self.engine, sql, clause=clause, what=what)


def _parse_fragment(sql: str, *, clause: str, what: str, dialect: str, select: bool) -> exp.Expr:
    """Parse one grounded SQL fragment: a SELECT (``select``) or a boolean expression."""
    tree: exp.Expr | None
    try:
        if select:
            statements = sqlglot.parse(sql, read=dialect)
            if len(statements) != 1 or not isinstance(statements[0], exp.Query):
                raise PolicyError(f"clause {clause}: {what} must be exactly one SELECT statement", clause=clause)
            tree = statements[0]
        else:
            tree = sqlglot.parse_one(f"SELECT 1 WHERE {sql}", read=dialect)
            tree = tree.args["where"].this
    except ParseError as exc:
        raise PolicyError(f"clause {clause}: {what} is not valid SQL: {exc.errors[0]['description'] if exc.errors else exc}",
                          clause=clause) from None
    forbidden = (exp.Insert, exp.Update, exp.Delete, exp.Drop, exp.Create, exp.Alter, exp.Command, exp.Placeholder)
    bad = tree.find(*forbidden)
    if bad is not None:
        raise PolicyError(f"clause {clause}: {what} may not contain {bad.key.upper()}", clause=clause)
    return tree


def _check_tables(tree: exp.Expr, catalog: Catalog, *, clause: str, what: str, dialect: str | None = None) -> None:
    """Every table ``tree`` reads is in the catalog; on PostgreSQL, which folds unquoted names to
    lower case, each is rewritten in place to the catalog's spelling, quoted (``Link`` -> ``"Link"``)."""
    cte_names = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            raise PolicyError(f"clause {clause}: {what} reads from a table function ({table.sql()})", clause=clause)
        if table.name.lower() in cte_names:
            continue
        if not catalog.has_table(table.name):
            raise PolicyError(
                f"clause {clause}: {what} uses table {table.name!r}, which the database does not have",
                clause=clause,
                hint=f"tables: {', '.join(catalog.table_names)}",
            )
        if dialect == "postgres":
            table.set("this", exp.to_identifier(catalog.table(table.name).name, quoted=True))


def _qualify_to(tree: exp.Expr, alias: str, columns: set[str]) -> exp.Expr:
    """Qualify the unqualified columns of a predicate over one relation with ``alias``."""
    tree = tree.copy()
    for col in list(tree.find_all(exp.Column)):
        if col.table or col.find_ancestor(exp.Query) is not None:
            continue
        if col.name.lower() in columns:
            col.set("table", exp.to_identifier(alias))
    return tree


def row_key_columns(catalog: Catalog, relation: str, clause: str) -> tuple[str, ...]:
    table = catalog.table(relation)
    key = table.primary_key or (table.unique[0] if table.unique else ())
    if not key:
        raise PolicyError(
            f"clause {clause}: relation {table.name!r} has no primary or unique key, so its cells have no provenance",
            clause=clause,
            hint="declare a primary key (or a unique key in pimento.toml)",
        )
    return tuple(key)


def _probe(engine: Engine | None, sql: str, *, clause: str, what: str) -> tuple[str, ...]:
    """Run ``sql`` with LIMIT 0; return its column names, or a PolicyError naming the clause."""
    if engine is None:
        return ()
    try:
        return tuple(c.lower() for c in engine.execute(f"SELECT * FROM ({sql}) AS {PREFIX}probe LIMIT 0").columns)
    except EngineError as exc:
        raise PolicyError(f"clause {clause}: {what} does not run on the database: {exc.message}", clause=clause) from None


def declared_subject(subjects: Mapping[str, str], relation: str) -> str | None:
    """The relation's declared subject path in ``subjects`` (``grounding.subjects`` or a compiled
    policy's ``subject_paths``; relation names compared case-insensitively), if any."""
    for name, path in subjects.items():
        if name.lower() == relation.lower():
            return path
    return None


def subject_expression_sql(catalog: Catalog, relation: str, override: str | None, subj: Mapping[str, str], clause: str) -> str:
    """SQL (over alias ``t``) of the data subject of a row of ``relation``: a declared path or
    column (``override``), the subject principal's key, a foreign key to it, or :data:`NO_SUBJECT`."""
    table = catalog.table(relation)
    if override and override.strip().lower().startswith("via "):
        try:
            return subject_path_sql(catalog, table.name, override, clause)
        except CatalogError as exc:
            raise PolicyError(f"{clause}: {exc.message}", clause=clause, hint=exc.hint) from None
    if override:
        try:
            return f"CAST(t.{quote(table.column(override).name)} AS VARCHAR)"
        except CatalogError as exc:
            raise PolicyError(f"{clause}: {exc.message}", clause=clause) from None
    if table.name.lower() == subj["relation"].lower():
        return f"CAST(t.{quote(subj['key'])} AS VARCHAR)"
    for fk in catalog.foreign_keys_of(table.name):
        if (
            fk.ref_table.lower() == subj["relation"].lower()
            and len(fk.columns) == 1
            and fk.ref_columns[0].lower() == subj["key"].lower()
        ):
            return f"CAST(t.{quote(fk.columns[0])} AS VARCHAR)"
    return NO_SUBJECT


_PATH_COLS = re.compile(r"^\(?\s*([A-Za-z_][\w\s,]*?)\s*\)?$")


def _path_columns(text: str, clause: str, path: str) -> list[str]:
    m = _PATH_COLS.match(text.strip())
    cols = [c.strip() for c in m.group(1).split(",")] if m else []
    if not cols or not all(re.match(r"^[A-Za-z_]\w*$", c) for c in cols):
        raise PolicyError(f"{clause}: cannot read subject path {path!r} at {text.strip()!r}", clause=clause,
                          hint="write 'via COL -> Table.COL', 'via (A, B) -> Table.COL', hops joined by '->'")
    return cols


def subject_path_sql(catalog: Catalog, relation: str, path: str, clause: str) -> str:
    """SQL (over alias ``t``) of the data subject reached along a foreign-key path.

    ``via order_id -> Orders.customer_id``: follow ``order_id`` of the row to the ``Orders`` row
    it references and take its ``customer_id``. Hops chain (``via a -> T1.b -> T2.c``); a hop's
    columns may be a tuple (``via (x, y) -> T.c``, a multi-column key). Each hop must be a
    foreign key of the catalog (or the target table's primary key). The result is a correlated
    scalar subquery: NULL (unresolved, so fail closed) when a key is NULL, dangles, or matches
    more than one row.
    """
    text = path.strip()
    if not text.lower().startswith("via "):
        raise PolicyError(f"{clause}: a subject path starts with 'via' ({path!r})", clause=clause)
    parts = text[4:].split("->")
    if len(parts) < 2:
        raise PolicyError(f"{clause}: subject path {path!r} has no hop", clause=clause,
                          hint="write 'via COL -> Table.COL'")
    current = catalog.table(relation)
    cols = [current.column(c).name for c in _path_columns(parts[0], clause, path)]
    joins: list[tuple[str, str, str]] = []  # (alias, table, ON condition)
    prev_alias = "t"
    for i, part in enumerate(parts[1:], start=1):
        table_name, dot, rest = part.strip().partition(".")
        if not dot:
            raise PolicyError(f"{clause}: subject path {path!r}: write Table.COL after '->'", clause=clause)
        try:
            target = catalog.table(table_name.strip())
            nxt = [target.column(c).name for c in _path_columns(rest, clause, path)]
        except CatalogError as exc:
            raise PolicyError(f"{clause}: subject path {path!r}: {exc.message}", clause=clause, hint=exc.hint) from None
        ref: tuple[str, ...] | None = None
        for fk in catalog.foreign_keys_of(current.name):
            if fk.ref_table.lower() == target.name.lower() and [c.lower() for c in fk.columns] == [c.lower() for c in cols]:
                ref = tuple(target.column(c).name for c in fk.ref_columns)
                break
        if ref is None and target.primary_key and len(target.primary_key) == len(cols):
            ref = tuple(target.primary_key)
        if ref is None:
            raise PolicyError(
                f"{clause}: subject path {path!r}: no foreign key {current.name}({', '.join(cols)}) -> {target.name}",
                clause=clause, hint="declare the foreign key (or reference the table's primary key)")
        alias = f"{PREFIX}s{i}"
        on = " AND ".join(f"{quote(alias)}.{quote(r)} = {prev_alias}.{quote(c)}" for r, c in zip(ref, cols))
        joins.append((alias, target.name, on))
        prev_alias = quote(alias)
        current, cols = target, nxt
    if len(cols) != 1:
        raise PolicyError(f"{clause}: subject path {path!r} must end in one subject column", clause=clause)
    first_alias, first_table, first_on = joins[0]
    sql = f"FROM {quote(first_table)} AS {quote(first_alias)}"
    for alias, table_name, on in joins[1:]:
        sql += f" JOIN {quote(table_name)} AS {quote(alias)} ON {on}"
    value = f"{prev_alias}.{quote(cols[0])}"
    return (f"(SELECT CASE WHEN COUNT(*) = 1 THEN MIN(CAST({value} AS VARCHAR)) END {sql} WHERE {first_on})")
