"""A synthetic copy made before its database had a deployment id names the old path key; the
deployment file lists that key among its aliases, so the copy is still accepted as this database's."""

from __future__ import annotations

import json

import duckdb

from pimento.errors import SyntheticCopyError
from pimento.mechanisms import Budget, Ledger
from pimento.mechanisms.ledger import database_key, deployment_file
from pimento.release.synthetic import synthetic_guarantee


def _copy(path, key: str, copy_id: str) -> None:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (a INTEGER)")
    con.execute("CREATE TABLE _pimento_synth_meta (epsilon VARCHAR, delta VARCHAR, root VARCHAR, copy_id VARCHAR, database_key VARCHAR, details VARCHAR)")
    con.execute("INSERT INTO _pimento_synth_meta VALUES ('1', '0.000001', 't', ?, ?, '{}')", [copy_id, key])
    con.close()


def test_a_copy_naming_an_alias_of_the_deployment_is_accepted(tmp_path):
    db = tmp_path / "d.duckdb"
    duckdb.connect(str(db)).execute("CREATE TABLE t (a INTEGER)").close()
    old_key = str(db.resolve())
    deployment_file(str(db)).write_text(json.dumps({"id": "abc", "created": "2026-01-01T00:00:00+00:00", "aliases": [old_key]}))
    assert database_key(str(db)) == "deployment:abc"
    with Ledger(tmp_path / "d.duckdb.ledger.sqlite") as ledger:
        ledger.charge_synthetic(str(db), Budget.of("1", "0.000001"), copy_id="old-copy")
        _copy(tmp_path / "old.duckdb", old_key, "old-copy")
        budget, _ = synthetic_guarantee(ledger, str(db), tmp_path / "old.duckdb")
        assert budget == Budget.of("1", "0.000001")
        _copy(tmp_path / "other.duckdb", "/somewhere/else.duckdb", "old-copy")
        try:
            synthetic_guarantee(ledger, str(db), tmp_path / "other.duckdb")
        except SyntheticCopyError as exc:
            assert "not from deployment:abc" in str(exc)
        else:
            raise AssertionError("a copy of another database was accepted")
