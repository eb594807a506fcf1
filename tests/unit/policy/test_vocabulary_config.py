"""Issue 27: the declared vocabulary in pimento.toml (``[vocabulary]``), merged with ``--vocabulary``.

The school schema of test_extract_review.py: "a learner's records" names no column, so without a
declaration K2 is held as a question; declared in pimento.toml it is grounded to exactly the declared
columns; the --vocabulary file wins for a phrase both declare; a column the schema lacks is an error
naming the file and the phrase.
"""

from __future__ import annotations

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from pimento.cli.app import app
from pimento.config import settings_from_dict
from pimento.errors import ConfigError
from pimento.policy.vocabulary import merge_vocabularies, phrase_key

runner = CliRunner()

_SCHOOL = [
    "CREATE TABLE Learner (learner_id INTEGER PRIMARY KEY, name VARCHAR, email VARCHAR, birth_year INTEGER)",
    "CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, job VARCHAR)",
    "CREATE TABLE Mark (mark_id INTEGER PRIMARY KEY, learner_id INTEGER REFERENCES Learner(learner_id), "
    "course VARCHAR, score INTEGER)",
    "INSERT INTO Learner VALUES (1, 'A', 'a@x', 2010), (2, 'B', 'b@x', 2011)",
    "INSERT INTO Staff VALUES (1, 'counselor'), (2, 'nurse')",
    "INSERT INTO Mark VALUES (1, 1, 'math', 90), (2, 2, 'art', 70)",
]
_TEXT = ("K1. A nurse may access a learner's email for treatment.\n"
         "K2. A counselor may access a learner's records for counseling.\n")


def _school(folder, toml: str):
    con = duckdb.connect(str(folder / "school.duckdb"))
    for sql in _SCHOOL:
        con.execute(sql)
    con.close()
    (folder / "pimento.toml").write_text(toml, encoding="utf-8")
    (folder / "policy.txt").write_text(_TEXT, encoding="utf-8")
    return folder / "school.duckdb"


def _extract(folder, *extra):
    out = folder / "out.yaml"
    res = runner.invoke(app, ["policy", "extract", str(folder / "policy.txt"), "--db", str(folder / "school.duckdb"),
                              "--out", str(out), *extra])
    return res, (yaml.safe_load(out.read_text(encoding="utf-8")) if res.exit_code == 0 else None)


def _columns(doc, norm_id):
    g = doc["grounding"]
    norm = next(n for n in doc["norms"] if n["id"] == norm_id)
    return {(loc["relation"], loc["attribute"]) for d in norm["data"] for loc in g["data_types"][d]["locations"]}


def test_the_vocabulary_table_is_read_and_its_shape_checked() -> None:
    s = settings_from_dict({"vocabulary": {"academic record": ["Grade.score", "Enrollment.course_id"]}})
    assert s.vocabulary == {"academic record": ["Grade.score", "Enrollment.course_id"]}
    for bad, words in (({"x": []}, "non-empty list"), ({"x": ["Grade"]}, "'Grade' is not"),
                       ({"x": "Grade.score"}, "non-empty list"), ({"x": [3]}, "non-empty list")):
        with pytest.raises(ConfigError, match=f"site/pimento.toml: vocabulary: 'x': .*{words}"):
            settings_from_dict({"vocabulary": bad}, source="site/pimento.toml")


def test_pimento_toml_vocabulary_grounds_the_phrase_exactly(tmp_path) -> None:
    _school(tmp_path, '[vocabulary]\n"records" = ["Mark.score"]\n')
    res, doc = _extract(tmp_path)
    assert res.exit_code == 0, res.output
    assert "review" not in doc and _columns(doc, "K2") == {("Mark", "score")}


def test_without_a_declaration_the_phrase_stays_a_question(tmp_path) -> None:
    _school(tmp_path, "")
    res, doc = _extract(tmp_path)
    assert res.exit_code == 0 and "K2" not in {n["id"] for n in doc["norms"]} and doc["review"]


def test_an_unknown_column_names_the_file_and_the_phrase(tmp_path) -> None:
    _school(tmp_path, '[vocabulary]\n"records" = ["Mark.gpa"]\n')
    res, _ = _extract(tmp_path)
    assert res.exit_code != 0
    text = " ".join(res.output.split())
    assert "pimento.toml: [vocabulary] 'records': unknown column 'Mark.gpa'" in text


def test_the_vocabulary_file_wins_for_a_phrase_both_declare_and_both_merge(tmp_path) -> None:
    _school(tmp_path, '[vocabulary]\n"records" = ["Mark.score"]\n"contact details" = ["Learner.email"]\n')
    flag = tmp_path / "vocab.yaml"
    flag.write_text("a learner's Records: [Mark.course]\n", encoding="utf-8")
    res, doc = _extract(tmp_path, "--vocabulary", str(flag))
    assert res.exit_code == 0, res.output
    assert _columns(doc, "K2") == {("Mark", "course")}
    merged = merge_vocabularies({"records": ["Mark.score"], "contact details": ["Learner.email"]},
                                {"a learner's Records": ["Mark.course"]})
    assert merged == {"contact details": ["Learner.email"], "a learner's Records": ["Mark.course"]}
    assert phrase_key("the learner's Records") == phrase_key("records") == "records"
    assert merge_vocabularies({}, None) is None
