"""Issue 27: the offline extractor fails narrow, never broad; the custodian's review step.

A school-like schema written for these tests (not a shipped demo): a vague data phrase
("a learner's records") names no column and must become a review question, not every column about
the student; a declared vocabulary grounds it; a condition no table grounds holds the permit
out of the policy (not enforced) until the custodian edits or drops it; compile refuses a draft
with open questions.
"""

from __future__ import annotations

import json

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from pimento.cli.app import app
from pimento.engines.database import load_database
from pimento.errors import PolicyError
from pimento.policy.extract_offline import extract_policy_offline
from pimento.policy.review import apply_review, confirm_all, open_questions, require_reviewed

runner = CliRunner()

_SCHOOL = [
    "CREATE TABLE Learner (learner_id INTEGER PRIMARY KEY, name VARCHAR, email VARCHAR, birth_year INTEGER)",
    "CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, job VARCHAR)",
    "CREATE TABLE Mark (mark_id INTEGER PRIMARY KEY, learner_id INTEGER REFERENCES Learner(learner_id), "
    "course VARCHAR, score INTEGER)",
    "CREATE TABLE Absence (absence_id INTEGER PRIMARY KEY, learner_id INTEGER REFERENCES Learner(learner_id), "
    "day DATE)",
    "INSERT INTO Learner VALUES (1, 'A', 'a@x', 2010), (2, 'B', 'b@x', 2011)",
    "INSERT INTO Staff VALUES (1, 'counselor'), (2, 'nurse'), (3, 'coach')",
    "INSERT INTO Mark VALUES (1, 1, 'math', 90), (2, 2, 'art', 70)",
    "INSERT INTO Absence VALUES (1, 1, DATE '2024-01-02')",
]
_TEXT = (
    "K1. A nurse may access a learner's email for treatment.\n"
    "K2. A counselor may access a learner's records for counseling.\n"
    "K3. A coach may view a learner's score for coaching if the coach mentors the learner.\n"
)


@pytest.fixture(scope="module")
def school(tmp_path_factory):
    path = tmp_path_factory.mktemp("review") / "school.duckdb"
    con = duckdb.connect(str(path))
    for sql in _SCHOOL:
        con.execute(sql)
    con.close()
    return path


def _extract(path, text=_TEXT, **kw):
    db = load_database(path)
    try:
        return extract_policy_offline(text, db.catalog, engine=db.engine, year=2024, **kw)
    finally:
        db.close()


def _columns(doc, norm_id):
    g = doc["grounding"]
    norm = next(n for n in doc["norms"] if n["id"] == norm_id)
    return {(loc["relation"], loc["attribute"]) for d in norm["data"] for loc in g["data_types"][d]["locations"]}


def test_a_vague_data_phrase_is_a_question_not_every_column(school) -> None:
    result = _extract(school)
    ids = {n["id"] for n in result.policy["norms"]}
    assert "K1" in ids and _columns(result.policy, "K1") == {("Learner", "email")}
    assert "K2" not in ids  # held: no column named "academic record", no whole-table permit
    enforced = {t for n in result.policy["norms"] for t, _ in _columns(result.policy, n["id"])}
    assert enforced == {"Learner"}  # neither Mark nor Absence is permitted by anything
    q = next(q for q in open_questions(result.draft()) if q["clause"] == "K2")
    assert q["kind"] == "data" and q["phrase"].endswith("records") and "every column" in q["reason"]
    assert {(x["relation"], x["attribute"]) for x in q["proposal"]} >= {("Mark", "score"), ("Absence", "day")}


def test_a_declared_vocabulary_grounds_the_phrase_to_its_columns(school) -> None:
    result = _extract(school, vocabulary={"records": ["Mark.course", "Mark.score"]})
    assert _columns(result.policy, "K2") == {("Mark", "course"), ("Mark", "score")}
    assert not [q for q in open_questions(result.draft()) if q["clause"] == "K2"]
    with pytest.raises(PolicyError, match="unknown column"):
        _extract(school, vocabulary={"records": ["Mark.gpa"]})


def test_an_ungrounded_condition_holds_the_permit_out_fail_closed(school) -> None:
    result = _extract(school)
    assert "K3" not in {n["id"] for n in result.policy["norms"]}  # never enforced without its condition
    q = next(q for q in open_questions(result.draft()) if q["clause"] == "K3")
    assert q["kind"] == "condition" and "mentor" in q["phrase"] and q["proposal"] is None


