"""Issue 27 (POLICY10): a draft's permit is enforced only where each of its data phrases is grounded by strong
evidence; weaker grounding becomes a review question with the extractor's proposal (``confirm`` recovers it).

Every data grounding carries an **evidence kind** (:data:`pimento.policy.extract_offline.ground.EVIDENCE`), in the
draft's review metadata (a data question's ``evidence``; an enforced data type's ``description``) and in
:attr:`Extraction.evidence`. Strong (:data:`pimento.policy.extract_offline.STRONG`): the phrase spells the column's
name, names a table word for word, is declared or defined. Weak: a table named in part or by a synonym, a column
sharing one word or a stem, the lexicon's category columns, a column named only in part after a table named word
for word. A prohibition is enforced on any grounding (it denies more: fail closed). Tested on a scratch gym schema
(no name of it is in a development text).
"""

from __future__ import annotations

from pathlib import Path

from dev_policy_support import extract_on
from pimento.policy.extract_offline import STRONG
from pimento.policy.extract_offline.ground import EVIDENCE
from pimento.policy.review import apply_review, confirm_all

SCHEMA = """
CREATE TABLE Coach (coach_id INTEGER PRIMARY KEY, name VARCHAR, specialty VARCHAR);
CREATE TABLE Member (member_id INTEGER PRIMARY KEY, full_name VARCHAR, phone VARCHAR, shoe_size_eu INTEGER,
    coach_id INTEGER REFERENCES Coach(coach_id));
CREATE TABLE MembershipPlan (plan_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    tier VARCHAR, monthly_fee INTEGER);
CREATE TABLE LockerAssignment (locker_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    zone VARCHAR);
CREATE TABLE Workout (workout_id INTEGER PRIMARY KEY, member_id INTEGER REFERENCES Member(member_id),
    session_time TIMESTAMP, kind VARCHAR);
INSERT INTO Coach VALUES (1, 'C1', 'strength'), (2, 'C2', 'yoga'), (3, 'C3', 'reception');
INSERT INTO Member VALUES (1, 'M1', '0700-1', 42, 1), (2, 'M2', '0700-2', 38, 2);
INSERT INTO MembershipPlan VALUES (1, 1, 'gold', 50), (2, 2, 'basic', 20);
INSERT INTO LockerAssignment VALUES (1, 1, 'north');
INSERT INTO Workout VALUES (1, 1, TIMESTAMP '2024-01-01 10:00', 'weights');
"""


def _extract(tmp_path: Path, text: str):
    return extract_on(tmp_path / "gym.duckdb", SCHEMA, text)


def _held(result, clause: str) -> list[dict]:
    return [q for h in result.questions if h["clause"] == clause for q in h["questions"] if q["kind"] == "data"]


def _enforced(result) -> set[str]:
    return {n["id"] for n in result.policy["norms"]}


def test_a_table_named_in_part_is_proposed_not_enforced(tmp_path):
    """``membership details`` names MembershipPlan only in part: before, the whole table was enforced."""
    r = _extract(tmp_path, "R1. A strength coach may view the membership details of a member.\n")
    assert "R1" not in _enforced(r)
    (q,) = _held(r, "R1")
    assert q["evidence"] == "table_partial"
    assert {(p["relation"], p["attribute"]) for p in q["proposal"]} == {
        ("MembershipPlan", c) for c in ("plan_id", "member_id", "tier", "monthly_fee")}
    assert "weakly" in q["reason"]
    reviewed = apply_review(r.draft(), confirm_all(r.draft()))  # confirm recovers the proposal
    assert [n["id"] for n in reviewed["norms"]] == ["R1"]


def test_a_column_sharing_one_word_is_proposed_not_enforced(tmp_path):
    """``shoe size`` shares words with shoe_size_eu but does not spell it."""
    r = _extract(tmp_path, "R1. A yoga coach may view the shoe size of a member.\n")
    assert "R1" not in _enforced(r)
    (q,) = _held(r, "R1")
    assert q["evidence"] == "column_partial"
    assert [(p["relation"], p["attribute"]) for p in q["proposal"]] == [("Member", "shoe_size_eu")]


def test_a_column_named_in_part_after_its_table_is_proposed(tmp_path):
    """``workout times``: Workout named word for word, ``times`` only part of session_time."""
    r = _extract(tmp_path, "R1. A strength coach may view the workout times of a member.\n")
    assert "R1" not in _enforced(r)
    (q,) = _held(r, "R1")
    assert q["evidence"] == "table_columns_partial"


def test_strong_evidence_is_enforced_and_recorded(tmp_path):
    """A spelled column and a table named word for word are enforced; the evidence is in the data type."""
    r = _extract(tmp_path, "R1. A strength coach may view the phone of a member.\n"
                           "R2. A yoga coach may view the locker assignments of a member.\n")
    assert _enforced(r) == {"R1", "R2"}
    kinds = {d.get("description") for d in r.policy["grounding"]["data_types"].values()}
    assert kinds == {"evidence: column_spelled", "evidence: table_literal"}
    assert [(e["clause"], e["evidence"]) for e in r.evidence] == [("R1", "column_spelled"), ("R2", "table_literal")]


def test_a_prohibition_stays_enforced_on_weak_evidence(tmp_path):
    """Fail closed: ``membership details`` denied is enforced as grounded (the whole table: denies more)."""
    r = _extract(tmp_path, "R1. A strength coach may view the phone of a member.\n"
                           "R2. A yoga coach shall not view the membership details of a member.\n")
    assert _enforced(r) == {"R1", "R2"}
    assert [e["evidence"] for e in r.evidence if e["clause"] == "R2"] == ["table_partial"]


def test_every_evidence_kind_is_strong_or_explained():
    assert STRONG <= set(EVIDENCE)
    assert {"table_partial", "column_partial", "category_columns", "table_columns_partial"}.isdisjoint(STRONG)


def test_a_faq_provision_is_its_answer(tmp_path):
    """A question-and-answer notice (``Q2. Do coaches see ...? No. Coaches must not ...``): the question states no
    norm (before: ``Can the yoga coaches see ...?`` was read as a permit), the answer is the provision."""
    from pimento.policy.extract_offline.shapes import split_sentences

    text = ("Q1. Who sees my phone? Strength coaches may see your phone.\n"
            "Q2. Can the yoga coaches see my locker assignments?\nNo. Yoga coaches must not see locker assignments.\n"
            "Q3. I train twice a week. What does my coach get? Strength coaches may see your workouts.\n")
    assert [(s.id, s.text) for s in split_sentences(text)] == [
        ("Q1", "Strength coaches may see your phone."), ("Q2", "Yoga coaches must not see locker assignments."),
        ("Q3", "Strength coaches may see your workouts.")]
    r = _extract(tmp_path, text)
    assert {n["id"]: n["sign"] for n in r.policy["norms"]} == {"Q1": "permit", "Q2": "deny", "Q3": "permit"}
