"""Issue 27 (POLICY11): a data phrase is grounded through the schema's own words, its column and table COMMENTS.

Where the names give no strong evidence, a column whose comment spells the phrase
(:func:`pimento.policy.extract_offline.ground.comment_spells`: every content word of the phrase in the comment, or
every word of the comment in the phrase, at least two words shared or the same one word) is the phrase's column:
evidence ``comment_spelled``, strong (a permit is enforced in the draft). A table whose comment spells the phrase is
the whole table: ``table_comment`` (strong) when the comment names the whole phrase, ``table_comment_partial`` (a
question) when the phrase names only the comment. A comment sharing one word only grounds nothing. A prohibition
adds the comment's columns to what the names found (fail closed). Without comments nothing changes. A scratch
tutoring schema with terse legacy names (no name of it is in a development text).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dev_policy_support import extract_on
from pimento.policy.extract_offline import STRONG
from pimento.policy.extract_offline.ground import EVIDENCE, comment_spells

SCHEMA = """
CREATE TABLE Tutor (tutor_id INTEGER PRIMARY KEY, name VARCHAR, area VARCHAR);
CREATE TABLE Pupil (pupil_id INTEGER PRIMARY KEY, nm VARCHAR, tel VARCHAR, email VARCHAR, med_flg VARCHAR,
    tutor_id INTEGER REFERENCES Tutor(tutor_id));
COMMENT ON COLUMN Pupil.tel IS 'Home telephone number of the family (contact details)';
COMMENT ON COLUMN Pupil.med_flg IS 'Allergy and medical alert';
CREATE TABLE Sess (sess_id INTEGER PRIMARY KEY, pupil_id INTEGER REFERENCES Pupil(pupil_id), started TIMESTAMP,
    mins INTEGER);
COMMENT ON TABLE Sess IS 'Lesson attendance log';
CREATE TABLE Rpt (rpt_id INTEGER PRIMARY KEY, pupil_id INTEGER REFERENCES Pupil(pupil_id), body VARCHAR);
COMMENT ON TABLE Rpt IS 'Termly progress reports';
INSERT INTO Tutor VALUES (1, 'T1', 'maths'), (2, 'T2', 'music'), (3, 'T3', 'reception');
INSERT INTO Pupil VALUES (1, 'P1', '0700-1', 'p1@x', 'nuts', 1), (2, 'P2', '0700-2', 'p2@x', NULL, 2);
INSERT INTO Sess VALUES (1, 1, TIMESTAMP '2024-01-01 10:00', 60);
INSERT INTO Rpt VALUES (1, 1, 'Good progress this term in algebra and geometry');
"""

#: the same schema without its COMMENT ON statements
BARE = "\n".join(line for line in SCHEMA.splitlines() if not line.startswith("COMMENT ON"))


def _extract(tmp_path: Path, text: str, ddl: str = SCHEMA):
    return extract_on(tmp_path / f"tutoring{len(ddl)}.duckdb", ddl, text)


def _held(result, clause: str) -> list[dict]:
    return [q for h in result.questions if h["clause"] == clause for q in h["questions"] if q["kind"] == "data"]


def _enforced(result) -> dict[str, set[tuple[str, str]]]:
    types = result.policy.get("grounding", {}).get("data_types", {})
    return {n["id"]: {(loc["relation"], loc["attribute"]) for d in n["data"] for loc in types[d]["locations"]}
            for n in result.policy["norms"]}


def _evidence(result, clause: str) -> list[str]:
    return [e["evidence"] for e in result.evidence if e["clause"] == clause]


@pytest.mark.parametrize(("phrase", "comment", "expected"), [
    ("date of birth", "Date of birth of the pet", (1, True)),        # the phrase in full in the comment
    ("date of birth", "Date of birth", (0, True)),
    ("diagnosis", "diagnosis", (0, True)),                           # the same one word
    ("termly progress report summaries", "Termly progress reports", (0, False)),  # the comment in full in the phrase
    ("contact details", "contact email of the owner", None),         # one word shared only
    ("name", "name of the owner", None),                             # one word of the phrase only
    ("medical history", "Allergy and medical alert", None),
    ("records", "records", None),                                    # head nouns only name nothing
    ("phone number", None, None),
])
def test_comment_spells(phrase, comment, expected):
    assert comment_spells(phrase, comment) == expected


def test_a_column_comment_grounds_a_phrase_strongly(tmp_path):
    """``home telephone number`` names no column (``tel``); the comment of Pupil.tel spells it: enforced."""
    text = "R1. A maths tutor may view the home telephone number of a pupil.\n"
    r = _extract(tmp_path, text)
    assert _enforced(r) == {"R1": {("Pupil", "tel")}}
    assert _evidence(r, "R1") == ["comment_spelled"]
    assert {d.get("description") for d in r.policy["grounding"]["data_types"].values()} == {
        "evidence: comment_spelled"}
    bare = _extract(tmp_path, text, BARE)  # without the comment: not enforced (as before)
    assert "R1" not in _enforced(bare)


def test_a_comment_replaces_a_weak_name_grounding_of_a_permit(tmp_path):
    """``contact details``: by names the lexicon's contact columns (Pupil.email, weak: a question); by the comment of
    Pupil.tel, that column, enforced. The names' weak guess is not added to a permit."""
    text = "R1. A maths tutor may view the contact details of a pupil.\n"
    bare = _extract(tmp_path, text, BARE)
    assert "R1" not in _enforced(bare) and _evidence(bare, "R1") == ["category_columns"]
    r = _extract(tmp_path, text)
    assert _enforced(r) == {"R1": {("Pupil", "tel")}}
    assert _evidence(r, "R1") == ["comment_spelled"]


