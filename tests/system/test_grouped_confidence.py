"""A grouped question whose only sensible reading has no join gets high confidence, so ``ask --yes`` answers it
(issue 25): the parser proposes no reading that joins a relation the question does not name
(nl/aggregate_readings.py, ``_spurious_joins``) beside the reading without it.

On the demo hospital (its ``StudyPatient`` link table and ``Discharge.pat_id`` read as "patients" too) with a
stand-in synthetic copy.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from db_support import demo_with_copy
from pimento.cli._common import console
from pimento.cli.app import app

QUESTION = "How many patients are there per sex?"
CHOSEN = "SELECT Patient.sex, COUNT(*) FROM Patient GROUP BY Patient.sex"


@pytest.fixture(scope="module")
def demo(tmp_path_factory, standin_synthetic) -> Path:
    return demo_with_copy(tmp_path_factory.mktemp("grouped_confidence"), standin_synthetic, patients=200)


def _cli(*args: str):
    console.width = 100
    return CliRunner().invoke(app, list(args))


def test_a_grouped_question_without_a_join_reading_is_read_with_high_confidence(demo):
    result = _cli("ask", QUESTION, "--db", str(demo), "--epsilon", "1", "--delta", "1e-6", "--preview", "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["chosen_sql"] == CHOSEN
    assert shown["confidence"] == "high", shown["readings_proposed"]
    assert shown["readings_proposed"] == 1


def test_ask_yes_answers_it(demo):
    result = _cli("ask", QUESTION, "--db", str(demo), "--epsilon", "1", "--delta", "1e-6", "--analyst", "ann", "--yes", "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["chosen_sql"] == CHOSEN and [g["key"] for g in answer["groups"]] == [["F"], ["M"]]
