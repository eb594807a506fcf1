"""The SQL text of a compiled policy's views: :class:`~pimento.policy.compiled.CompiledPolicy` -> SQL.

For a norm ``N`` (Section 4.2.1 of the paper) the views are its role views (``SELECT agent``,
stored on the compiled policy), its condition views (stored likewise) and its data view
``data_<N>(relation, row_key, attribute, value, subject)``: the UNION ALL of every location of
its data types, each value tagged with its provenance ``o = (relation, row key, attribute)``
(:func:`data_view_sql`). This module writes that text, and holds the SQL primitives every
module of the policy shares: the prefix of generated names, identifier quoting, policy literals,
the provenance row key and the unresolved subject.

Identities are compared as text (``CAST(... AS VARCHAR)``) so that context values, which arrive
as text, are bound as parameters without any conversion inside SQL; context values never appear
in SQL text (:mod:`pimento.policy.enforce` binds them).

It needs the compiled policy's types only for annotations, so that the compiled policy can
write its views into its JSON (``to_dict``) without an import cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from pimento.policy.model import ANY, condition_names
from pimento.sql.quote import quote_identifier

if TYPE_CHECKING:
    from pimento.policy.compiled import CompiledPolicy, Location

__all__ = [
    "NO_SUBJECT",
    "PREFIX",
    "data_view_sql",
    "lit",
    "location_view_sql",
    "norm_views",
    "quote",
    "row_key_sql",
]

#: Prefix of every name the compiler introduces; analyst SQL may not use it.
PREFIX = "__p_"
#: ``Location.subject_sql`` of a column whose data subject cannot be resolved (no column
#: references the subject principal): every subject atom is unknown on its cells.
NO_SUBJECT = "CAST(NULL AS VARCHAR)"


def quote(name: str) -> str:
    """A double-quoted SQL identifier (:func:`pimento.sql.quote.quote_identifier`, DuckDB's form,
    which SQLite and PostgreSQL share)."""
    return quote_identifier(name)


def lit(value: str) -> str:
    """A single-quoted SQL string literal (policy constants only, never context values)."""
    return "'" + str(value).replace("'", "''") + "'"


def row_key_sql(alias: str, key: tuple[str, ...], dialect: str = "duckdb") -> str:
    r"""The provenance row key of a row of alias ``alias`` (SQL, already quoted where it must be):
    its key column as text, or the key columns escaped (``\`` -> ``\\``, ``|`` -> ``\|``) and
    joined by ``|``. The literals are written for ``dialect``: a backslash is ``'\'`` in DuckDB,
    SQLite and PostgreSQL but ``'\\'`` in Spark, where a lone ``'\'`` does not end the string.

    >>> print(row_key_sql("t", ("a", "b")))
    REPLACE(REPLACE(CAST(t."a" AS VARCHAR), '\', '\\'), '|', '\|') || '|' || REPLACE(REPLACE(CAST(t."b" AS VARCHAR), '\', '\\'), '|', '\|')
    >>> print(row_key_sql("t", ("a", "b"), "spark"))
    REPLACE(REPLACE(CAST(t."a" AS VARCHAR), '\\', '\\\\'), '|', '\\|') || '|' || REPLACE(REPLACE(CAST(t."b" AS VARCHAR), '\\', '\\\\'), '|', '\\|')
    """
    if len(key) == 1:
        return f"CAST({alias}.{quote(key[0])} AS VARCHAR)"
    backslash, bar, escaped_backslash, escaped_bar = (
        exp.Literal.string(v).sql(dialect) for v in ("\\", "|", "\\\\", "\\|"))
    parts = [f"REPLACE(REPLACE(CAST({alias}.{quote(k)} AS VARCHAR), {backslash}, {escaped_backslash}), {bar}, {escaped_bar})"
             for k in key]
    return f" || {bar} || ".join(parts)


def location_view_sql(location: Location) -> str:
    """``SELECT relation, row_key, attribute, value, subject`` for the cells of one location."""
    return (
        f"SELECT {lit(location.relation)} AS relation, {location.row_key_sql} AS row_key, "
        f"{lit(location.attribute)} AS attribute, CAST(t.{quote(location.attribute)} AS VARCHAR) AS value, "
        f"{location.subject_sql} AS subject FROM {quote(location.relation)} AS t WHERE {location.where_sql}"
    )


def data_view_sql(compiled: CompiledPolicy, norm_id: str) -> str:
    """The data view of norm ``norm_id``: the UNION ALL of its locations' views (after implication)."""
    return "\nUNION ALL\n".join(location_view_sql(compiled.locations[loc]) for loc in compiled.norm_locations[norm_id])


def norm_views(compiled: CompiledPolicy, norm_id: str) -> dict[str, str]:
    """The views of one norm, for people and golden files: sender, recipient, subject (``-- any``
    for the wildcard role), each condition it names, then its data view.

    Raises:
        PolicyError: the compiled policy has no norm ``norm_id``.
    """
    norm = compiled.norm(norm_id)
    out: dict[str, str] = {}
    for var, role in (("sender", norm.sender), ("recipient", norm.recipient), ("subject", norm.subject)):
        out[f"{var}_view"] = "-- any" if role == ANY else compiled.roles[role].sql
    for name in sorted(condition_names(norm.condition) | condition_names(norm.when)):
        out[f"condition_view:{name}"] = compiled.conditions[name].sql
    out["data_view"] = data_view_sql(compiled, norm_id)
    return out
