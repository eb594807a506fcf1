"""SQL front end: parse into the CountQuery IR, check the DP-compatible class, render to any dialect."""

from __future__ import annotations

from pimento.sql.ir import Attribute, Count, CountQuery, JoinCondition, Relation, Selection
from pimento.sql.parse import REJECTION_REASONS, parse_count_query

__all__ = [
    "REJECTION_REASONS",
    "Attribute",
    "Count",
    "CountQuery",
    "JoinCondition",
    "Relation",
    "Selection",
    "parse_count_query",
]
