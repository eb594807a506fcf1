"""The custodian's [database] max_sql_chars bounds the SQL an analyst may send, before anything is spent."""

from __future__ import annotations

import duckdb
import pytest

from pimento.errors import SqlError
from pimento.release.session import Session


def test_release_sql_applies_the_custodians_size_bound(tmp_path):
    path = tmp_path / "t.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (a INTEGER)")
    con.close()
    (tmp_path / "pimento.toml").write_text('[database]\npath = "t.duckdb"\nmax_sql_chars = 60\n')
    long_sql = "SELECT COUNT(*) FROM t WHERE a = 1 OR a = 2 OR a = 3 OR a = 4 OR a = 5"
    with Session(path) as s:
        with pytest.raises(SqlError, match="60"):
            s.release_sql(long_sql, "1")
        assert not s.ledger.charges(s.location)
        s.release_sql("SELECT COUNT(*) FROM t", "1")  # short enough
