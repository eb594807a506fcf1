"""The ledger identifies a database by the deployment id stored with it, and fails closed when the
ledger of a deployment that has spent is deleted (issue 12, item 4)."""

from __future__ import annotations

import glob
import json
import os
import shutil

import pytest

from pimento.config import LedgerSettings
from pimento.errors import BudgetError, LedgerIntegrityError
from pimento.mechanisms import Budget, Ledger, ledger_path
from pimento.mechanisms.ledger import (
    database_key,
    database_keys,
    deployment_file,
    deployment_id,
    witness_path,
)
from pimento.mechanisms.ledger_witness import legacy_witness_path


def _database(folder) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "shop.duckdb"
    path.write_bytes(b"not read by the ledger")
    return str(path)


def _open(db: str, cap: str = "1") -> Ledger:
    return Ledger(ledger_path(db), LedgerSettings(epsilon_cap=cap, analyst_share="1"))  # one analyst may spend the whole database cap here (issue 28 made the default a quarter of it)


def _spend(ledger: Ledger, db: str, eps: str) -> None:
    charge = ledger.charge("ann", db, Budget.spend(eps))
    ledger.record_failure("k", charge, {"kind": "release"})


def test_the_key_is_an_id_stored_with_the_database_not_its_path(tmp_path):
    db = _database(tmp_path / "a")
    key = database_key(db)
    assert key.startswith("deployment:") and str(tmp_path) not in key
    assert deployment_file(db).exists() and deployment_file(db).parent == tmp_path / "a"
    assert database_key(db) == key  # stable
    assert database_key(key) == key  # a key passed on stays itself


def test_a_copied_deployment_keeps_its_spend(tmp_path):
    db = _database(tmp_path / "a")
    with _open(db) as ledger:
        _spend(ledger, db, "0.75")
    shutil.copytree(tmp_path / "a", tmp_path / "b")  # database, deployment file, ledger, witness
    copy = str(tmp_path / "b" / "shop.duckdb")
    with _open(copy) as ledger:
        assert ledger.spent(copy) == Budget.of("0.75")  # the old path key gave zero here
        with pytest.raises(BudgetError, match="nothing was spent"):
            ledger.charge("ann", copy, Budget.spend("0.5"))


def test_rm_ledger_glob_leaves_the_witness_and_fails_closed(tmp_path):
    db = _database(tmp_path / "a")
    with _open(db) as ledger:
        _spend(ledger, db, "1")
    path = ledger_path(db)
    for name in glob.glob(f"{path}*"):  # rm DB.ledger.sqlite*
        os.unlink(name)
    assert witness_path(path).exists() and not str(witness_path(path)).startswith(str(path))
    with pytest.raises(LedgerIntegrityError, match="witness") as info:
        _open(db)
    assert "restore" in (info.value.hint or "")


def test_a_copy_without_its_ledger_fails_closed(tmp_path):
    db = _database(tmp_path / "a")
    with _open(db) as ledger:
        _spend(ledger, db, "1")
    (tmp_path / "b").mkdir()
    for name in os.listdir(tmp_path / "a"):
        if ".ledger.sqlite" not in name:
            shutil.copy(tmp_path / "a" / name, tmp_path / "b" / name)
    with pytest.raises(LedgerIntegrityError):
        _open(str(tmp_path / "b" / "shop.duckdb"))


def test_a_format_2_ledger_keyed_by_path_migrates(tmp_path):
    """Charges made under the path key (before the id existed) still count; the old ``.head`` witness
    still fails closed and is replaced by the new one at the next charge."""
    folder = tmp_path / "a"
    folder.mkdir()
    db = str(folder / "shop.duckdb")  # not there yet: the key is the path, as in format 2
    with _open(db) as ledger:
        _spend(ledger, db, "0.5")
        assert ledger.charges()[0].database == str(folder / "shop.duckdb")
    path = ledger_path(db)
    witness_path(path).rename(legacy_witness_path(path))  # where format 2 kept it
    _database(folder)
    assert database_keys(db)[1:] == (str(folder / "shop.duckdb"),)
    with _open(db) as ledger:
        assert ledger.spent(db) == Budget.of("0.5")
        assert ledger.summary(db)["spent"]["epsilon"] == "0.5"
        _spend(ledger, db, "0.5")
        assert ledger.spent(db) == Budget.of(1)
        with pytest.raises(BudgetError, match="nothing was spent"):
            ledger.charge("ann", db, Budget.spend("0.01"))
        assert ledger.verify_audit().ok
    assert witness_path(path).exists() and not legacy_witness_path(path).exists()


def test_the_legacy_head_witness_still_fails_closed(tmp_path):
    folder = tmp_path / "a"
    folder.mkdir()
    db = str(folder / "shop.duckdb")
    with _open(db) as ledger:
        _spend(ledger, db, "1")
    path = ledger_path(db)
    witness_path(path).rename(legacy_witness_path(path))
    path.unlink()
    with pytest.raises(LedgerIntegrityError, match="witness"):
        _open(db)


def test_an_unreadable_deployment_file_is_refused(tmp_path):
    db = _database(tmp_path / "a")
    deployment_id(db)
    deployment_file(db).write_text("{not json")
    with pytest.raises(LedgerIntegrityError, match="deployment file"):
        database_key(db)


def test_the_id_is_made_once_and_kept(tmp_path):
    db = _database(tmp_path / "a")
    ids = {deployment_id(db) for _ in range(5)}
    assert len(ids) == 1
    data = json.loads(deployment_file(db).read_text())
    assert data["id"] in ids and data["aliases"] == [str(tmp_path / "a" / "shop.duckdb")]
    assert deployment_id(str(tmp_path / "missing.duckdb")) is None  # nothing made for a file that is not there
    assert not (tmp_path / "missing.duckdb.pimento-deployment.json").exists()


def test_deleting_the_deployment_file_of_a_deployment_that_spent_fails_closed(tmp_path):
    db = _database(tmp_path / "a")
    with _open(db) as ledger:
        _spend(ledger, db, "1")
    ident = deployment_id(db)
    deployment_file(db).unlink()
    with pytest.raises(LedgerIntegrityError, match="deployment file") as info:
        database_key(db)
    assert ident in (info.value.hint or "")
    assert not deployment_file(db).exists()  # no new id was made
    deployment_file(db).write_text(json.dumps({"id": ident}))  # the recovery the hint gives
    with _open(db) as ledger:
        assert ledger.spent(db) == Budget.of(1)
