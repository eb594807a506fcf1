"""The synthetic copy's budget is part of the guarantee (issue 18, finding 6).

``pimento synth`` charges the ledger the releases charge (that of the *resolved* database),
the copy records its copy id and database key, and the release path refuses a copy whose
charge is not in this database's ledger.
"""

from __future__ import annotations

import json

import duckdb
import pytest
from typer.testing import CliRunner

import pimento.synth as synth
from pimento.cli.app import app
from pimento.engines import open_engine
from pimento.engines.database import load_database
from pimento.errors import SyntheticCopyError
from pimento.mechanisms import Budget, Ledger
from pimento.mechanisms.ledger import ledger_path
from pimento.release.synthetic import synthetic_guarantee


@pytest.fixture()
def folder(tmp_path):
    """A folder holding a small database and the pimento.toml that names it."""
    path = tmp_path / "clinic" / "data.duckdb"
    path.parent.mkdir()
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE P (id INTEGER PRIMARY KEY, code TEXT NOT NULL)")
    con.execute("INSERT INTO P SELECT i, 'c' || (i % 5) FROM range(150) t(i)")
    con.close()
    (path.parent / "pimento.toml").write_text(
        '[database]\npath = "data.duckdb"\n[privacy]\nroot = "P"\n[synth]\npublic_values = ["P.code"]\n[ledger]\nepsilon_cap = "3"\n'
    )
    return path.parent


def run_synth(folder, out, *extra):
    return CliRunner().invoke(app, ["synth", "--db", str(folder), "--out", str(out), "--epsilon", "1", "--delta", "1e-6", "--json", *extra])


def test_synth_on_a_folder_charges_the_ledger_of_the_resolved_database(folder, tmp_path):
    out = tmp_path / "syn.duckdb"
    result = run_synth(folder, out)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    location = str(load_database(folder).location)
    assert not ledger_path(str(folder)).exists()  # the raw argument's ledger (what the old code charged)
    with Ledger.for_database(location, load_database(folder).settings) as ledger:
        charges = ledger.charges(location)
        assert [(c.kind, c.budget, c.request_key) for c in charges] == [("synthetic", Budget.of(1, "1e-6"), report["copy_id"])]
        assert ledger.spent(location) == Budget.of(1, "1e-6")  # the releases see it
        assert ledger.verify_audit().ok
        # copy id round trip: copy -> meta -> ledger charge
        budget, notes = synthetic_guarantee(ledger, location, out)
    assert budget == Budget.of(1, "1e-6")
    assert notes == ["the set of values occurring in P.code (declared public values)"]
    con = duckdb.connect(str(out), read_only=True)
    copy_id, key = con.execute(f"SELECT copy_id, database_key FROM {synth.META_TABLE}").fetchone()
    con.close()
    assert copy_id == report["copy_id"] and key == report["database"] == charges[0].database
    # the CLI says what the copy is DP for, naming the inputs copied without noise
    assert "agree on the declared public inputs" in report["guarantee"] and "P.code" in report["guarantee"]
    assert report["public_inputs"] == notes


def test_budget_and_audit_on_a_folder_read_the_ledger_the_synth_charged(folder, tmp_path):
    assert run_synth(folder, tmp_path / "syn.duckdb").exit_code == 0
    budget = CliRunner().invoke(app, ["budget", "--db", str(folder), "--json"])
    assert budget.exit_code == 0, budget.output
    data = json.loads(budget.stdout)
    assert data["spent"]["epsilon"] == "1" and data["database"] == str(load_database(folder).location)
    verify = CliRunner().invoke(app, ["audit", "verify", "--db", str(folder), "--json"])
    assert verify.exit_code == 0 and json.loads(verify.stdout)["charges"] == 1


def test_no_ledger_flag_is_gone(folder, tmp_path):
    result = run_synth(folder, tmp_path / "syn.duckdb", "--no-ledger")
    assert result.exit_code == 2 and "no-ledger" in result.output
    assert not (tmp_path / "syn.duckdb").exists()


def test_a_copy_over_the_cap_is_refused_before_anything_is_written(folder, tmp_path):
    out = tmp_path / "syn.duckdb"
    result = CliRunner().invoke(app, ["synth", "--db", str(folder), "--out", str(out), "--epsilon", "4", "--delta", "1e-6"])
    assert result.exit_code != 0 and "budget" in result.output
    assert not out.exists()


def test_bad_declaration_spends_nothing(folder, tmp_path):
    result = run_synth(folder, tmp_path / "syn.duckdb", "--public-values", "P.nope")
    assert result.exit_code == 2
    location = str(load_database(folder).location)
    with Ledger.for_database(location, load_database(folder).settings) as ledger:
        assert ledger.charges() == []


def test_release_path_refuses_an_uncharged_copy(folder, tmp_path):
    db = load_database(folder)
    location = str(db.location)
    out = tmp_path / "free.duckdb"
    result = synth.synthesize(db.engine, db.catalog, out, "1", "1e-6", root="P")  # no ledger: nothing charged
    result.engine.close()
    with Ledger.for_database(location, db.settings) as ledger:
        with pytest.raises(SyntheticCopyError, match="was not charged"):
            synthetic_guarantee(ledger, location, out)
    db.close()


def test_release_path_refuses_a_copy_charged_to_another_database(folder, tmp_path):
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE P (id INTEGER PRIMARY KEY, code TEXT NOT NULL)")
    con.execute("INSERT INTO P SELECT i, 'x' FROM range(100) t(i)")
    con.close()
    out = tmp_path / "syn.duckdb"
    engine = open_engine(str(other))
    with Ledger.for_database(str(other)) as ledger_other:
        synth.synthesize(engine, engine.introspect(), out, "1", "1e-6", root="P", ledger=ledger_other, database=str(other)).engine.close()
    engine.close()
    db = load_database(folder)
    location = str(db.location)
    with Ledger.for_database(location, db.settings) as ledger:
        with pytest.raises(SyntheticCopyError, match="was made from"):
            synthetic_guarantee(ledger, location, out)
    db.close()


def test_release_path_refuses_a_database_that_is_no_copy(folder, tmp_path):
    db = load_database(folder)
    location = str(db.location)
    db.close()
    plain = tmp_path / "plain.duckdb"
    duckdb.connect(str(plain)).close()
    with Ledger.for_database(location) as ledger:
        with pytest.raises(SyntheticCopyError, match="not a synthetic database"):
            synthetic_guarantee(ledger, location, plain)
        with pytest.raises(SyntheticCopyError, match="does not exist"):
            synthetic_guarantee(ledger, location, tmp_path / "missing.duckdb")
