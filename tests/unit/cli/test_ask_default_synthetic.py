"""`pimento ask --db DB "question" --mode dp ...` as the issue writes it: the synthetic copy beside DB."""

from __future__ import annotations

import json
import shutil

import duckdb
from typer.testing import CliRunner

from pimento.cli.app import app
from pimento.demo.hospital import DEMO_QUESTION, create_demo


def test_ask_without_synthetic_uses_the_copy_beside_the_database(tmp_path):
    db = tmp_path / "hospital.duckdb"
    create_demo(db, patients=300, seed=5)
    # A stand-in for `pimento synth` output (another hospital, with the marker table).
    stand_in = tmp_path / "other" / "hospital.duckdb"
    create_demo(stand_in, patients=300, seed=6)
    con = duckdb.connect(str(stand_in))
    con.execute("CREATE TABLE _pimento_synth_meta (k VARCHAR, v VARCHAR)")
    con.close()
    shutil.copy(stand_in, tmp_path / "hospital.synthetic.duckdb")
    result = CliRunner().invoke(
        app,
        ["ask", DEMO_QUESTION, "--db", str(db), "--mode", "dp", "--epsilon", "1", "--delta", "1e-6",
         "--rollouts", "3", "--json"],
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["chosen_sql"].startswith("SELECT COUNT")
    assert data["budget_left"]
