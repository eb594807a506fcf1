"""The synthetic copy's guarantee kept between previews (pimento.release.synthetic.kept_guarantee, open_checked_copy)
and the SQL parsed once per text (pimento.release.noise_check_cache.parsed_count): reused while nothing they read
changed, checked again from the start when the copy, the ledger file or the deployment file changed."""

from __future__ import annotations

import json
import os

import duckdb
import pytest

import pimento.release.synthetic as synthetic
from pimento.errors import SyntheticCopyError, UserError
from pimento.mechanisms import Budget, Ledger
from pimento.mechanisms.ledger import database_key, deployment_file
from pimento.release.noise_check_cache import parsed_count
from pimento.schema import Catalog, Column, Table

BUDGET = Budget.of("1", "0.000001")


def _copy(path, key: str, copy_id: str) -> None:
    """A synthetic copy of the database ``key`` named ``copy_id``, written beside ``path`` then moved onto it."""
    tmp = path.with_name(path.name + ".new")
    con = duckdb.connect(str(tmp))
    con.execute("CREATE TABLE t (a INTEGER)")
    con.execute("CREATE TABLE _pimento_synth_meta (epsilon VARCHAR, delta VARCHAR, root VARCHAR, copy_id VARCHAR, database_key VARCHAR, details VARCHAR)")
    con.execute("INSERT INTO _pimento_synth_meta VALUES ('1', '0.000001', 't', ?, ?, '{}')", [copy_id, key])
    con.close()
    os.replace(tmp, path)


@pytest.fixture
def deployment(tmp_path, monkeypatch):
    """A database, its ledger holding the charge of copy "c1", that copy, and a count of the full checks made."""
    db = tmp_path / "d.duckdb"
    duckdb.connect(str(db)).execute("CREATE TABLE t (a INTEGER)").close()
    key = database_key(str(db))
    ledger_file = tmp_path / "d.duckdb.ledger.sqlite"
    with Ledger(ledger_file) as ledger:
        ledger.charge_synthetic(str(db), BUDGET, copy_id="c1")
    _copy(tmp_path / "syn.duckdb", key, "c1")
    checks = []
    real = synthetic.synthetic_guarantee
    monkeypatch.setattr(synthetic, "synthetic_guarantee", lambda *a: checks.append(a) or real(*a))
    synthetic._VERIFIED.clear()
    return str(db), key, ledger_file, tmp_path / "syn.duckdb", checks


def test_a_verified_guarantee_is_reused_while_nothing_changed(deployment):
    db, _key, ledger_file, copy, checks = deployment
    with Ledger(ledger_file) as ledger:
        assert synthetic.kept_guarantee(ledger, db, copy)[0] == BUDGET
        assert synthetic.kept_guarantee(ledger, db, copy)[0] == BUDGET
    assert len(checks) == 1


def test_a_new_copy_is_checked_again(deployment):
    db, key, ledger_file, copy, _checks = deployment
    with Ledger(ledger_file) as ledger:
        synthetic.kept_guarantee(ledger, db, copy)
        _copy(copy, key, "c2")  # a copy whose spend this ledger never saw
        with pytest.raises(SyntheticCopyError, match="was not charged"):
            synthetic.kept_guarantee(ledger, db, copy)


def test_a_replaced_ledger_is_checked_again(deployment):
    db, _key, ledger_file, copy, _checks = deployment
    with Ledger(ledger_file) as ledger:
        synthetic.kept_guarantee(ledger, db, copy)
    other = ledger_file.with_name("other.sqlite")
    with Ledger(other) as replacement:  # the same spend, but not the copy's charge: another ledger put in its place
        replacement.charge_synthetic(db, BUDGET, copy_id="c0")
    for suffix in ("-wal", "-shm"):
        ledger_file.with_name(ledger_file.name + suffix).unlink(missing_ok=True)
    os.replace(other, ledger_file)
    with Ledger(ledger_file) as ledger, pytest.raises(SyntheticCopyError, match="was not charged"):
        synthetic.kept_guarantee(ledger, db, copy)


def test_a_changed_deployment_file_is_checked_again(deployment):
    db, _key, ledger_file, copy, _checks = deployment
    with Ledger(ledger_file) as ledger:
        synthetic.kept_guarantee(ledger, db, copy)
        deployment_file(db).write_text(json.dumps({"id": "another", "created": "2026-01-01T00:00:00+00:00", "aliases": []}))
        with pytest.raises(SyntheticCopyError, match="was made from"):
            synthetic.kept_guarantee(ledger, db, copy)


def test_the_file_opened_is_the_file_verified(deployment, monkeypatch):
    db, key, ledger_file, copy, _checks = deployment
    real = synthetic.kept_guarantee

    def then_replaced(*args):  # the copy replaced by an uncharged one between the check and the open
        out = real(*args)
        _copy(copy, key, "c2")
        return out

    monkeypatch.setattr(synthetic, "kept_guarantee", then_replaced)
    with Ledger(ledger_file) as ledger, pytest.raises(SyntheticCopyError, match="was not charged"):
        synthetic.open_checked_copy(ledger, db, copy)


def test_the_copy_opened_after_its_check(deployment):
    db, _key, ledger_file, copy, _checks = deployment
    with Ledger(ledger_file) as ledger:
        budget, engine = synthetic.open_checked_copy(ledger, db, copy)
    try:
        assert budget == BUDGET and engine.execute("SELECT COUNT(*) FROM t").scalar() == 0
    finally:
        engine.close()


def _catalog(column: str) -> Catalog:
    return Catalog(tables=(Table(name="T", columns=(Column(name=column, type="integer"),), primary_key=(column,)),))


def test_a_query_is_parsed_once_per_text_and_catalog():
    one, other = _catalog("a"), _catalog("b")
    sql = "SELECT COUNT(*) FROM T WHERE a > 1"
    first = parsed_count(sql, one, max_chars=10_000)
    assert parsed_count(sql, one, max_chars=10_000) is first
    with pytest.raises(UserError):  # another catalog (no column a) parses it again, and refuses it
        parsed_count(sql, other, max_chars=10_000)
