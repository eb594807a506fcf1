"""pimento ask in two steps: the interpretation (found on the synthetic copy) is shown first and the
budget is spent only once it is confirmed (--yes, --confirm-sql, or a yes on a terminal)."""

from __future__ import annotations

import json

import pytest
from db_support import demo_with_copy
from typer.testing import CliRunner

from pimento.cli.app import app
from pimento.demo.hospital import DEMO_QUESTION
from pimento.mechanisms import Ledger


@pytest.fixture(scope="module")
def hospital(tmp_path_factory, standin_synthetic):
    return demo_with_copy(tmp_path_factory.mktemp("two_steps"), standin_synthetic)


def _charges(db):
    from pimento.engines.database import load_database

    database = load_database(db)
    try:
        with Ledger.for_database(str(database.location), database.settings) as ledger:
            return [c for c in ledger.charges() if c.kind != "synthetic"]
    finally:
        database.close()


BASE = ["--epsilon", "1", "--delta", "1e-6", "--rollouts", "2"]


def test_preview_shows_the_reading_and_spends_nothing(hospital):
    out = CliRunner().invoke(app, ["ask", DEMO_QUESTION, "--db", str(hospital), *BASE, "--preview", "--json"])
    assert out.exit_code == 0, out.output
    shown = json.loads(out.stdout)
    assert shown["reading"].startswith("the number of") and "warfarin" in shown["reading"]
    assert shown["confidence"] in ("high", "low") and shown["spent"] == {"epsilon": "0", "delta": "0"}
    assert shown["estimated_half_width_95"] > 0 and shown["chosen_sql"].startswith("SELECT COUNT")
    assert _charges(hospital) == []


def test_without_a_terminal_nothing_is_released_unless_confirmed(hospital):
    out = CliRunner().invoke(app, ["ask", DEMO_QUESTION, "--db", str(hospital), *BASE, "--json"])
    assert out.exit_code == 2 and "nothing was released" in out.output
    assert _charges(hospital) == []


def test_confirm_sql_releases_exactly_the_confirmed_sql_and_refuses_another(hospital):
    shown = json.loads(CliRunner().invoke(app, ["ask", DEMO_QUESTION, "--db", str(hospital), *BASE, "--preview", "--json"]).stdout)
    wrong = CliRunner().invoke(app, ["ask", DEMO_QUESTION, "--db", str(hospital), *BASE, "--confirm-sql", "SELECT COUNT(*) FROM Patient", "--json"])
    assert wrong.exit_code == 2 and "another formulation than the one confirmed" in wrong.output
    assert _charges(hospital) == []
    right = CliRunner().invoke(app, ["ask", DEMO_QUESTION, "--db", str(hospital), *BASE, "--confirm-sql", shown["chosen_sql"], "--json"])
    assert right.exit_code == 0, right.output
    assert json.loads(right.stdout)["chosen_sql"] == shown["chosen_sql"]
    assert len(_charges(hospital)) == 1


def test_yes_is_refused_for_a_low_confidence_reading(monkeypatch, hospital):
    from pimento.release import Interpretation

    monkeypatch.setattr(Interpretation, "confidence", property(lambda self: "low"))
    before = len(_charges(hospital))
    out = CliRunner().invoke(app, ["ask", DEMO_QUESTION, "--db", str(hospital), *BASE, "--yes", "--seed", "7"])
    assert out.exit_code == 2 and "confidence is low" in " ".join(out.output.split())
    assert len(_charges(hospital)) == before


def test_an_unreachable_llm_is_said_and_the_offline_parser_answers(hospital):
    """Issue 12: `ask --llm <unreachable>` fell back to the offline parser with no word said."""
    dead = "http://127.0.0.1:9/v1"  # the discard port: connection refused
    out = CliRunner().invoke(app, ["ask", DEMO_QUESTION, "--db", str(hospital), *BASE, "--preview", "--llm", dead])
    assert out.exit_code == 0, out.output
    assert "note: LLM unreachable or unusable, offline parser used instead" in out.stderr
    shown = json.loads(CliRunner().invoke(app, ["ask", DEMO_QUESTION, "--db", str(hospital), *BASE, "--preview", "--json", "--llm", dead]).stdout)
    assert shown["chosen_sql"].startswith("SELECT COUNT") and len(shown["notes"]) == 1
    assert shown["notes"][0].startswith("LLM unreachable or unusable") and dead in shown["notes"][0]
    released = CliRunner().invoke(app, ["ask", DEMO_QUESTION, "--db", str(hospital), *BASE, "--yes", "--llm", dead])
    assert released.exit_code == 0, released.output
    assert "note: LLM unreachable" in released.stderr
