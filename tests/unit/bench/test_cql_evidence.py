"""benchmarks.cql_evidence (issue 27, POLICY10): the evidence table counts right columns per sign and kind."""

from __future__ import annotations

from benchmarks.cql_evidence import tally


def test_tally_counts_right_columns_per_kind_and_skips_clauses_the_gold_lacks():
    rows = [
        {"text": "a", "clause": "C1", "sign": "permit", "phrase": "x", "evidence": "table_partial", "columns": 4,
         "right": 1, "in_gold": True},
        {"text": "b", "clause": "C2", "sign": "permit", "phrase": "y", "evidence": "table_partial", "columns": 2,
         "right": 2, "in_gold": True},
        {"text": "a", "clause": "C3", "sign": "deny", "phrase": "z", "evidence": "table_partial", "columns": 3,
         "right": 3, "in_gold": True},
        {"text": "a", "clause": "C9", "sign": "permit", "phrase": "w", "evidence": "column_spelled", "columns": 1,
         "right": 0, "in_gold": False},  # a clause the gold lacks: no evidence either way
    ]
    t = tally(rows)
    assert set(t) == {("permit", "table_partial"), ("deny", "table_partial")}
    p = t[("permit", "table_partial")]
    assert (p["phrases"], p["columns"], p["right"], p["all_right"], len(p["texts"])) == (2, 6, 3, 1, 2)
