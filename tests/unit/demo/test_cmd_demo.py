"""`pimento demo create/run` on a Typer app holding only this command group."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import command_app
import typer
from typer.testing import CliRunner

from pimento.cli import cmd_demo
from pimento.demo.hospital import DEMO_QUESTION, DEMO_SQL_ORDERS, DEMO_SQL_PRESCRIPTION, TABLES

runner = CliRunner()


@pytest.fixture
def app() -> typer.Typer:
    return command_app(cmd_demo)


def test_create_writes_the_database_and_refuses_to_overwrite(app: typer.Typer, tmp_path: Path) -> None:
    out = tmp_path / "demo" / "h.duckdb"
    result = runner.invoke(app, ["demo", "create", "--patients", "200", "--seed", "3", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["patients"] == 200 and data["seed"] == 3
    assert list(data["rows"]) == list(TABLES)
    assert out.is_file() and (out.parent / "pimento.toml").is_file()

    again = runner.invoke(app, ["demo", "create", "--patients", "200", "--out", str(out)])
    assert again.exit_code == 2
    assert "already exists" in again.output and "--force" in again.output
    assert "Traceback" not in again.output

    forced = runner.invoke(app, ["demo", "create", "--patients", "150", "--out", str(out), "--force"])
    assert forced.exit_code == 0, forced.output
    assert "Patient" in forced.stdout and "150" in forced.stdout


@pytest.mark.parametrize("patients", ["0", "-3"])
def test_create_rejects_non_positive_patients(app: typer.Typer, tmp_path: Path, patients: str) -> None:
    result = runner.invoke(app, ["demo", "create", "--patients", patients, "--out", str(tmp_path / "h.duckdb")])
    assert result.exit_code == 2
    assert "--patients must be a positive number" in result.output
    assert not (tmp_path / "h.duckdb").exists()


def test_create_rejects_a_path_under_a_file(app: typer.Typer, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    result = runner.invoke(app, ["demo", "create", "--patients", "10", "--out", str(tmp_path / "f" / "h.duckdb")])
    assert result.exit_code == 2
    assert "is a file, not a folder" in result.output


def test_run_builds_when_missing_and_reports_every_step(app: typer.Typer, tmp_path: Path) -> None:
    out = tmp_path / "d" / "h.duckdb"
    result = runner.invoke(app, ["demo", "run", "--out", str(out), "--patients", "300", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert list(data) == [step.name for step in cmd_demo.RUN_STEPS]
    assert data["database"]["built"] is True and data["database"]["patients"] == 300
    tables = {t["name"]: t for t in data["catalog"]["tables"]}
    assert set(tables) == set(TABLES)
    assert tables["Patient"]["rows"] == 300 and tables["Patient"]["private"] is True
    assert tables["DxCategory"]["private"] is False
    assert data["catalog"]["functional_dependencies"] == ["DxCategory.(diagnosis) -> DxCategory.(hivstatus)"]
    question = data["question"]
    assert question["question"] == DEMO_QUESTION
    assert [f["sql"] for f in question["formulations"]] == [DEMO_SQL_PRESCRIPTION, DEMO_SQL_ORDERS]
    answers = {f["true_answer"] for f in question["formulations"]}
    assert question["answers_agree"] is True and len(answers) == 1 and answers.pop() > 0
    parsed = {f["name"]: f for f in data["parse"]["formulations"]}
    assert parsed["prescription"]["relations"] == ["Employee AS E", "Prescription AS P"]
    assert sorted(parsed["orders"]["relations"]) == ["Employee AS E", "MedicationOrders AS M", "Visit AS V"]
    assert parsed["orders"]["count"] == "COUNT(DISTINCT M.pat_id)"
    assert len(parsed["orders"]["joins"]) == 2

    # Second run: the database exists and is reused; the Rich view tells people what it shows.
    again = runner.invoke(app, ["demo", "run", "--out", str(out), "--patients", "500"])
    assert again.exit_code == 0, again.output
    assert "existing" in again.stdout and "300 patients, not 500" in " ".join(again.stdout.split())
    assert DEMO_QUESTION in again.stdout and "agree" in again.stdout
    assert "Parsed CountQuery IR" in again.stdout


def test_run_rejects_a_directory(app: typer.Typer, tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "run", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "is a directory" in result.output


def test_steps_are_small_functions_returning_dicts(tmp_path: Path) -> None:
    calls: list[str] = []

    def extra(ctx: cmd_demo.DemoContext) -> dict:
        calls.append(ctx.results["question"]["question"])
        return {"seen": sorted(ctx.results)}

    steps = [*cmd_demo.RUN_STEPS[:3], cmd_demo.DemoStep("extra", extra, lambda data: None)]
    ctx = cmd_demo.DemoContext(tmp_path / "h.duckdb", patients=100, quiet=True)
    results = cmd_demo.run_steps(ctx, steps, show=False)
    assert calls == [DEMO_QUESTION]
    assert results["extra"] == {"seen": ["catalog", "database", "question"]}
    assert ctx.database is None  # closed after the steps
