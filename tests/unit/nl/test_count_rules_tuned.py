"""Counting rules tuned on the 'tune' part of the Spider train split (docs/offline-parser.md).

Each test builds the smallest schema that shows the rule and fails without it.
"""

from __future__ import annotations

from nl_support import catalog as _cat
from pimento.nl import ValueIndex, translate
from pimento.nl.values import NumericRange
from pimento.schema import Column, Table
from pimento.schema.catalog import ForeignKey


def test_larger_than_or_equal_to_is_ge():
    cat = _cat([Table("Products", (Column("Code", "integer"), Column("Name", "text"), Column("Price", "real")), ("Code",))])
    values = ValueIndex.from_values({}, numeric=[NumericRange("Products", "Price", 5.0, 300.0, 50, False)])
    top = translate("Compute the number of products with a price larger than or equal to $180.", cat, values=values)[0]
    assert "Products.Price >= 180" in top.sql
    top = translate("How many products have a price smaller than or equal to 20?", cat, values=values)[0]
    assert "Products.Price <= 20" in top.sql


def test_counted_column_belongs_to_the_table_named_elsewhere():
    cat = _cat(
        [
            Table("Employee", (Column("EmployeeId", "integer"), Column("City", "text")), ("EmployeeId",)),
            Table("Customer", (Column("CustomerId", "integer"), Column("City", "text"), Column("SupportRepId", "integer")), ("CustomerId",)),
        ],
        [ForeignKey("Customer", ("SupportRepId",), "Employee", ("EmployeeId",))],
    )
    top = translate("How many distinct cities do the employees live in?", cat)[0]
    assert top.sql == "SELECT COUNT(DISTINCT Employee.City) FROM Employee"


def test_literal_on_the_counted_tables_own_column_needs_no_join():
    cat = _cat(
        [
            Table("classroom", (Column("building", "text"), Column("room_number", "text"), Column("capacity", "integer")), ("building", "room_number")),
            Table("section", (Column("sec_id", "integer"), Column("building", "text"), Column("room_number", "text")), ("sec_id",)),
        ],
        [ForeignKey("section", ("building", "room_number"), "classroom", ("building", "room_number"))],
    )
    values = ValueIndex.from_values({("classroom", "building"): ["Lamberton", "Taylor"], ("section", "building"): ["Lamberton", "Taylor"]})
    top = translate("How many rooms does the Lamberton building have?", cat, values=values)[0]
    assert top.sql == "SELECT COUNT(*) FROM classroom WHERE classroom.building = 'Lamberton'"


def test_trailing_column_word_labels_an_open_literal():
    cat = _cat(
        [Table("appellations", (Column("No", "integer"), Column("Appelation", "text"), Column("County", "text"), Column("Area", "text")), ("No",))]
    )
    top = translate("Count the number of appelations in Napa County.", cat)[0]
    assert "appellations.County = 'Napa'" in top.sql


def test_edge_named_by_more_of_its_words_wins():
    cat = _cat(
        [
            Table("Student", (Column("StuID", "integer"), Column("Sex", "text")), ("StuID",)),
            Table(
                "Voting_record",
                (Column("StuID", "integer"), Column("Election_Cycle", "text"), Column("President_Vote", "integer"), Column("Class_Senator_Vote", "integer")),
            ),
        ],
        [
            ForeignKey("Voting_record", ("President_Vote",), "Student", ("StuID",)),
            ForeignKey("Voting_record", ("Class_Senator_Vote",), "Student", ("StuID",)),
        ],
    )
    values = ValueIndex.from_values({("Student", "Sex"): ["M", "F"], ("Voting_record", "Election_Cycle"): ["Fall", "Spring"]})
    top = translate("How many male students have class senator votes in the fall election cycle?", cat, values=values)[0]
    assert "Class_Senator_Vote" in top.sql and "President_Vote" not in top.sql
