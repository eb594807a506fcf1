"""Issue 27 (POLICY13): condition phrases grounded to foreign-key join paths and predicates of the schema, or held.

A relation no table word names is the one shortest foreign-key path between the parties' tables, through the tables
the conjunct names or the reference whose column comment spells its verb ("swimmers they teach"); a role's modifier
that names only the other party ("a guardian of that swimmer") is the one relationship table between the two. Among
several equally short paths (or several tables to join once) the relationship table wins, and if that leaves
several the condition is held (a condition question), never a guess. A status predicate ("the membership is active")
must be a filter of the view; "N days overdue" is a due-date test. A conjunct that opens with a thing ("a welfare
concern about the swimmer is open") binds the agent only where it names it. Each view records its evidence kind.
Tested on a scratch swimming-club schema (no name of it is in a development text).
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from dev_policy_support import extract_on

SCHEMA = """
CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, full_name VARCHAR, role VARCHAR);
CREATE TABLE Guardian (guardian_id INTEGER PRIMARY KEY, full_name VARCHAR, email VARCHAR);
CREATE TABLE Swimmer (swimmer_id INTEGER PRIMARY KEY, full_name VARCHAR, medical_notes VARCHAR,
    photo_opt_in BOOLEAN);
CREATE TABLE GuardianOf (guardian_id INTEGER REFERENCES Guardian(guardian_id),
    swimmer_id INTEGER REFERENCES Swimmer(swimmer_id), PRIMARY KEY (guardian_id, swimmer_id));
CREATE TABLE Squad (squad_id INTEGER PRIMARY KEY, coach_id INTEGER REFERENCES Staff(staff_id), name VARCHAR);
CREATE TABLE TimeTrial (trial_id INTEGER PRIMARY KEY, squad_id INTEGER REFERENCES Squad(squad_id),
    swimmer_id INTEGER REFERENCES Swimmer(swimmer_id), seconds DOUBLE);
CREATE TABLE Roster (squad_id INTEGER REFERENCES Squad(squad_id), swimmer_id INTEGER REFERENCES Swimmer(swimmer_id),
    PRIMARY KEY (squad_id, swimmer_id));
CREATE TABLE Lesson (lesson_id INTEGER PRIMARY KEY, coach_id INTEGER REFERENCES Staff(staff_id), held_on DATE);
COMMENT ON COLUMN Lesson.coach_id IS 'The coach who teaches the lesson';
CREATE TABLE LessonBooking (booking_id INTEGER PRIMARY KEY, lesson_id INTEGER REFERENCES Lesson(lesson_id),
    swimmer_id INTEGER REFERENCES Swimmer(swimmer_id));
CREATE TABLE Bkg (bkg_id INTEGER PRIMARY KEY, coach_id INTEGER REFERENCES Staff(staff_id),
    swimmer_id INTEGER REFERENCES Swimmer(swimmer_id), slot TIMESTAMP);
COMMENT ON TABLE Bkg IS 'Appointment book';
CREATE TABLE LapTime (lap_id INTEGER PRIMARY KEY, swimmer_id INTEGER REFERENCES Swimmer(swimmer_id), seconds DOUBLE);
CREATE TABLE Membership (membership_id INTEGER PRIMARY KEY, swimmer_id INTEGER REFERENCES Swimmer(swimmer_id),
    status VARCHAR);
CREATE TABLE Fee (fee_id INTEGER PRIMARY KEY, swimmer_id INTEGER REFERENCES Swimmer(swimmer_id), amount DOUBLE,
    due_on DATE, paid BOOLEAN);
CREATE TABLE Concern (concern_id INTEGER PRIMARY KEY, swimmer_id INTEGER REFERENCES Swimmer(swimmer_id),
    filed_by INTEGER REFERENCES Staff(staff_id), status VARCHAR);
INSERT INTO Staff VALUES (1, 'C1', 'coach'), (2, 'W1', 'welfare_officer'), (3, 'T1', 'treasurer');
INSERT INTO Guardian VALUES (1, 'G1', 'g@x');
INSERT INTO Swimmer VALUES (1, 'S1', 'asthma', true), (2, 'S2', NULL, false);
INSERT INTO GuardianOf VALUES (1, 1);
INSERT INTO Squad VALUES (1, 1, 'juniors');
INSERT INTO TimeTrial VALUES (1, 1, 1, 31.5);
INSERT INTO Roster VALUES (1, 1), (1, 2);
INSERT INTO Lesson VALUES (1, 1, DATE '2025-01-01');
INSERT INTO LessonBooking VALUES (1, 1, 2);
INSERT INTO LapTime VALUES (1, 1, 30.1), (2, 2, 33.0);
INSERT INTO Membership VALUES (1, 1, 'active'), (2, 2, 'lapsed');
INSERT INTO Fee VALUES (1, 1, 40.0, DATE '2025-01-31', false), (2, 2, 40.0, DATE '2025-02-28', true);
INSERT INTO Concern VALUES (1, 2, 2, 'open'), (2, 1, 1, 'closed');
"""


def _extract(tmp_path: Path, text: str, schema: str = SCHEMA):
    return extract_on(tmp_path / "club.duckdb", schema, text)


def _views(result, nid: str) -> list[str]:
    """The SQL of the condition views an enforced norm's condition names (none: [])."""
    norm = next((n for n in result.policy["norms"] if n["id"] == nid), None)
    assert norm is not None, f"{nid} is not enforced"
    conds = result.policy["grounding"]["conditions"]
    return [conds[name]["sql"] for name in re.findall(r"[a-z_0-9]+", str(norm.get("condition"))) if name in conds]


