"""A small school database whose extracted policy draft holds two permits for the custodian's review
(issue 27), shared by the web page's HTTP tests and its browser test.

The schema is written for these tests (not a shipped demo). From the text, K1 is extracted without
doubt; K2 ("a learner's records") names no column and K3 has a condition ("if the coach mentors the
learner") no table grounds, so both are held as questions K2.1 (data, with a proposal) and K3.1
(condition, no proposal).
"""

from __future__ import annotations

from pathlib import Path

SCHOOL_SQL = [
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
SCHOOL_TEXT = (
    "K1. A nurse may access a learner's email for treatment.\n"
    "K2. A counselor may access a learner's records for counseling.\n"
    "K3. A coach may view a learner's score for coaching if the coach mentors the learner.\n"
)
DRAFT = "policy.draft.yaml"
REVIEWED = "policy.draft.reviewed.yaml"


def school_with_draft(folder: Path) -> Path:
    """``folder/school.duckdb``, its extracted draft ``folder/policy.draft.yaml`` and a pimento.toml naming it
    (``[policy] draft``); returns the database."""
    import duckdb

    from pimento.engines.database import load_database
    from pimento.policy.extract_offline import extract_policy_offline

    db = folder / "school.duckdb"
    con = duckdb.connect(str(db))
    for sql in SCHOOL_SQL:
        con.execute(sql)
    con.close()
    opened = load_database(db)
    try:
        draft = extract_policy_offline(SCHOOL_TEXT, opened.catalog, engine=opened.engine, year=2024, name="school")
    finally:
        opened.close()
    (folder / DRAFT).write_text(draft.to_yaml(), encoding="utf-8")
    (folder / "pimento.toml").write_text(f'[policy]\ndraft = "{DRAFT}"\n', encoding="utf-8")
    return db
