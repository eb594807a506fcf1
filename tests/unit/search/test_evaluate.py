"""QueryEvaluator: RS-only checks reuse full results and otherwise take the cheaper oracle."""

from __future__ import annotations

from pimento.schema import Catalog, Column, Table
from pimento.search import SensitivityInfo
from pimento.search.evaluate import QueryEvaluator
from pimento.sql import parse_count_query

CAT = Catalog((Table("T", (Column("a", "integer"),), ("a",)), Table("U", (Column("b", "integer"),), ("b",))))


def _counting(rs: float):
    calls = []

    def oracle(query):
        calls.append(query)
        return SensitivityInfo(rs, {a: rs for a in query.aliases})

    oracle.calls = calls
    return oracle


def test_rs_only_uses_the_cheap_oracle_once_per_query():
    full, light = _counting(5.0), _counting(5.0)
    ev = QueryEvaluator(None, CAT, full, rs_oracle=light)  # type: ignore[arg-type]
    q = parse_count_query("SELECT COUNT(*) FROM T", CAT)
    assert ev.rs(q) == 5.0 and ev.rs(q) == 5.0
    assert len(light.calls) == 1 and full.calls == []


def test_rs_only_reuses_a_full_computation():
    full, light = _counting(7.0), _counting(99.0)
    ev = QueryEvaluator(None, CAT, full, rs_oracle=light)  # type: ignore[arg-type]
    q = parse_count_query("SELECT COUNT(*) FROM U", CAT)
    assert ev.sensitivity(q).rs == 7.0
    assert ev.rs(q) == 7.0
    assert light.calls == []
