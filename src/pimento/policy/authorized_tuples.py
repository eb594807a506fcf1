"""The authorization view of a context for a counting query (issue 16, item 1), in the engine.

For each private relation ``R_i`` of a counting query, the public information in the paper's
rule grammar: which tuples are public (``sigma_phi R_i``), by **cell provenance**: a tuple is
public when every cell of its boundary ``B_i`` (its join columns, the columns its query
selection reads, the counted column) is authorized in the context, i.e. each
``(relation, row_key, attribute)`` is in ``A_c = permitted EXCEPT prohibited`` of
:class:`~pimento.policy.enforce.Enforcer`'s provenance path. Nothing is read into Python: the
result is a ``WITH`` clause (the enforcer's provenance CTEs, parameters bound) and one SQL
boolean per alias that the sensitivity code evaluates inside its own statements
(:class:`pimento.sensitivity.contextual.AuthorizationView`).

``whole`` (the rule Pub: every tuple the relation *could* hold is authorized) is never derived
from a compiled policy: a norm's authorization depends on data (roles, conditions, subjects),
so no policy shows that an inserted tuple would be authorized. Relations without a primary or
unique key have no cell provenance and so no public tuple.
"""

from __future__ import annotations

from typing import Any

from pimento.policy.enforce import Context, Enforcer
from pimento.policy.views_sql import PREFIX, lit, quote
from pimento.policy.views_sql import row_key_sql as compiled_row_key_sql
from pimento.sensitivity.contextual import AuthorizationView, boundary_columns
from pimento.sql.ir import CountQuery

__all__ = ["authorization_view", "row_key_sql"]


def row_key_sql(alias: str, key: tuple[str, ...], dialect: str = "duckdb") -> str:
    """The provenance row key of a tuple, as the compiler writes it for ``dialect`` (the compiled
    policy's), for relation alias ``alias``."""
    return compiled_row_key_sql(quote(alias), key, dialect)


def authorization_view(enforcer: Enforcer, context: Context, query: CountQuery) -> AuthorizationView:
    """The public tuples of each private relation of ``query`` in ``context`` (module docstring)."""
    catalog = enforcer.catalog
    needed: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {}
    for rel in query.relations:
        table = catalog.table(rel.table)
        if not table.private:
            continue
        key = table.primary_key or (table.unique[0] if table.unique else ())
        cols = tuple(table.column(c).name for c in boundary_columns(query, rel.alias))
        if not key or not cols or table.name not in enforcer.compiled.tables:
            continue
        needed[rel.alias] = (table.name, tuple(table.column(k).name for k in key), cols)
    if not needed:
        return AuthorizationView()
    select = ", ".join(f"{quote(a)}.{quote(c)}" for a, (_, _, cols) in needed.items() for c in cols)
    source = ", ".join(f"{quote(t)} AS {quote(a)}" for a, (t, _, _) in needed.items())
    plan = enforcer._plan(context, f"SELECT {select} FROM {source}")
    with_sql = enforcer._provenance_with(plan)
    public: dict[str, Any] = {}
    for alias, (table_name, key, cols) in needed.items():
        attrs = ", ".join(lit(c) for c in cols)
        public[alias] = (
            f"{row_key_sql(alias, key, enforcer.dialect)} IN (SELECT row_key FROM {PREFIX}auth WHERE relation = {lit(table_name)} "
            f"AND attribute IN ({attrs}) GROUP BY row_key HAVING COUNT(DISTINCT attribute) = {len(cols)})"
        )
    return AuthorizationView(with_sql=with_sql, params=tuple(enforcer._params(context)), public=public)
