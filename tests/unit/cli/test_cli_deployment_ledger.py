"""End to end (CLI): `sql --db FOLDER`, `budget --db FOLDER` and `budget --db FILE` read one ledger,
and a copied deployment folder keeps its spend and refuses to start without its ledger (issue 12,
item 4)."""

from __future__ import annotations

import glob
import json
import os
import shutil

import duckdb
from typer.testing import CliRunner

from pimento.cli.app import app


def _deployment(folder):
    folder.mkdir()
    con = duckdb.connect(str(folder / "data.duckdb"))
    con.execute("CREATE TABLE P (id INTEGER PRIMARY KEY, code TEXT NOT NULL)")
    con.execute("INSERT INTO P SELECT i, 'c' || (i % 5) FROM range(150) t(i)")
    con.close()
    (folder / "pimento.toml").write_text('[database]\npath = "data.duckdb"\n[privacy]\nroot = "P"\n[ledger]\nepsilon_cap = "3"\nanalyst_share = "1"\n')
    return folder


def _spent(db: str) -> str:
    result = CliRunner().invoke(app, ["budget", "--db", db, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["spent"]["epsilon"]


def test_one_ledger_per_deployment_wherever_it_is(tmp_path):
    folder = _deployment(tmp_path / "clinic")
    sql = CliRunner().invoke(app, ["sql", "--db", str(folder), "--sql", "SELECT COUNT(*) FROM P", "--epsilon", "1", "--json"])
    assert sql.exit_code == 0, sql.output
    assert _spent(str(folder)) == "1" and _spent(str(folder / "data.duckdb")) == "1"
    shutil.copytree(folder, tmp_path / "moved")  # the whole deployment, ledger included
    assert _spent(str(tmp_path / "moved")) == "1"  # the path key of the old code gave "0"
    for name in glob.glob(str(tmp_path / "moved" / "data.duckdb.ledger.sqlite*")):
        os.unlink(name)
    refused = CliRunner().invoke(app, ["budget", "--db", str(tmp_path / "moved"), "--json"])
    assert refused.exit_code == 2
    error = json.loads(refused.stdout)["error"]
    assert error["type"] == "LedgerIntegrityError" and "restore" in error["hint"]
