"""Issue 27 (RQ4 with the extracted policy): the generic shapes behind the extracted policy's leaks,
on a scratch school schema (none of the demo domains' words).

* a prohibited column of a code list ("a student's disability status" -> SupportPlan.disabilitystatus,
  a table the subject's rows only reference) prohibits the code list's key too, so that information
  implication carries it to the subject's references (Student.plan_code): before, only the column was
  prohibited and the student's plan code, which names the row, stayed visible where no functional
  dependency was declared;
* a prohibition whose data names nothing in the schema is a review question (before: left out
  silently, so the policy permitted what the text forbids);
* "demographics" does not take the subject's identifier (before: Student.student_id, which the text
  does not name, came with a permit of demographics).
"""

from __future__ import annotations

import duckdb
import pytest

from pimento.engines.database import load_database
from pimento.policy import compile_policy
from pimento.policy.extract_offline import extract_policy_offline
from pimento.policy.model import policy_from_dict
from pimento.policy.review import apply_review, confirm_all, open_questions

SCHEMA = """
CREATE TABLE Teacher (teacher_id INTEGER PRIMARY KEY, name VARCHAR);
CREATE TABLE SupportPlan (plan_code VARCHAR PRIMARY KEY, title VARCHAR, disabilitystatus VARCHAR);
CREATE TABLE Student (student_id INTEGER PRIMARY KEY, name VARCHAR, birth_year INTEGER, zip3 VARCHAR,
                      plan_code VARCHAR REFERENCES SupportPlan(plan_code));
INSERT INTO Teacher VALUES (1, 'Ada');
INSERT INTO SupportPlan VALUES ('P1', 'reading support', 'none'), ('P2', 'hearing support', 'hearing');
INSERT INTO Student VALUES (10, 'Bo', 2012, '021', 'P1'), (11, 'Cy', 2013, '022', 'P2');
"""

TEXT = """S1. A school may disclose a student's name, plan code and demographics to a teacher for instruction.
S2. A school shall not disclose a student's disability status.
S3. A school shall not use a student's religious beliefs for fundraising.
"""


@pytest.fixture(scope="module")
def school(tmp_path_factory):
    path = tmp_path_factory.mktemp("leak") / "school.duckdb"
    con = duckdb.connect(str(path))
    con.execute(SCHEMA)
    con.close()
    db = load_database(path)
    try:
        yield db, extract_policy_offline(TEXT, db.catalog, engine=db.engine, year=2024)
    finally:
        db.close()


def _columns(doc, nid):
    norm = next(n for n in doc["norms"] if n["id"] == nid)
    return {f"{loc['relation']}.{loc['attribute']}" for d in norm["data"]
            for loc in doc["grounding"]["data_types"][d]["locations"]}


def test_a_prohibited_code_list_column_prohibits_its_key(school):
    db, result = school
    assert _columns(result.policy, "S2") == {"SupportPlan.disabilitystatus", "SupportPlan.plan_code"}
    compiled = compile_policy(policy_from_dict(result.policy), db.catalog, db.engine)
    implied = {item["location"] for item in compiled.implication if item["norm"] == "S2"}
    assert "Student.plan_code" in implied  # the student's plan code is withheld where S2 applies


def test_a_prohibition_that_grounds_nothing_is_held_not_lost(school):
    _db, result = school
    assert all(n["id"] != "S3" for n in result.policy["norms"])
    assert not any(f["clause"] == "S3" for f in result.failures)
    (held,) = [h for h in result.questions if h["clause"] == "S3"]
    assert held["norm"]["sign"] == "deny"
    assert [(q["kind"], q["proposal"]) for q in held["questions"]] == [("data", None)]
    draft = result.draft()
    assert any(q["clause"] == "S3" for q in open_questions(draft))
    # the custodian grounds it: the prohibition is enforced; confirm-all (no proposal) drops it as before
    answers = {**confirm_all(draft), held["questions"][0]["id"]: {"edit": ["Student.zip3"]}}
    reviewed = apply_review(draft, answers)
    assert _columns(reviewed, "S3") == {"Student.zip3"}
    assert all(n["id"] != "S3" for n in apply_review(draft, confirm_all(draft))["norms"])


def test_demographics_take_no_identifier(school):
    _db, result = school
    # the lexicon's category columns are weak evidence (POLICY10): proposed, enforced once confirmed
    assert all(n["id"] != "S1" for n in result.policy["norms"])
    assert {q["evidence"] for q in open_questions(result.draft()) if q["clause"] == "S1" and q["kind"] == "data"} \
        <= {"category_columns", "column_spelled+category", "column_partial+category"}
    confirmed = apply_review(result.draft(), confirm_all(result.draft()))
    assert _columns(confirmed, "S1") == {"Student.name", "Student.plan_code", "Student.birth_year", "Student.zip3"}


def test_a_declared_phrase_keeps_exactly_its_columns(school):
    db, _result = school
    declared = extract_policy_offline(TEXT, db.catalog, engine=db.engine, year=2024,
                                      vocabulary={"disability status": ["SupportPlan.disabilitystatus"]})
    assert _columns(declared.policy, "S2") == {"SupportPlan.disabilitystatus"}
