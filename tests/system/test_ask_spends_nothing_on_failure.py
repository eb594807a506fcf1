"""pimento ask: a question with no DP-compatible formulation, or an empty synthetic database, spends nothing."""

from __future__ import annotations

import duckdb
import pytest

from pimento.demo.hospital import create_demo
from pimento.errors import DataSourceError, SearchError
from pimento.release.session import Session


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ask")
    path = folder / "hospital.duckdb"
    create_demo(path, patients=300, seed=4)
    empty = folder / "empty.synthetic.duckdb"
    con = duckdb.connect(str(empty))
    con.execute("CREATE TABLE _pimento_synth_meta(note TEXT)")
    con.close()
    return path, empty


def _spent(session):
    return session.ledger.charges()


def test_no_dp_compatible_formulation_spends_nothing(demo):
    path, empty = demo
    with Session(path, analyst="ann") as session:
        with pytest.raises(SearchError, match="nothing was spent"):
            session.ask(
                "", synthetic=empty, epsilon="1", delta="1e-6",
                seed_sql=("SELECT sex, COUNT(*) FROM Patient GROUP BY sex",),
            )
        assert _spent(session) == []


def test_empty_synthetic_database_spends_nothing(demo):
    path, empty = demo
    with Session(path, analyst="ann") as session:
        with pytest.raises(SearchError):
            session.ask("", synthetic=empty, epsilon="1", delta="1e-6", seed_sql=("SELECT COUNT(*) FROM Patient",))
        assert _spent(session) == []


def test_a_private_database_is_refused_as_the_synthetic_one(demo):
    path, _ = demo
    with Session(path, analyst="ann") as session:
        with pytest.raises(DataSourceError, match="not a synthetic database"):
            session.ask("How many patients?", synthetic=path, epsilon="1", delta="1e-6")
        assert _spent(session) == []
