"""Issue 26, item 4: ``pimento sql --preview`` (cost, the estimate on the synthetic copy, the epsilon planner; nothing
spent) and the "mostly noise" warning that ``pimento sql`` says on stderr before it charges."""

from __future__ import annotations

import json

import pytest
from db_support import demo_with_copy
from typer.testing import CliRunner

from test_ask_two_steps import _charges

from pimento.cli.app import app

COUNT = "SELECT COUNT(*) FROM Patient"
PER_SEX = "SELECT p.sex, COUNT(*) FROM Patient p GROUP BY p.sex"


@pytest.fixture(scope="module")
def hospital(tmp_path_factory, standin_synthetic):
    return demo_with_copy(tmp_path_factory.mktemp("sql_preview"), standin_synthetic)


def _run(*args):
    return CliRunner().invoke(app, list(args))


def test_the_preview_shows_cost_estimate_and_planner_and_spends_nothing(hospital):
    before = len(_charges(hospital))
    text = _run("sql", "--db", str(hospital), "--sql", COUNT, "--epsilon", "0.001", "--preview")
    assert text.exit_code == 0, text.output
    assert "what epsilon buys" in text.output and "expected accuracy about" in text.output and "mostly noise" in text.output
    shown = json.loads(_run("sql", "--db", str(hospital), "--sql", COUNT, "--epsilon", "1", "--preview", "--json").output)
    assert shown["spent"] == {"epsilon": "0", "delta": "0"} and shown["noise_warning"] is None and len(shown["planner"]) >= 6
    grouped = json.loads(_run("sql", "--db", str(hospital), "--sql", PER_SEX, "--epsilon", "1", "--preview", "--json").output)
    assert grouped["groups"] >= 2 and grouped["cost"]["epsilon"] == "1"
    assert len(_charges(hospital)) == before


def test_sql_warns_before_it_charges_a_mostly_noise_answer(hospital):
    before = len(_charges(hospital))
    noisy = _run("sql", "--db", str(hospital), "--sql", COUNT, "--epsilon", "0.001", "--json")
    assert noisy.exit_code == 0 and "mostly noise" in noisy.stderr and json.loads(noisy.stdout)["value"] is not None
    calm = _run("sql", "--db", str(hospital), "--sql", COUNT, "--epsilon", "1", "--json")
    assert calm.exit_code == 0 and "mostly noise" not in calm.stderr
    assert len(_charges(hospital)) == before + 2