def test_review_confirm_edit_drop(school) -> None:
    draft = _extract(school).draft()
    qs = {q["clause"]: q["id"] for q in open_questions(draft)}
    # a condition dropped drops its permit; a data phrase edited gets exactly the given columns
    doc = apply_review(draft, {qs["K2"]: {"edit": ["Mark.score"]}, qs["K3"]: "drop"})
    assert "review" not in doc and _columns(doc, "K2") == {("Mark", "score")}
    assert "K3" not in {n["id"] for n in doc["norms"]}
    # a condition edited with SQL is added to the permit's conditions
    sql = "SELECT staff_id AS recipient, learner_id AS subject FROM Staff, Learner WHERE staff_id = learner_id"
    doc = apply_review(draft, {qs["K2"]: "drop", qs["K3"]: {"edit": sql}})
    k3 = next(n for n in doc["norms"] if n["id"] == "K3")
    assert "K2" not in {n["id"] for n in doc["norms"]}
    assert doc["grounding"]["conditions"][k3["condition"]]["sql"] == sql
    assert doc["grounding"]["conditions"][k3["condition"]]["principals"] == {"recipient": "staff"}
    with pytest.raises(PolicyError, match="unanswered"):
        apply_review(draft, {qs["K2"]: "drop"})
    with pytest.raises(PolicyError, match="no proposal"):
        apply_review(draft, {qs["K2"]: "drop", qs["K3"]: "confirm"})
    assert confirm_all(draft) == {qs["K2"]: "confirm", qs["K3"]: "drop"}


def test_compile_refuses_a_draft_with_open_questions(school, tmp_path) -> None:
    draft_path, reviewed_path = tmp_path / "draft.yaml", tmp_path / "reviewed.yaml"
    text = tmp_path / "policy.txt"
    text.write_text(_TEXT, encoding="utf-8")
    res = runner.invoke(app, ["policy", "extract", str(text), "--db", str(school), "--out", str(draft_path)])
    assert res.exit_code == 0, res.output
    draft = yaml.safe_load(draft_path.read_text(encoding="utf-8"))
    with pytest.raises(PolicyError, match="open question"):
        require_reviewed(draft)
    res = runner.invoke(app, ["policy", "compile", str(draft_path), "--db", str(school), "--quiet"])
    assert res.exit_code != 0 and "open question" in res.output
    res = runner.invoke(app, ["policy", "compile", str(draft_path), "--db", str(school), "--quiet",
                              "--drop-open-questions", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output[res.output.index("{"):])["norms"] == 1  # only K1, extracted without doubt
    # the non-interactive review writes a policy that compiles
    answers = tmp_path / "answers.json"
    qs = {q["clause"]: q["id"] for q in open_questions(draft)}
    answers.write_text(json.dumps({qs["K2"]: {"edit": ["Mark.score"]}, qs["K3"]: "drop"}), encoding="utf-8")
    res = runner.invoke(app, ["policy", "extract", str(text), "--db", str(school), "--out", str(reviewed_path),
                              "--review-file", str(answers)])
    assert res.exit_code == 0, res.output
    reviewed = yaml.safe_load(reviewed_path.read_text(encoding="utf-8"))
    assert "review" not in reviewed and [n["id"] for n in reviewed["norms"]] == ["K1", "K2"]
    res = runner.invoke(app, ["policy", "compile", str(reviewed_path), "--db", str(school), "--quiet", "--json"])
    assert res.exit_code == 0, res.output


def test_interactive_review_asks_each_question(school, tmp_path) -> None:
    text, out = tmp_path / "policy.txt", tmp_path / "reviewed.yaml"
    text.write_text(_TEXT, encoding="utf-8")
    # K2 (data, with a proposal): edit to one column; K3 (condition, no proposal): 'confirm' is not offered
    res = runner.invoke(app, ["policy", "extract", str(text), "--db", str(school), "--out", str(out), "--review"],
                        input="edit\nMark.score\nconfirm\ndrop\n")
    assert res.exit_code == 0, res.output
    assert "proposal: " in res.output and "one of edit/drop" in res.output
    reviewed = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert [n["id"] for n in reviewed["norms"]] == ["K1", "K2"] and _columns(reviewed, "K2") == {("Mark", "score")}


def test_a_draft_with_open_questions_is_refused_by_name_when_loaded():
    import pytest as _pytest

    from pimento.errors import PolicyError
    from pimento.policy.model import policy_from_dict

    with _pytest.raises(PolicyError, match=r"extracted draft with 1 open question.*--review"):
        policy_from_dict({"name": "draft", "grounding": {}, "norms": [], "review": [{"norm": "p1", "question": "which columns?"}]})
