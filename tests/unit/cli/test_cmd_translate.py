"""`pimento translate`: JSON candidates, JSON lines for --questions, refusals, LLM fallback."""

from __future__ import annotations

import json

import pytest
from cli_support import command_app
from typer.testing import CliRunner

from pimento.cli import cmd_translate
from pimento.engines import open_engine


@pytest.fixture(scope="module")
def app():
    return command_app(cmd_translate)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("translate") / "pets.duckdb"
    engine = open_engine(str(path), read_only=False)
    engine.execute("CREATE TABLE pets (pet_id INTEGER PRIMARY KEY, pet_type TEXT, weight DOUBLE)")
    engine.execute("INSERT INTO pets VALUES (1, 'dog', 12.0), (2, 'cat', 3.0), (3, 'dog', 4.0)")
    engine.close()
    return str(path)


@pytest.fixture(scope="module")
def synthetic(db, tmp_path_factory):
    """A stand-in for `pimento synth`'s copy of the pets database: same schema, marker, charged to its ledger."""
    import shutil
    import uuid

    from pimento.engines.database import load_database
    from pimento.mechanisms import Budget, Ledger
    from pimento.mechanisms.ledger import database_key

    path = tmp_path_factory.mktemp("syn") / "pets.synthetic.duckdb"
    shutil.copy(db, path)
    database = load_database(db)
    location = str(database.location)
    copy_id = f"standin-{uuid.uuid4()}"
    engine = open_engine(str(path), read_only=False)
    engine.execute("CREATE TABLE _pimento_synth_meta (epsilon VARCHAR, delta VARCHAR, root VARCHAR, copy_id VARCHAR, database_key VARCHAR, details VARCHAR)")
    engine.execute("INSERT INTO _pimento_synth_meta VALUES ('1', '0.000001', 'pets', ?, ?, '{}')", [copy_id, database_key(location)])
    engine.close()
    with Ledger.for_database(location, database.settings) as ledger:
        ledger.charge_synthetic(location, Budget.of("1", "0.000001"), copy_id=copy_id)
    database.close()
    return str(path)


def test_values_come_only_from_this_databases_charged_copy(app, db):
    """--synthetic naming any other file (here the private database itself) is refused: its values are private."""
    result = CliRunner().invoke(app, ["translate", "--db", db, "--synthetic", db, "How many dog pets are there?", "--json"])
    assert result.exit_code == 2, result.output
    assert "'dog'" not in result.stdout


def test_json_candidates_with_zero_llm_usage(app, db, synthetic):
    result = CliRunner().invoke(app, ["translate", "--db", db, "--synthetic", synthetic, "How many dog pets are there?", "--json"])
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
    # the question's own words may be placed by open value linking ("dog pets" -> 'Dog', public
    # input); a value read from the private database shows as an index hit ("exact match")
    assert "exact match" not in plain.stdout
    allowed = CliRunner().invoke(app, ["translate", "--db", db, "--allow-private-values", "How many dog pets are there?", "--json"])
    assert "PRIVATE" in allowed.output and "'dog'" in allowed.stdout and "exact match" in allowed.stdout
    from pimento.engines.database import load_database
    from pimento.mechanisms import Ledger

    database = load_database(db)
    with Ledger.for_database(str(database.location), database.settings) as ledger:
        assert any(r.get("tool") == "translate --allow-private-values" for r in ledger.audit_rows())
    database.close()


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