def test_a_prohibition_adds_the_comment_to_the_names(tmp_path):
    """Fail closed: a prohibition of ``contact details`` denies the comment's column and the names' columns."""
    text = ("R1. A maths tutor may view the home telephone number of a pupil.\n"
            "R2. A music tutor shall not view the contact details of a pupil.\n")
    r = _extract(tmp_path, text)
    assert _enforced(r)["R2"] >= {("Pupil", "tel"), ("Pupil", "email")}
    assert _evidence(r, "R2") == ["comment_spelled+names"]


def test_a_table_comment_named_in_full_is_the_whole_table(tmp_path):
    """``lesson attendance log`` is the comment of Sess: the whole table, enforced."""
    text = "R1. A maths tutor may view the lesson attendance log of a pupil.\n"
    r = _extract(tmp_path, text)
    assert _enforced(r) == {"R1": {("Sess", c) for c in ("sess_id", "pupil_id", "started", "mins")}}
    assert _evidence(r, "R1") == ["table_comment"]
    assert "R1" not in _enforced(_extract(tmp_path, text, BARE))


def test_a_table_comment_named_only_in_part_is_a_question(tmp_path):
    """``termly progress report summaries`` says more than the comment of Rpt: proposed, not enforced."""
    r = _extract(tmp_path, "R1. A maths tutor may view the termly progress report summaries of a pupil.\n")
    assert "R1" not in _enforced(r)
    (q,) = _held(r, "R1")
    assert q["evidence"] == "table_comment_partial"
    assert {(p["relation"], p["attribute"]) for p in q["proposal"]} == {("Rpt", c) for c in ("rpt_id", "pupil_id", "body")}
    assert "comment" in q["reason"]


def test_a_comment_sharing_one_word_grounds_nothing(tmp_path):
    """``medical history`` shares only ``medical`` with the comment of Pupil.med_flg: not grounded by it."""
    r = _extract(tmp_path, "R1. A maths tutor may view the medical history of a pupil.\n")
    assert "R1" not in _enforced(r)
    assert not any(k.startswith(("comment", "table_comment")) for k in _evidence(r, "R1"))
    assert all(("Pupil", "med_flg") not in {(p["relation"], p["attribute"]) for p in q["proposal"] or ()}
               for q in _held(r, "R1"))


def test_the_comment_kinds_are_known_and_graded():
    assert {"comment_spelled", "table_comment"} <= STRONG <= set(EVIDENCE)
    assert "table_comment_partial" in EVIDENCE and "table_comment_partial" not in STRONG
    assert all(re.fullmatch(r"[a-z_]+(\+[a-z]+)?", k) for k in EVIDENCE)
