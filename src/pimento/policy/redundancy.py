"""Redundancy check over compiled views (Section 4.2.2): merge provably equivalent views and
norms (:func:`redundancy`, which returns the merged policy), report views that only agree on the
current data.

:func:`canonical_sql` gives the canonical text that decides "provably equivalent".
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.canonicalize import canonicalize
from sqlglot.optimizer.normalize import normalize
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.simplify import simplify

from pimento.engines.base import Engine
from pimento.errors import EngineError
from pimento.policy.compiled import CompiledPolicy
from pimento.policy.lineage import qualifier_schema
from pimento.policy.model import ANY, All, AnyOf, Atom, Cond, Norm, Not
from pimento.policy.views_sql import location_view_sql
from pimento.schema import Catalog

__all__ = ["canonical_sql", "common_rows_sql", "distinct_rows_sql", "redundancy"]


# --------------------------------------------------------------------------- redundancy


def _rename_cond(cond: Cond, names: dict[str, str]) -> Cond:
    if isinstance(cond, Atom):
        return Atom(names.get(cond.name, cond.name))
    if isinstance(cond, Not):
        return Not(_rename_cond(cond.arg, names))
    if isinstance(cond, All):
        return All(tuple(_rename_cond(a, names) for a in cond.args))
    if isinstance(cond, AnyOf):
        return AnyOf(tuple(_rename_cond(a, names) for a in cond.args))
    return cond


def canonical_sql(sql: str, catalog: Catalog, dialect: str = "duckdb", *, predicate: bool = False) -> str:
    """A canonical text of a view (or of a row predicate, ``predicate=True``) for redundancy.

    sqlglot's optimizer qualifies every column against the catalog, normalizes the boolean
    structure, simplifies (constant folding, operand order of comparisons, sorted
    conjunctions/disjunctions, ``NOT (a <> b)`` -> ``a = b``) and canonicalizes; then table
    aliases and CTE names are renamed by order of first appearance, so ``FROM Employee AS t``
    and ``FROM Employee AS x`` read the same. Equal canonical texts mean the two views are
    equivalent on every database (given that sqlglot's rewrites preserve meaning); different
    texts prove nothing. A fragment sqlglot cannot canonicalize falls back to its own text.
    """
    schema: dict[str, object] = qualifier_schema(catalog)
    try:
        if predicate:
            # a row filter: its columns are already qualified with the row alias t
            tree = sqlglot.parse_one(f"SELECT 1 WHERE {sql}", read=dialect)
            return _rename_aliases(canonicalize(simplify(normalize(tree))), dialect).sql(dialect)
        tree = sqlglot.parse_one(sql, read=dialect)
        tree = qualify(tree, schema=schema, dialect=dialect, quote_identifiers=False, validate_qualify_columns=False)
        tree = canonicalize(simplify(normalize(tree)))
        return _rename_aliases(tree, dialect).sql(dialect)
    except (SqlglotError, RecursionError, ValueError, KeyError):
        return sql


def _rename_aliases(tree: exp.Expr, dialect: str = "duckdb") -> exp.Expr:
    """Rename table aliases and CTE names to ``_a0, _a1, ...`` by order of first appearance."""
    names: dict[str, str] = {}

    def new(name: str) -> str:
        if name not in names:
            names[name] = f"_a{len(names)}"
        return names[name]

    for node in tree.walk():
        if isinstance(node, exp.TableAlias) and node.name:
            node.set("this", exp.to_identifier(new(node.name)))
        elif isinstance(node, exp.CTE) and node.alias:
            node.args["alias"].set("this", exp.to_identifier(new(node.alias)))
    for node in tree.walk():
        if dialect == "duckdb" and isinstance(node, exp.Identifier) and node.quoted:
            # DuckDB identifiers are case-insensitive, quoted or not: "Visit" and visit are one name
            node.set("quoted", False)
            node.set("this", node.name.lower())
    for node in tree.walk():
        if isinstance(node, exp.Column) and node.table and node.table in names:
            node.set("table", exp.to_identifier(names[node.table]))
        elif isinstance(node, exp.Table) and not node.db and node.name in names and node.alias_or_name == node.name:
            # a reference to a CTE by its bare name
            node.set("this", exp.to_identifier(names[node.name]))
    return tree


def redundancy(compiled: CompiledPolicy, engine: Engine | None,
               catalog: Catalog | None = None) -> tuple[CompiledPolicy, dict[str, Any]]:
    """``compiled`` with its provably equivalent views and norms merged (recorded in ``merged``), and
    the report: the merges, and the views that only agree on the current data.

    * Role views merge when they have the same principal and the same canonical SQL
      (:func:`canonical_sql`); condition views when they also have the same variables and
      principal kinds.
    * Norms then merge when they are identical after that: sign, roles, data cells
      (relation, attribute, canonical row filter), purpose *after binding* (the set of
      context values it accepts, so two purpose names with the same values are one), and
      conditions.
    * Views with different canonical SQL that return the same rows on this database are
      only reported (``equivalent_on_data``): merging them would change the policy's meaning
      once the data changes.
    """
    dialect = compiled.dialect

    def canon(sql: str, *, predicate: bool = False) -> str:
        return canonical_sql(sql, catalog, dialect, predicate=predicate) if catalog is not None else sql

    merged_roles: dict[str, str] = {}
    by_sql: dict[tuple[str, str], str] = {}
    for name, role in compiled.roles.items():
        key = (role.principal, canon(role.sql))
        if key in by_sql:
            merged_roles[name] = by_sql[key]
        else:
            by_sql[key] = name
    merged_conds: dict[str, str] = {}
    by_csql: dict[tuple, str] = {}
    for name, cond in compiled.conditions.items():
        cond_key = (tuple(sorted(cond.principals.items())), cond.variables, canon(cond.sql))
        if cond_key in by_csql:
            merged_conds[name] = by_csql[cond_key]
        else:
            by_csql[cond_key] = name
    # rewrite norms to canonical views
    norms: list[Norm] = []
    for n in compiled.norms:
        norms.append(replace(
            n,
            sender=merged_roles.get(n.sender, n.sender),
            recipient=merged_roles.get(n.recipient, n.recipient),
            subject=merged_roles.get(n.subject, n.subject),
            condition=_rename_cond(n.condition, merged_conds),
            when=_rename_cond(n.when, merged_conds),
        ))
    # identical norms
    merged_norms: dict[str, str] = {}
    seen: dict[tuple, str] = {}
    kept: list[Norm] = []
    for n in norms:
        cells = frozenset((compiled.locations[i].relation, compiled.locations[i].attribute,
                           canon(compiled.locations[i].where_sql, predicate=True))
                          for i in compiled.norm_locations[n.id])
        bound_purpose = ANY if n.purpose == ANY else frozenset(compiled.purposes[n.purpose])
        norm_key = (n.sign, n.sender, n.recipient, n.subject, cells, bound_purpose, n.condition, n.when)
        if norm_key in seen:
            merged_norms[n.id] = seen[norm_key]
            continue
        seen[norm_key] = n.id
        kept.append(n)
    compiled = replace(
        compiled,
        norms=tuple(kept),
        norm_locations={k: v for k, v in compiled.norm_locations.items() if k not in merged_norms},
        roles={k: v for k, v in compiled.roles.items() if k not in merged_roles},
        conditions={k: v for k, v in compiled.conditions.items() if k not in merged_conds},
        merged={"roles": merged_roles, "conditions": merged_conds, "norms": merged_norms},
    )

    # same rows, different SQL: reported
    equivalent: list[dict[str, Any]] = []
    if engine is not None:
        for kind, views in (
            ("role", {k: v.sql for k, v in compiled.roles.items()}),
            ("condition", {k: v.sql for k, v in compiled.conditions.items()}),
            ("data_type", {k: "\nUNION ALL\n".join(
                f"SELECT relation, row_key, attribute FROM ({location_view_sql(compiled.locations[i])}) AS x" for i in ids)
                for k, ids in compiled.data_types.items() if ids}),
        ):
            equivalent.extend(_equal_on_data(engine, kind, views, compiled))
    return compiled, {"merged": compiled.merged, "equivalent_on_data": equivalent}


def distinct_rows_sql(sql: str) -> str:
    """The number of distinct rows of the view ``sql`` (NULLs equal to each other, as in a set).

    >>> distinct_rows_sql("SELECT a FROM t")
    'SELECT COUNT(*) FROM (SELECT DISTINCT * FROM (SELECT a FROM t) AS _v) AS _d'
    """
    return f"SELECT COUNT(*) FROM (SELECT DISTINCT * FROM ({sql}) AS _v) AS _d"


def common_rows_sql(a: str, b: str) -> str:
    """The number of distinct rows that the views ``a`` and ``b`` share (``INTERSECT`` is a set
    operation: duplicates count once and NULL matches NULL, in DuckDB, SQLite, PostgreSQL and Spark).

    >>> common_rows_sql("SELECT 1", "SELECT 2")
    'SELECT COUNT(*) FROM (SELECT * FROM (SELECT 1) AS _a INTERSECT SELECT * FROM (SELECT 2) AS _b) AS _i'
    """
    return f"SELECT COUNT(*) FROM (SELECT * FROM ({a}) AS _a INTERSECT SELECT * FROM ({b}) AS _b) AS _i"


def _equal_on_data(engine: Engine, kind: str, views: dict[str, str],
                   compiled: CompiledPolicy) -> list[dict[str, Any]]:
    """The pairs of ``views`` that return the same *set* of rows on this database, compared by the
    engine (nothing but counts comes back to Python, so memory does not grow with the data).

    Two views return the same set of rows iff they have the same number ``n`` of distinct rows,
    and, when ``n > 0``, the same number of columns and ``n`` distinct rows in common. Two
    empty views are equal whatever their columns (as two empty sets are). A pair the engine
    cannot compare (column types it will not unify) is not equal. Rows compare by the
    engine's equality, after its type coercion.
    """
    distinct = {k: int(engine.execute(distinct_rows_sql(v)).rows[0][0]) for k, v in views.items()}
    width: dict[str, int] = {}

    def columns(name: str) -> int:
        if name not in width:
            width[name] = len(engine.execute(f"SELECT * FROM ({views[name]}) AS _v LIMIT 0").columns)
        return width[name]

    out: list[dict[str, Any]] = []
    names = list(views)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            n = distinct[a]
            if n != distinct[b]:
                continue
            if kind == "condition" and compiled.conditions[a].variables != compiled.conditions[b].variables:
                continue
            if n > 0:
                if columns(a) != columns(b):
                    continue
                try:
                    if int(engine.execute(common_rows_sql(views[a], views[b])).rows[0][0]) != n:
                        continue
                except EngineError:
                    continue
            out.append({"kind": kind, "views": [a, b], "rows": n})
    return out