def _held_on_condition(result, nid: str) -> bool:
    return (nid not in {n["id"] for n in result.policy["norms"]}
            and any(h["clause"] == nid and any(q["kind"] == "condition" for q in h["questions"])
                    for h in result.questions))


def _rows(tmp_path: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(tmp_path / "club.duckdb"), read_only=True)
    try:
        return sorted(con.execute(sql).fetchall())
    finally:
        con.close()


def test_a_role_modifier_naming_the_other_party_is_the_one_relationship_table(tmp_path):
    """``a guardian of that swimmer``: before, the permit held for every guardian (no condition)."""
    r = _extract(tmp_path, "1. A coach may disclose the lap times of a swimmer to a guardian of that swimmer.\n")
    (sql,) = _views(r, "C1")
    assert "FROM GuardianOf" in sql and "AS recipient" in sql and "AS subject" in sql
    assert "fk_path_only" in next(iter(r.policy["grounding"]["conditions"].values()))["description"]


def test_a_verb_spelled_by_one_reference_comment_is_that_path(tmp_path):
    """``swimmers they teach``: Lesson.coach_id is commented "The coach who teaches the lesson"; before, held."""
    r = _extract(tmp_path, "1. A coach may view the lap times of swimmers they teach.\n")
    (sql,) = _views(r, "C1")
    assert sql == ("SELECT a.coach_id AS recipient, b.swimmer_id AS subject FROM Lesson AS a "
                   "JOIN LessonBooking AS b ON b.lesson_id = a.lesson_id")
    assert _rows(tmp_path, sql) == [(1, 2)]


def test_a_table_whose_comment_names_the_noun_is_the_path(tmp_path):
    """``an appointment with the swimmer``: Bkg is commented "Appointment book"; before, held."""
    r = _extract(tmp_path, "1. A coach may view the medical notes of a swimmer only if they have an appointment with "
                           "the swimmer.\n")
    assert _views(r, "C1") == ["SELECT a.coach_id AS recipient, a.swimmer_id AS subject FROM Bkg AS a"]


def test_a_verb_spelled_by_two_references_is_held(tmp_path):
    """Two references say ``teaches`` (Lesson's and Squad's): equally short paths, which one is meant is a guess.
    (Fails on the mutant that takes the first shortest path.)"""
    schema = SCHEMA + "COMMENT ON COLUMN Squad.coach_id IS 'The coach who teaches the squad';\n"
    r = _extract(tmp_path, "1. A coach may view the lap times of swimmers they teach.\n", schema)
    assert _held_on_condition(r, "C1")


def test_a_relationship_table_is_joined_before_a_record_table(tmp_path):
    """``in a squad the coach leads``: Squad joins Swimmer through TimeTrial (a record) or Roster (only relates
    them); before, the first in catalog order (TimeTrial: swimmers with a time trial in the squad)."""
    r = _extract(tmp_path, "1. A coach may view the lap times of a swimmer only if the swimmer is in a squad the "
                           "coach leads.\n")
    (sql,) = _views(r, "C1")
    assert "JOIN Roster" in sql and "TimeTrial" not in sql


def test_two_record_tables_to_join_is_held(tmp_path):
    schema = SCHEMA.replace("""CREATE TABLE Roster (squad_id INTEGER REFERENCES Squad(squad_id), swimmer_id INTEGER REFERENCES Swimmer(swimmer_id),
    PRIMARY KEY (squad_id, swimmer_id));""", """CREATE TABLE Roster (roster_id INTEGER PRIMARY KEY, squad_id INTEGER REFERENCES Squad(squad_id),
    swimmer_id INTEGER REFERENCES Swimmer(swimmer_id), added_on DATE);""").replace(
        "INSERT INTO Roster VALUES (1, 1), (1, 2);", "INSERT INTO Roster VALUES (1, 1, 1, NULL);")
    r = _extract(tmp_path, "1. A coach may view the lap times of a swimmer only if the swimmer is in a squad the "
                           "coach leads.\n", schema)
    assert _held_on_condition(r, "C1")  # before: joined TimeTrial, enforced


