"""`pimento ask --db DB "question" --mode dp ...` as the issue writes it: the synthetic copy beside DB."""

from __future__ import annotations

import json
import shutil

from db_support import demo_with_copy
from typer.testing import CliRunner

from pimento.cli.app import app
from pimento.demo.hospital import DEMO_QUESTION, create_demo


def test_ask_without_synthetic_uses_the_copy_beside_the_database(tmp_path, standin_synthetic):
    db = demo_with_copy(tmp_path, standin_synthetic)
    result = CliRunner().invoke(
        app,
        ["ask", DEMO_QUESTION, "--db", str(db), "--mode", "dp", "--epsilon", "1", "--delta", "1e-6",
         "--rollouts", "3", "--yes", "--json"],
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["chosen_sql"].startswith("SELECT COUNT")
    assert data["budget_left"]
    # The answer states its end-to-end guarantee: the copy's charge plus the release's.
    assert data["guarantee"]["epsilon"] == "2.6" and data["guarantee"]["epsilon_synthetic"] == "1.6"
    assert "synthetic_rs" in data and "rs" not in data


def test_ask_refuses_a_copy_not_charged_to_this_database(tmp_path, standin_synthetic):
    db = tmp_path / "hospital.duckdb"
    create_demo(db, patients=300, seed=5)
    (tmp_path / "other").mkdir()
    shutil.copy(standin_synthetic(tmp_path / "other" / "hospital.duckdb", seed=6), tmp_path / "hospital.synthetic.duckdb")
    for command in (["ask", DEMO_QUESTION, "--mode", "dp", "--epsilon", "1", "--delta", "1e-6"], ["search", DEMO_QUESTION]):
        result = CliRunner().invoke(app, [*command, "--db", str(db), "--rollouts", "3"])
        assert result.exit_code == 2, result.output
        assert "older `pimento synth`" in " ".join(result.output.split()) and "Traceback" not in result.output
