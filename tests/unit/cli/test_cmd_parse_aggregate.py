"""`pimento parse` on grouped COUNT, SUM and AVG SQL: the AggregateQuery IR, or the construct refused."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cli_support import command_app
import typer
from typer.testing import CliRunner

from pimento.cli import _common, cmd_parse


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_common.console, "width", 200)


@pytest.fixture
def app() -> typer.Typer:
    return command_app(cmd_parse)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "clinic.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE Patient (pid INTEGER PRIMARY KEY, ward TEXT, age INTEGER)")
    con.execute("CREATE TABLE Visit (vid INTEGER PRIMARY KEY, pid INTEGER REFERENCES Patient (pid), cost REAL)")
    con.commit()
    con.close()
    return path


def _run(app: typer.Typer, db: Path, sql: str, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["parse", "--db", str(db), "--sql", sql, *extra])
    return result.exit_code, result.output


def test_grouped_count_prints_the_aggregate_ir(app: typer.Typer, db: Path) -> None:
    code, out = _run(app, db, "SELECT ward, COUNT(*) FROM Patient GROUP BY ward")
    assert code == 0, out
    assert "AggregateQuery" in out and "Patient.ward" in out and "COUNT" in out


def test_average_over_a_join_as_json(app: typer.Typer, db: Path) -> None:
    sql = "SELECT p.ward, AVG(v.cost) FROM Patient p JOIN Visit v ON p.pid = v.pid GROUP BY p.ward"
    code, out = _run(app, db, sql, "--json")
    assert code == 0, out
    info = json.loads(out)
    assert info["supported"] is True
    assert info["aggregate"] == "AVG" and info["column"] == "v.cost" and info["group_by"] == ["p.ward"]
    assert info["count"] == "COUNT(v.cost)"  # the count whose sensitivity bounds the answer's


def test_plain_count_keeps_the_count_ir(app: typer.Typer, db: Path) -> None:
    code, out = _run(app, db, "SELECT COUNT(*) FROM Patient", "--json")
    assert code == 0, out
    assert "aggregate" not in json.loads(out)


def test_aggregate_outside_the_class_is_refused_with_its_construct(app: typer.Typer, db: Path) -> None:
    code, out = _run(app, db, "SELECT ward, MAX(age) FROM Patient GROUP BY ward", "--json")
    assert code == 1, out
    assert json.loads(out)["supported"] is False
