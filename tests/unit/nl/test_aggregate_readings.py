"""Grouped and summed readings of questions (nl/aggregate_readings.py): each cue form, and the
questions that must stay plain counts."""

from __future__ import annotations

import pytest

from pimento.nl import ValueIndex, translate, translate_aggregate
from pimento.nl.aggregate_question import read_question
from pimento.schema import Catalog, Column, ForeignKey, Table
from pimento.sql.ir import AggregateKind, AggregateQuery
from pimento.sql.parse import parse_aggregate_query


def _catalog() -> Catalog:
    tables = (
        Table(
            "patients",
            (
                Column("patient_id", "integer"),
                Column("name"),
                Column("diagnosis"),
                Column("age", "integer"),
                Column("ward_id", "integer"),
            ),
            ("patient_id",),
        ),
        Table("wards", (Column("ward_id", "integer"), Column("ward_name"), Column("floor", "integer")), ("ward_id",)),
        Table(
            "visits",
            (
                Column("visit_id", "integer"),
                Column("patient_id", "integer"),
                Column("department"),
                Column("length_of_stay", "integer"),
                Column("cost", "real"),
            ),
            ("visit_id",),
        ),
    )
    fks = (
        ForeignKey("patients", ("ward_id",), "wards", ("ward_id",)),
        ForeignKey("visits", ("patient_id",), "patients", ("patient_id",)),
    )
    return Catalog(tables, fks)


CATALOG = _catalog()
NO_VALUES = ValueIndex.from_values({})


def _top(question: str) -> str:
    found = translate_aggregate(question, CATALOG, values=NO_VALUES, k=5)
    assert found, f"no aggregate reading of {question!r}"
    return found[0].sql


@pytest.mark.parametrize(
    "question",
    [
        "How many patients per diagnosis?",
        "For each diagnosis, how many patients are there?",
        "How many patients are there in each diagnosis?",
        "Number of patients by diagnosis",
        "Show each diagnosis and the number of patients.",
        "List the different diagnoses along with the number of patients.",
        "How many patients does each diagnosis have?",
    ],
)
def test_grouped_count_cues(question: str) -> None:
    assert _top(question) == "SELECT patients.diagnosis, COUNT(*) FROM patients GROUP BY patients.diagnosis"


def test_group_named_by_a_table_groups_by_its_label_over_a_join() -> None:
    # "each ward" names the table wards: group by its name column, joined along the foreign key
    assert _top("Count of patients in each ward") == (
        "SELECT wards.ward_name, COUNT(*) FROM patients JOIN wards ON patients.ward_id = wards.ward_id GROUP BY wards.ward_name"
    )


def test_group_key_when_the_question_says_id() -> None:
    assert _top("How many patients are there for each ward id?") == (
        "SELECT patients.ward_id, COUNT(*) FROM patients GROUP BY patients.ward_id"
    )


def test_two_group_keys() -> None:
    assert _top("How many visits are there for each department and diagnosis?") == (
        "SELECT visits.department, patients.diagnosis, COUNT(*) FROM patients JOIN visits "
        "ON patients.patient_id = visits.patient_id GROUP BY visits.department, patients.diagnosis"
    )


def test_average_and_average_per_group() -> None:
    assert _top("What is the average age of patients?") == "SELECT AVG(patients.age) FROM patients"
    assert _top("What is the mean age of patients per diagnosis?") == (
        "SELECT patients.diagnosis, AVG(patients.age) FROM patients GROUP BY patients.diagnosis"
    )
    assert _top("What is the average length of stay for each department?") == (
        "SELECT visits.department, AVG(visits.length_of_stay) FROM visits GROUP BY visits.department"
    )


def test_total_and_sum() -> None:
    assert _top("What is the total cost of visits?") == "SELECT SUM(visits.cost) FROM visits"
    assert _top("Find the sum of the length of stay of visits in each department.") == (
        "SELECT visits.department, SUM(visits.length_of_stay) FROM visits GROUP BY visits.department"
    )


def test_total_number_of_an_entity_is_a_count_not_a_sum() -> None:
    # "total number of patients" counts rows; it does not sum a numeric column (nor the key)
    assert _top("What is the total number of patients in each ward?").endswith("GROUP BY wards.ward_name")
    assert "COUNT(*)" in _top("What is the total number of patients in each ward?")


def test_body_filters_come_from_the_count_parser() -> None:
    assert _top("How many patients older than 60 are there per diagnosis?") == (
        "SELECT patients.diagnosis, COUNT(*) FROM patients WHERE patients.age > 60 GROUP BY patients.diagnosis"
    )


