"""pimento ask: no DP-compatible formulation, an empty or uncharged synthetic database: nothing is spent."""

from __future__ import annotations

import duckdb
import pytest

from pimento.demo.hospital import create_demo
from pimento.engines.database import load_database
from pimento.errors import DataSourceError, SearchError, SyntheticCopyError
from pimento.mechanisms import Budget, Ledger
from pimento.mechanisms.ledger import database_key
from pimento.release.session import Session


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ask")
    path = folder / "hospital.duckdb"
    create_demo(path, patients=300, seed=4)
    empty = folder / "empty.synthetic.duckdb"
    location = str(load_database(path).location)
    con = duckdb.connect(str(empty))
    con.execute("CREATE TABLE _pimento_synth_meta(epsilon TEXT, delta TEXT, root TEXT, copy_id TEXT, database_key TEXT, details TEXT)")
    con.execute("INSERT INTO _pimento_synth_meta VALUES ('1', '0.000001', 'Patient', 'empty-copy', ?, '{}')", [database_key(location)])
    con.close()
    with Ledger.for_database(location, load_database(path).settings) as ledger:
        ledger.charge_synthetic(location, Budget.of("1", "1e-6"), copy_id="empty-copy")
    return path, empty


def _spent(session):
    return [c for c in session.ledger.charges() if c.kind != "synthetic"]



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


def test_an_uncharged_copy_is_refused_and_nothing_is_spent(demo, tmp_path):
    path, _ = demo
    uncharged = tmp_path / "uncharged.synthetic.duckdb"
    con = duckdb.connect(str(uncharged))
    con.execute("CREATE TABLE _pimento_synth_meta(epsilon TEXT, delta TEXT, root TEXT, copy_id TEXT, database_key TEXT, details TEXT)")
    con.execute("INSERT INTO _pimento_synth_meta VALUES ('1', '0.000001', 'Patient', 'never-charged', ?, '{}')", [database_key(str(path))])
    con.close()
    with Session(path, analyst="ann") as session:
        with pytest.raises(SyntheticCopyError, match="was not charged"):
            session.ask("", synthetic=uncharged, epsilon="1", delta="1e-6", seed_sql=("SELECT COUNT(*) FROM Patient",))
        assert _spent(session) == []


def test_a_private_database_is_refused_as_the_synthetic_one(demo):
    path, _ = demo
    with Session(path, analyst="ann") as session:
        with pytest.raises(DataSourceError, match="not a synthetic database"):
            session.ask("How many patients?", synthetic=path, epsilon="1", delta="1e-6")
        assert _spent(session) == []
