"""Describe a CountQuery for people and machines (used by ``pimento parse``)."""

from __future__ import annotations

from typing import Any

from pimento.sql.ir import CountQuery

__all__ = ["describe"]


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