@pytest.mark.parametrize(
    "question",
    [
        "How many patients are there?",
        "How many patients are older than 60?",
        "Count the number of different diagnoses.",
        "What is the total number of patients?",
        "How many visits are there in total?",
        "How many patients have a diagnosis?",
    ],
)
def test_plain_counts_get_no_aggregate_reading(question: str) -> None:
    assert read_question(question) == [] or translate_aggregate(question, CATALOG, values=NO_VALUES) == []
    # and the counting parser still answers them with a CountQuery
    assert translate(question, CATALOG, values=NO_VALUES)


def test_aggregate_word_inside_a_column_name_is_not_an_average() -> None:
    cat = Catalog((Table("weather", (Column("day"), Column("mean_humidity", "integer"), Column("zip_code"))),))
    assert translate_aggregate("How many days had a mean humidity above 50?", cat, values=NO_VALUES) == []


def test_candidates_are_aggregate_queries_that_parse_back() -> None:
    found = translate_aggregate("What is the average cost of visits per diagnosis?", CATALOG, values=NO_VALUES, k=3)
    assert found and all(isinstance(c.query, AggregateQuery) for c in found)
    top = found[0]
    assert top.query.kind is AggregateKind.AVG
    assert parse_aggregate_query(top.sql, CATALOG).canonical() == top.query.canonical()
    assert top.to_dict()["kind"] == "avg" and top.explanation
    assert [c.score for c in found] == sorted((c.score for c in found), reverse=True)


def test_k_bounds_the_number_of_candidates() -> None:
    assert len(translate_aggregate("How many patients per diagnosis?", CATALOG, values=NO_VALUES, k=1)) == 1


def test_in_total_over_an_entity_stays_a_plain_count() -> None:
    # "notes_id" is numeric and not a declared key: "how many notes in total" still counts rows
    cat = Catalog((Table("notes", (Column("notes_id", "integer"), Column("body"))),))
    assert translate_aggregate("How many notes are there in total?", cat, values=NO_VALUES) == []
    assert translate_aggregate("What is the total number of notes?", cat, values=NO_VALUES) == []


def test_a_second_sentence_lists_the_group_columns() -> None:
    assert _top("How many visits did each patient make? List the patient id, name, and the count.") == (
        "SELECT patients.name, patients.patient_id, COUNT(*) FROM patients JOIN visits "
        "ON patients.patient_id = visits.patient_id GROUP BY patients.name, patients.patient_id"
    )


def test_the_second_sentence_asks_when_the_first_only_names_the_groups() -> None:
    assert _top("What are the different diagnoses? Show the diagnosis and the number of patients with each diagnosis.") == (
        "SELECT patients.diagnosis, COUNT(*) FROM patients GROUP BY patients.diagnosis"
    )


def _study_catalog() -> Catalog:
    """People, a link table named after them (``StudyPerson``) and a table that references them
    (``Release``): "person" reads as three counted tables, only one of them without a join."""
    tables = (
        Table("Person", (Column("person_id", "integer"), Column("sex"), Column("born", "integer")), ("person_id",)),
        Table("StudyPerson", (Column("study_id", "integer"), Column("person_id", "integer")), ("study_id", "person_id")),
        Table("Release", (Column("release_id", "integer"), Column("person_id", "integer"), Column("day")), ("release_id",)),
    )
    fks = (
        ForeignKey("StudyPerson", ("person_id",), "Person", ("person_id",)),
        ForeignKey("Release", ("person_id",), "Person", ("person_id",)),
    )
    return Catalog(tables, fks)


def test_a_join_no_word_names_is_not_proposed_beside_the_reading_without_it() -> None:
    """Issue 25: the counted phrase also reads as a link table or another table's key, and the group's
    table pulls that reading's join in; beside the same group over the group's table alone, those
    readings (which would make the grouped question's confidence low) are not proposed."""
    found = translate_aggregate("How many persons are there per sex?", _study_catalog(), values=NO_VALUES, k=5)
    assert [c.sql for c in found] == ["SELECT Person.sex, COUNT(*) FROM Person GROUP BY Person.sex"]


def test_a_join_the_question_names_is_still_proposed() -> None:
    """The same schema, the link table named ("study persons"): its join is kept."""
    found = translate_aggregate("How many study persons are there per sex?", _study_catalog(), values=NO_VALUES, k=5)
    assert any("JOIN StudyPerson" in c.sql for c in found)
