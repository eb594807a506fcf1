"""Shared fixtures: where the third-party data lives, and skipping when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared").resolve()
SPIDER = SHARED / "data" / "spider"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{SHARED} is missing: CI must have ../shared beside the checkout")
        pytest.skip(f"third-party data not found at {SHARED}")
    return SHARED


@pytest.fixture(scope="session")
def spider_dir(shared_dir: Path) -> Path:
    if not SPIDER.is_dir():
        pytest.skip(f"Spider data not found at {SPIDER}")
    return SPIDER


GEMMA_CASE_FILE = REPO / "tests" / "fixtures" / "llm" / "gemma_case.json"


@pytest.fixture(scope="module")
def gemma_case_database(tmp_path_factory):
    """The gemma case's database (made-up rows, marked synthetic), its catalog and prompt values.

    Shared by the replayed gemma test and the live-server integration target.
    """
    import json

    import duckdb

    from pimento.engines import open_engine
    from pimento.llm import SYNTH_META_TABLE, SyntheticValues
    from pimento.schema import Catalog

    case = json.loads(GEMMA_CASE_FILE.read_text())
    path = tmp_path_factory.mktemp("gemma") / "hospital.duckdb"
    con = duckdb.connect(str(path))
    for statement in case["schema"] + case["rows"]:
        con.execute(statement)
    con.execute(f"CREATE TABLE {SYNTH_META_TABLE} (key VARCHAR, value VARCHAR)")
    con.close()
    engine = open_engine(str(path))
    catalog = engine.introspect()
    catalog = Catalog(tuple(t for t in catalog.tables if not t.name.startswith("_pimento")), catalog.foreign_keys)
    yield engine, catalog, SyntheticValues.from_engine(engine, catalog)
    engine.close()


@pytest.fixture(scope="session")
def standin_synthetic():
    """A function writing a stand-in for a `pimento synth` copy: another demo hospital with the marker.

    Tests of the search and of ``ask`` need a database that passes ``open_synthetic``'s check without
    paying for a real synthesis; a differently seeded hospital has the same schema and other data.
    """
    import duckdb

    from pimento.demo.hospital import create_demo

    def make(path: Path, *, patients: int = 300, seed: int = 11, for_database: Path | None = None) -> Path:
        """With ``for_database``: the copy's metadata names that database and its ledger is charged
        (1.6, 1e-6) under the copy's id, as `pimento synth` does, so ``ask``/``search`` accept it."""
        create_demo(path, patients=patients, seed=seed)
        con = duckdb.connect(str(path))
        if for_database is None:
            con.execute("CREATE TABLE _pimento_synth_meta (k VARCHAR, v VARCHAR)")
            con.close()
            return path.resolve()
        import uuid

        from pimento.engines.database import load_database
        from pimento.mechanisms import Budget, Ledger
        from pimento.mechanisms.ledger import database_key

        database = load_database(for_database)
        location = str(database.location)
        copy_id = f"standin-{uuid.uuid4()}"
        con.execute(
            "CREATE TABLE _pimento_synth_meta (epsilon VARCHAR, delta VARCHAR, root VARCHAR, copy_id VARCHAR, database_key VARCHAR, details VARCHAR)"
        )
        con.execute("INSERT INTO _pimento_synth_meta VALUES ('1.6', '0.000001', 'Patient', ?, ?, '{}')", [copy_id, database_key(location)])
        con.close()
        with Ledger.for_database(location, database.settings) as ledger:
            ledger.charge_synthetic(location, Budget.of("1.6", "0.000001"), copy_id=copy_id)
        database.close()
        return path.resolve()

    return make
