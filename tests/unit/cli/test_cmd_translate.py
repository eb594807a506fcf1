"""`pimento translate`: JSON candidates, JSON lines for --questions, refusals, LLM fallback."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from pimento.cli import cmd_translate
from pimento.engines import open_engine


@pytest.fixture(scope="module")
def app():
    application = typer.Typer()
    cmd_translate.register(application)

    @application.callback()
    def _root() -> None:
        pass

    return application


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("translate") / "pets.duckdb"
    engine = open_engine(str(path), read_only=False)
    engine.execute("CREATE TABLE pets (pet_id INTEGER PRIMARY KEY, pet_type TEXT, weight DOUBLE)")
    engine.execute("INSERT INTO pets VALUES (1, 'dog', 12.0), (2, 'cat', 3.0), (3, 'dog', 4.0)")
    engine.close()
    return str(path)


def test_json_candidates_with_zero_llm_usage(app, db):
    result = CliRunner().invoke(app, ["translate", "--db", db, "--synthetic", db, "How many dog pets are there?", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout[result.stdout.index("{") :])
    assert payload["source"] == "offline" and payload["usage"]["calls"] == 0
    assert "'dog'" in payload["candidates"][0]["sql"]


def test_questions_file_prints_one_json_object_per_line(app, db, tmp_path):
    questions = tmp_path / "q.txt"
    questions.write_text("How many pets weigh more than 5?\nList the pets\n")
    result = CliRunner().invoke(app, ["translate", "--db", db, "--questions", str(questions)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 2
    assert "> 5" in lines[0]["candidates"][0]["sql"]
    assert lines[1]["error"]["reason"] == "list"


def test_private_values_need_a_flag_and_warn(app, db):
    plain = CliRunner().invoke(app, ["translate", "--db", db, "How many dog pets are there?", "--json"])
    assert "'dog'" not in plain.stdout
    allowed = CliRunner().invoke(app, ["translate", "--db", db, "--allow-private-values", "How many dog pets are there?", "--json"])
    assert "PRIVATE" in allowed.output and "'dog'" in allowed.stdout


def test_non_counting_question_is_one_clear_line(app, db):
    result = CliRunner().invoke(app, ["translate", "--db", db, "What is the average weight of pets?"])
    assert result.exit_code == 2
    assert "average" in result.output and "Traceback" not in result.output


def test_unreachable_llm_falls_back_to_offline(app, db):
    result = CliRunner().invoke(
        app, ["translate", "--db", db, "--llm", "http://127.0.0.1:9/v1", "How many pets are there?", "--json"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout[result.stdout.index("{") :])
    assert payload["source"] == "offline"
    assert "fell back to the offline parser" in payload["fallback"]
