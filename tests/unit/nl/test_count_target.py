"""What is counted: "how many X <verb> Y" counts the Xs that occur in the table relating X and Y."""

from __future__ import annotations

from pimento.nl import ValueIndex, translate
from pimento.schema import Catalog, Column, ForeignKey, Table


def _catalog() -> Catalog:
    t = (
        Table("Faculty", (Column("FacID", "integer"), Column("Lname"), Column("Building")), ("FacID",)),
        Table("Activity", (Column("actid", "integer"), Column("activity_name")), ("actid",)),
        Table("Faculty_Participates_in", (Column("FacID", "integer"), Column("actid", "integer")), ()),
        Table("Departments", (Column("department_id", "integer"), Column("department_name")), ("department_id",)),
        Table("Degree_Programs", (Column("degree_program_id", "integer"), Column("department_id", "integer"), Column("degree_summary_name")), ("degree_program_id",)),
        Table("All_Documents", (Column("Document_ID", "integer"), Column("Document_Type_Code")), ("Document_ID",)),
        Table("Document_Locations", (Column("Document_ID", "integer"), Column("Location_Code")), ()),
    )
    fks = (
        ForeignKey("Faculty_Participates_in", ("FacID",), "Faculty", ("FacID",)),
        ForeignKey("Faculty_Participates_in", ("actid",), "Activity", ("actid",)),
        ForeignKey("Degree_Programs", ("department_id",), "Departments", ("department_id",)),
        ForeignKey("Document_Locations", ("Document_ID",), "All_Documents", ("Document_ID",)),
    )
    return Catalog(t, fks)


CATALOG = _catalog()
NO_VALUES = ValueIndex.from_values({})


def _top(question: str) -> str:
    return translate(question, CATALOG, values=NO_VALUES, k=5)[0].sql


def test_entity_that_takes_part_through_a_link_table_is_counted_there():
    sql = _top("How many faculty members participate in an activity?")
    assert sql == "SELECT COUNT(DISTINCT Faculty_Participates_in.FacID) FROM Faculty_Participates_in"


def test_entity_referenced_by_a_child_table_named_in_part_is_counted_there():
    # "degree" names Degree_Programs only in part; the table references Departments
    sql = _top("How many departments offer any degree?")
    assert sql == "SELECT COUNT(DISTINCT Degree_Programs.department_id) FROM Degree_Programs"


def test_plain_count_without_a_related_table_stays_count_star():
    assert _top("How many departments are there?") == "SELECT COUNT(*) FROM Departments"


def test_repeating_the_counted_noun_names_no_other_table():
    # "document" after the counted phrase is the counted table's own word, not Document_Locations
    candidates = translate("How many documents have document type code 'CV'?", CATALOG, values=NO_VALUES, k=10)
    assert candidates
    assert not any("that occur in" in why for c in candidates for why in c.explanation)


def test_with_a_value_the_ordinary_join_decides():
    sql = _top("How many faculty members participate in the activity 'Chess'?")
    assert "Activity" in sql.split("FROM")[1]
    assert "'Chess'" in sql
