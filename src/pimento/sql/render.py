"""Describe a CountQuery for people and machines (used by ``pimento parse``)."""

from __future__ import annotations

from typing import Any

from pimento.sql.ir import AggregateQuery, CountQuery

__all__ = ["describe", "describe_aggregate"]


def describe(query: CountQuery, *, dialect: str = "duckdb") -> dict[str, Any]:
    """A JSON-ready description of the IR: relations, joins, classes, selections, count, SQL."""
    return {
        "relations": [{"alias": r.alias, "table": r.table} for r in query.relations],
        "joins": [str(j) for j in query.joins],
        "join_classes": [sorted(str(a) for a in c) for c in query.equivalence_classes],
        "selections": {s.alias: s.predicate for s in query.selections},
        "count": str(query.count),
        "connected": query.is_connected,
        "sql": query.to_sql(dialect),
        "dialect": dialect,
    }


def describe_aggregate(query: AggregateQuery, *, dialect: str = "duckdb") -> dict[str, Any]:
    """:func:`describe` of the body, plus the group columns, the aggregate, the clipping bounds and the SQL."""
    out = describe(query.body, dialect=dialect)
    out.update(
        {
            "group_by": [str(g) for g in query.group_by],
            "aggregate": query.kind.value.upper(),
            "column": str(query.column) if query.column is not None else None,
            "bounds": [str(query.bounds.lower), str(query.bounds.upper)] if query.bounds is not None else None,
            "count": str(query.count_query.count),
            "sql": query.to_sql(dialect),
        }
    )
    return out
