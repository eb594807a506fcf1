"""`pimento translate --kind aggregate`: grouped COUNT, SUM and AVG candidates, offline and from the LLM."""

from __future__ import annotations

import json

import pytest
from cli_support import command_app
from typer.testing import CliRunner

from pimento.cli import _common, cmd_translate
from pimento.engines import open_engine

PER_TYPE = "How many pets are there per pet type?"


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_common.console, "width", 200)


@pytest.fixture(scope="module")
def app():
    return command_app(cmd_translate)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("translate_aggregate") / "pets.duckdb"
    engine = open_engine(str(path), read_only=False)
    engine.execute("CREATE TABLE pets (pet_id INTEGER PRIMARY KEY, pet_type TEXT, weight DOUBLE)")
    engine.execute("INSERT INTO pets VALUES (1, 'dog', 12.0), (2, 'cat', 3.0), (3, 'dog', 4.0)")
    engine.close()
    return str(path)


def _json(stdout: str) -> dict:
    return json.loads(stdout[stdout.index("{") :])


def _record(db: str, directory, question: str, answers: list[str]) -> str:
    """A replay fixture holding ``answers`` to the aggregate prompt `translate` sends for ``question``."""
    from pimento.engines.database import load_database
    from pimento.llm import ChatRequest, ChatResponse, Completion, RecordingBackend, ReplayBackend, SyntheticValues
    from pimento.llm.prompts import AggregateSqlAnswer, zero_shot_messages

    database = load_database(db)
    try:
        messages = zero_shot_messages(database.catalog, question, values=SyntheticValues.none(), aggregate=True)
    finally:
        database.close()
    request = ChatRequest(
        messages, n=len(answers), temperature=0.7, max_tokens=256,
        json_schema=AggregateSqlAnswer.model_json_schema(), schema_name="AggregateSqlAnswer",
    )
    inner = ReplayBackend()
    inner.add(request, ChatResponse(tuple(Completion(a) for a in answers), prompt_tokens=300, completion_tokens=40))
    RecordingBackend(inner, directory).complete(request)
    return f"replay:{directory}"


def test_grouped_count_candidates_as_json(app, db):
    result = CliRunner().invoke(app, ["translate", "--db", db, "--kind", "aggregate", PER_TYPE, "--json"])
    assert result.exit_code == 0, result.output
    payload = _json(result.stdout)
    assert payload["kind"] == "aggregate" and payload["source"] == "offline" and payload["usage"]["calls"] == 0
    top = payload["candidates"][0]
    assert top["rank"] == 1 and top["kind"] == "count"
    assert top["sql"] == "SELECT pets.pet_type, COUNT(*) FROM pets GROUP BY pets.pet_type"
    assert any("pet type" in line for line in top["explanation"])


def test_average_in_the_table_with_its_explanation(app, db):
    result = CliRunner().invoke(app, ["translate", "--db", db, "--kind", "aggregate", "What is the average weight of pets?"])
    assert result.exit_code == 0, result.output
    assert "SELECT AVG(pets.weight) FROM pets" in result.stdout
    assert "AVG reading" in result.stdout and "[offline; values: none]" in result.stdout


def test_questions_file_with_a_plain_count_among_them(app, db, tmp_path):
    questions = tmp_path / "q.txt"
    questions.write_text("What is the total weight of pets?\nHow many pets are there?\n")
    result = CliRunner().invoke(app, ["translate", "--db", db, "--kind", "aggregate", "--questions", str(questions)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [line["kind"] for line in lines] == ["aggregate", "aggregate"]
    assert lines[0]["candidates"][0]["sql"] == "SELECT SUM(pets.weight) FROM pets"
    assert lines[0]["candidates"][0]["kind"] == "sum"
    assert lines[1]["candidates"] == []  # a plain count has no grouped or summed reading


def test_no_reading_says_to_use_the_count_kind(app, db):
    result = CliRunner().invoke(app, ["translate", "--db", db, "--kind", "aggregate", "How many pets are there?"])
    assert result.exit_code == 0, result.output
    assert "use --kind count" in result.stdout


def test_llm_aggregate_candidates_ranked_by_agreement(app, db, tmp_path):
    grouped = json.dumps({"sql": "SELECT pet_type, COUNT(*) FROM pets GROUP BY pet_type"})
    url = _record(db, tmp_path / "llm", PER_TYPE, [grouped, grouped, json.dumps({"sql": "SELECT MAX(weight) FROM pets"})])
    result = CliRunner().invoke(app, ["translate", "--db", db, "--kind", "aggregate", "--llm", url, "--k", "3", PER_TYPE, "--json"])
    assert result.exit_code == 0, result.output
    payload = _json(result.stdout)
    assert payload["source"] == "llm" and payload["fallback"] is None and payload["usage"]["calls"] == 1
    assert payload["candidates"] == [
        {
            "rank": 1,
            "sql": "SELECT pets.pet_type, COUNT(*) FROM pets GROUP BY pets.pet_type",
            "score": round(2 / 3, 4),
            "explanation": ["2 of 3 samples"],
            "kind": "count",
        }
    ]


def test_llm_answers_outside_the_class_fall_back_to_the_offline_readings(app, db, tmp_path):
    bad = [
        json.dumps({"sql": "SELECT pet_type, COUNT(*) FROM pets GROUP BY pet_type HAVING COUNT(*) > 1"}),
        json.dumps({"sql": "SELECT MAX(weight) FROM pets"}),
    ]
    url = _record(db, tmp_path / "llm", PER_TYPE, bad)
    result = CliRunner().invoke(app, ["translate", "--db", db, "--kind", "aggregate", "--llm", url, "--k", "2", PER_TYPE, "--json"])
    assert result.exit_code == 0, result.output
    payload = _json(result.stdout)
    assert payload["source"] == "offline"
    assert payload["fallback"] == (
        "the LLM returned no usable aggregate SQL (1 unsupported:having, 1 unsupported:other_aggregate); "
        "fell back to the offline parser"
    )
    assert payload["candidates"][0]["sql"] == "SELECT pets.pet_type, COUNT(*) FROM pets GROUP BY pets.pet_type"


def test_unknown_kind_names_the_choices(app, db):
    result = CliRunner().invoke(app, ["translate", "--db", db, "--kind", "histogram", PER_TYPE])
    assert result.exit_code == 2
    assert "'aggregate'" in result.output and "Traceback" not in result.output
