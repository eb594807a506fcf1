"""Join columns with a collation, asked of the engine (the catalog's types do not show them).

Under ``COLLATE NOCASE`` (DuckDB, SQLite) or a nondeterministic collation (PostgreSQL) the join
``a.x = b.y`` makes ``'x'`` and ``'X'`` equal while a GROUP BY on the other column keeps them
apart, so T_E would count one group where the join sees two (PROOF.md, section 1, "Join
equality"). Such joins are refused, from the schema alone: the answer does not depend on rows.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from pimento.engines.base import Engine
from pimento.errors import UnsupportedQuery
from pimento.sql.ir import Attribute, CountQuery
from pimento.sql.join_types import JOIN_TYPES_CONSTRUCT

__all__ = ["check_join_collations"]

#: A collation that is byte equality: grouping and joining agree.
_PLAIN = frozenset({"BINARY", "C", "POSIX", "DEFAULT"})


def check_join_collations(engine: Engine, query: CountQuery) -> None:
    """Raise :class:`UnsupportedQuery` if a join column of ``query`` carries a non-binary collation."""
    join_columns = sorted({attr for klass in query.equivalence_classes for attr in klass})
    if not join_columns:
        return
    tables = {query.relation(a.alias).table.lower() for a in join_columns}
    dialect = getattr(engine, "dialect", "duckdb")
    if dialect == "postgres":
        collated = _postgres(engine, tables)
    elif dialect in ("duckdb", "sqlite"):
        collated = _from_ddl(engine, tables, dialect)
    else:  # an engine we do not know how to ask: refuse nothing it cannot show (documented limit)
        return
    for attr in join_columns:
        table = query.relation(attr.alias).table.lower()
        if (table, attr.column.lower()) in collated or (table, "*") in collated:
            raise _refusal(attr)


def _refusal(attr: Attribute) -> UnsupportedQuery:
    return UnsupportedQuery(
        JOIN_TYPES_CONSTRUCT,
        f"join on {attr}, a column with a collation (declared, or the engine's default): the join would equate values "
        "(such as 'x' and 'X') that a count by value keeps apart",
        hint="join on columns without COLLATE (or with the binary collation)",
    )


def _postgres(engine: Engine, tables: set[str]) -> set[tuple[str, str]]:
    rows = engine.execute(
        "SELECT c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "JOIN pg_namespace ns ON ns.oid = c.relnamespace JOIN pg_collation co ON co.oid = a.attcollation "
        "WHERE ns.nspname = current_schema() AND a.attnum > 0 AND NOT a.attisdropped "
        "AND NOT co.collisdeterministic"
    ).rows
    return {(str(t).lower(), str(c).lower()) for t, c in rows if str(t).lower() in tables}


def _from_ddl(engine: Engine, tables: set[str], dialect: str) -> set[tuple[str, str]]:
    """Collated columns read from the CREATE statements (DuckDB and SQLite keep them verbatim).

    A view, or a statement that does not parse, with COLLATE anywhere marks all its columns; so
    does DuckDB's ``default_collation`` when set. One statement, over the query's tables only.
    """
    names = sorted(tables)
    marks = ", ".join("?" for _ in names)
    if dialect == "duckdb":
        sql = (
            f"SELECT table_name, sql, current_setting('default_collation') FROM duckdb_tables() "
            f"WHERE schema_name = current_schema() AND lower(table_name) IN ({marks}) UNION ALL "
            f"SELECT view_name, sql, current_setting('default_collation') FROM duckdb_views() "
            f"WHERE schema_name = current_schema() AND NOT internal AND lower(view_name) IN ({marks})"
        )
        params = [*names, *names]
    else:
        sql = f"SELECT name, sql, '' FROM sqlite_master WHERE type IN ('table', 'view') AND lower(name) IN ({marks})"
        params = names
    out: set[tuple[str, str]] = set()
    for name, ddl, default in engine.execute(sql, params).rows:
        table = str(name).lower()
        if default and str(default).upper() not in _PLAIN:
            out.add((table, "*"))  # every VARCHAR comparison is collated
        if not ddl or "COLLATE" not in str(ddl).upper():
            continue
        try:
            tree = sqlglot.parse_one(str(ddl), read=dialect)
        except sqlglot.errors.SqlglotError:
            tree = None
        schema = tree.this if isinstance(tree, exp.Create) else None
        if not isinstance(schema, exp.Schema):
            out.add((table, "*"))
            continue
        for column in schema.find_all(exp.ColumnDef):
            for constraint in column.args.get("constraints") or []:
                kind = constraint.args.get("kind")
                if isinstance(kind, exp.CollateColumnConstraint) and kind.this.name.upper() not in _PLAIN:
                    out.add((table, column.name.lower()))
    return out