def test_a_status_predicate_is_a_filter_or_the_permit_is_held(tmp_path):
    r = _extract(tmp_path, "1. A treasurer may view the fees of a swimmer while the swimmer's membership is active.\n"
                           "2. A treasurer may view the lap times of a swimmer while the swimmer's membership is "
                           "current.\n")
    assert _views(r, "C1") == ["SELECT swimmer_id AS subject FROM Membership WHERE status = 'active'"]
    assert _held_on_condition(r, "C2")  # no value says current: before, any swimmer with a membership


def test_overdue_is_a_due_date_test(tmp_path):
    r = _extract(tmp_path, "1. A treasurer may view the fees of a swimmer only if a fee of the swimmer is more "
                           "than 30 days overdue.\n")
    (sql,) = _views(r, "C1")
    assert sql == ("SELECT swimmer_id AS subject FROM Fee WHERE NOT paid AND due_on < CURRENT_DATE - "
                   "INTERVAL '30' DAY")
    assert _rows(tmp_path, sql) == [(1,)]  # the unpaid fee, due in January 2025; the paid one is not overdue


def test_overdue_without_a_due_date_is_held(tmp_path):
    schema = SCHEMA.replace("due_on DATE, ", "").replace("DATE '2025-01-31', ", "").replace("DATE '2025-02-28', ", "")
    r = _extract(tmp_path, "1. A treasurer may view the fees of a swimmer only if a fee of the swimmer is more "
                           "than 30 days overdue.\n", schema)
    assert _held_on_condition(r, "C1")


def test_a_thing_first_conjunct_does_not_bind_the_agent(tmp_path):
    """``a welfare concern about the swimmer is open``: before, the welfare officer was bound to Concern.filed_by
    (the text does not say the officer filed it); ``welfare`` modifies ``concern``, it is no mention of the role."""
    r = _extract(tmp_path, "1. A welfare officer may view the medical notes of a swimmer while a welfare concern "
                           "about the swimmer is open.\n")
    assert _views(r, "C1") == ["SELECT swimmer_id AS subject FROM Concern WHERE status = 'open'"]


def test_and_no_joins_a_negated_condition(tmp_path):
    """Before, ``and no`` did not split: one conjunct, read as "an open concern filed by the coach" (the sign lost)."""
    r = _extract(tmp_path, "1. A coach may view the lap times of a swimmer only if the swimmer's membership is "
                           "active and no concern about the swimmer is open.\n")
    norm = next(n for n in r.policy["norms"] if n["id"] == "C1")
    conds = r.policy["grounding"]["conditions"]
    active, negated = norm["condition"]["all"]
    assert conds[active]["sql"] == "SELECT swimmer_id AS subject FROM Membership WHERE status = 'active'"
    assert conds[negated["not"]]["sql"] == "SELECT swimmer_id AS subject FROM Concern WHERE status = 'open'"


def test_every_is_held(tmp_path):
    """``every fee of the swimmer is paid``: a view of rows says "some fee is paid" (broader); before, enforced so."""
    r = _extract(tmp_path, "1. A coach may view the lap times of a swimmer only if the swimmer's membership is "
                           "active and every fee of the swimmer is paid.\n")
    assert _held_on_condition(r, "C1")


@pytest.mark.parametrize("text", [
    "1. A coach may view the lap times of swimmers they teach.\n",
    "1. A treasurer may view the fees of a swimmer while the swimmer's membership is active.\n",
])
def test_each_view_records_its_evidence_kind(tmp_path, text):
    from pimento.policy.extract_offline.conditions import CONDITION_EVIDENCE  # here: the other tests run on old code

    r = _extract(tmp_path, text)
    conds = r.policy["grounding"]["conditions"]
    assert conds
    for spec in conds.values():
        m = re.search(r"\(evidence: ([a-z_]+)((?:\+[a-z_]+)*)\)$", spec["description"])
        assert m and m.group(1) in CONDITION_EVIDENCE


def test_fk_paths_are_the_shortest_and_say_when_there_are_several(tmp_path):
    from pimento.engines.database import load_database
    from pimento.policy.extract_offline.conditions import fk_paths
    from pimento.policy.extract_offline.schema import Schema

    path = tmp_path / "paths.duckdb"
    con = duckdb.connect(str(path))
    con.execute(SCHEMA)
    con.close()
    db = load_database(path)
    try:
        cat = db.catalog
        schema = Schema(cat)
        staff, guardian, swimmer = cat.table("Staff"), cat.table("Guardian"), cat.table("Swimmer")
        avoid = {"staff", "guardian", "swimmer"}
        (one,) = fk_paths(schema, guardian, swimmer, avoid)  # only GuardianOf relates them
        assert [(a.name, b.name) for a, b, _c, _d in one] == [("Guardian", "GuardianOf"), ("GuardianOf", "Swimmer")]
        several = fk_paths(schema, staff, swimmer, avoid)  # Bkg and Concern, one table in between each
        assert sorted(p[0][1].name for p in several) == ["Bkg", "Concern"]
    finally:
        db.close()
