"""PERF8 (issue 28): ``looks_aggregate`` skips the sqlglot parse for text that holds none of ``AGGREGATE_WORDS``.

The verdict must be the parse's verdict for every text: the words are pinned against sqlglot's function table
(a function that builds ``exp.Sum`` or ``exp.Avg`` under a name holding none of them fails here), and a corpus of
texts is compared with the verdict of the parse alone.
"""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp
from sqlglot.parser import Parser

from pimento.release import aggregate
from pimento.release.aggregate import AGGREGATE_WORDS, looks_aggregate


def _parsed_verdict(sql: str) -> bool:
    """``looks_aggregate`` as it was before PERF8: the parse alone."""
    return aggregate._parsed_aggregate(sql)


def _builds_sum_or_avg(name: str) -> bool:
    """Whether the function ``name`` with zero to three arguments reads as a SUM or an AVG."""
    for args in ("x", "x, y", "", "x, y, z"):
        try:
            tree = sqlglot.parse_one(f"SELECT {name}({args}) FROM t")
        except Exception:  # a builder refusing this arity: another arity is tried
            continue
        if isinstance(tree, exp.Select) and any(e.find(exp.Sum, exp.Avg) is not None for e in tree.expressions):
            return True
    return False


def test_every_function_building_sum_or_avg_holds_a_word() -> None:
    builders = [name for name in Parser.FUNCTIONS if _builds_sum_or_avg(name)]
    assert builders  # SUM and AVG at least: the probe works
    assert all(any(word in name.upper() for word in AGGREGATE_WORDS) for name in builders), builders


CORPUS = [
    "SELECT COUNT(*) FROM Patient",
    "SELECT COUNT(*) FROM Patient WHERE birth_year <> 100123",
    "select count(*) from patient where city = 'Sumter'",
    "SELECT SUM(cost) FROM Visit",
    "select sum(cost) from visit",
    "SELECT Avg(cost) FROM Visit",
    "SELECT \u017fum(cost) FROM Visit",  # long s: upper-cases to SUM, as sqlglot reads the name
    "SELECT city, COUNT(*) FROM Patient GROUP BY city",
    "select city, count(*) from patient group\n  by city",
    "SELECT city, COUNT(*) FROM Patient GROUP /* c */ BY city",
    "SELECT COUNT(*) FROM (SELECT SUM(x) AS s FROM t) q",
    "SELECT COUNT(*) FROM t WHERE x IN (SELECT y FROM u GROUP BY y)",
    "SELECT COUNT(*) FROM \"group\"",
    "SELECT 1 + SUM(x) FROM t",
    "WITH q AS (SELECT 1) SELECT SUM(x) FROM q",
    "SELECT COUNT(*) FROM",
    "SELEKT SUM(x) FROM t",
    "",
    "((((",
    "SELECT COUNT(*) FROM t -- SUM(x)",
    "UPDATE t SET x = 1",
    "SELECT AVG(x), SUM(y) FROM t GROUP BY z",
]


@pytest.mark.parametrize("sql", CORPUS)
def test_verdict_is_the_parse_verdict(sql: str) -> None:
    assert looks_aggregate(sql) == _parsed_verdict(sql)


def test_plain_count_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("parsed")

    monkeypatch.setattr(aggregate.sqlglot, "parse_one", refuse)
    assert looks_aggregate("SELECT COUNT(*) FROM Patient WHERE birth_year <> 100123") is False
    with pytest.raises(AssertionError):
        looks_aggregate("SELECT SUM(cost) FROM Visit")  # a text with a word is still parsed
