"""A construct the private database's engine cannot run is refused before the charge, not after it."""

from __future__ import annotations

import sqlite3

import pytest

from pimento.errors import UnsupportedQuery
from pimento.mechanisms.budget import Budget
from pimento.release.session import Session


@pytest.fixture
def clinic(tmp_path):
    path = tmp_path / "clinic.sqlite"
    con = sqlite3.connect(str(path))
    con.execute("CREATE TABLE visit (id INTEGER PRIMARY KEY, d DATE)")
    con.execute("INSERT INTO visit VALUES (1, '2020-03-01')")
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize("predicate", ["YEAR(d) = 2020", "EXTRACT(MONTH FROM d) = 3", "DAY(d) = 1"])
def test_date_parts_on_sqlite_are_refused_before_anything_is_charged(clinic, predicate):
    # SQLite has no EXTRACT or YEAR(): before, the statement failed when prepared, after the charge.
    with Session(clinic) as s:
        with pytest.raises(UnsupportedQuery, match="not supported on a sqlite database"):
            s.release_sql(f"SELECT COUNT(*) FROM visit WHERE {predicate}", "1")
        assert s.ledger.spent(s.location) == Budget.zero()
        assert s.ledger.halts(s.location) == []
        # the comparison with date literals the hint suggests runs, and is charged
        answer = s.release_sql("SELECT COUNT(*) FROM visit WHERE d >= '2020-01-01' AND d < '2021-01-01'", "1")
        assert answer.epsilon == 1
