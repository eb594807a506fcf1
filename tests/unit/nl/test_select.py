"""translate_select: projection and filter questions over joined relations (CI mode), offline."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from benchmarks.nl_select import is_plain_spj
from benchmarks.nl_spider import DP_BENCHMARK_DBS, train_partition
from pimento.errors import NotASelectQuestion
from pimento.nl import ValueIndex, translate, translate_select

DATED = """
CREATE TABLE patient (pat_id INTEGER PRIMARY KEY, name TEXT, birth_year INTEGER);
CREATE TABLE visit (visit_id INTEGER PRIMARY KEY, pat_id INTEGER REFERENCES patient(pat_id), visit_date DATE, diagnosis TEXT);
CREATE TABLE medication_order (order_id INTEGER PRIMARY KEY, pat_id INTEGER REFERENCES patient(pat_id), medication TEXT);
INSERT INTO patient VALUES (17, 'Ann', 1970), (18, 'Bo', 1980);
INSERT INTO visit VALUES (1, 17, DATE '2023-03-01', 'flu'), (2, 18, DATE '2022-05-01', 'asthma'), (3, 18, DATE '2023-12-31', 'gout');
INSERT INTO medication_order VALUES (1, 17, 'warfarin'), (2, 17, 'aspirin'), (3, 18, 'insulin');
"""


@pytest.fixture(scope="module")
def clinic(tmp_path_factory, script_database):
    path = tmp_path_factory.mktemp("nlsel") / "clinic.duckdb"
    with script_database(path, DATED) as (engine, catalog, values):
        yield engine, catalog, values, path


def _rows(engine, sql):
    return Counter(tuple(r) for r in engine.execute(sql).rows)


def test_projection_with_join_and_value_filter(school):
    engine, catalog, values = school
    top = translate_select("What are the names of the students who have a dog?", catalog, values)[0]
    assert _rows(engine, top.query.to_sql("duckdb")) == Counter({("Kyle",): 1, ("Bo",): 1})
    assert "JOIN" in top.sql and "'dog'" in top.sql


def test_several_columns_and_numeric_filter(school):
    engine, catalog, values = school
    top = translate_select("List the name and age of students older than 20.", catalog, values)[0]
    assert top.query.columns == (("student", "name"), ("student", "age"))
    assert _rows(engine, top.sql) == Counter({("Ann", 22): 1, ("Bo", 25): 1})


def test_number_after_a_table_noun_is_its_key(clinic):
    """'patient 17' filters on the patient's key (or a foreign key to it), not on a measurement."""
    engine, catalog, values, _ = clinic
    top = translate_select("Which medications did patient 17 get?", catalog, values)[0]
    assert _rows(engine, top.sql) == Counter({("warfarin",): 1, ("aspirin",): 1})
    # the counting parser reads it the same way
    count = translate("How many visits did patient 18 have?", catalog, values=values)[0]
    assert engine.execute(count.sql).scalar() == 2


def test_year_on_a_date_column_is_a_range(clinic):
    engine, catalog, values, _ = clinic
    top = translate_select("List the diagnoses of visits in 2023.", catalog, values)[0]
    assert "visit_date" in top.sql and "'2023-01-01'" in top.sql and "'2024-01-01'" in top.sql
    assert _rows(engine, top.sql) == Counter({("flu",): 1, ("gout",): 1})


def test_counting_question_is_a_count_select(school):
    engine, catalog, values = school
    top = translate_select("How many students live in Boston?", catalog, values)[0]
    assert top.query.count and top.sql.upper().startswith("SELECT COUNT(")
    assert engine.execute(top.sql).scalar() == 2


def test_number_of_after_a_content_word_is_a_column_not_a_count(school):
    _, catalog, values = school
    top = translate_select("What is the flight number of flights from Aberdeen?", catalog, values)[0]
    assert not top.query.count
    assert top.query.columns == (("flights", "flight_no"),)


@pytest.mark.parametrize("question", ["What is the average age of students?", "Which student is the oldest?", ""])
def test_outside_select_project_join_is_refused(school, question):
    _, catalog, values = school
    with pytest.raises(NotASelectQuestion):
        translate_select(question, catalog, values)


def test_placeholder_values_still_link_quoted_literals(school):
    engine, catalog, values = school
    empty = ValueIndex.empty()
    top = translate_select("Which students live in the city 'Boston'?", catalog, empty)[0]
    assert _rows(engine, top.sql) == Counter({("Kyle",): 1, ("Bo",): 1})


def test_is_plain_spj_filter():
    assert is_plain_spj("SELECT T1.name FROM a AS T1 JOIN b AS T2 ON T1.id = T2.id WHERE T2.x = 'y'")
    assert is_plain_spj("SELECT DISTINCT name FROM a WHERE x LIKE '%y%' OR z > 3")
    for sql in (
        "SELECT count(*) FROM a",
        "SELECT name FROM a GROUP BY name",
        "SELECT name FROM a ORDER BY name",
        "SELECT name FROM a LIMIT 1",
        "SELECT name FROM a UNION SELECT name FROM b",
        "SELECT name FROM a WHERE id IN (SELECT id FROM b)",
        "SELECT name FROM a WHERE x > (SELECT avg(x) FROM a)",
        "SELECT max(x) FROM a",
    ):
        assert not is_plain_spj(sql), sql


def test_train_partition_is_a_fixed_hash_split():
    assert train_partition("activity_1") == "dp"
    parts = {db: train_partition(db) for db in ("aircraft", "baseball_1", "wine_1", "hospital_1")}
    assert parts == {"aircraft": "heldout", "baseball_1": "tune", "wine_1": "tune", "hospital_1": "heldout"}
    assert all(train_partition(db) == "dp" for db in DP_BENCHMARK_DBS)


def test_cli_translate_kind_select(clinic):
    from pimento.cli.app import app

    _, _, _, path = clinic
    result = CliRunner().invoke(
        app, ["translate", "--db", str(path), "--kind", "select", "--json", "Which medications did patient 17 get?"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout[result.stdout.index("{") :])
    assert payload["kind"] == "select" and payload["candidates"]
    assert "17" in payload["candidates"][0]["sql"]
    bad = CliRunner().invoke(app, ["translate", "--db", str(path), "--kind", "pivot", "x"])
    assert bad.exit_code == 2 and "--kind" in bad.output


def test_relative_periods_on_date_columns(clinic):
    import datetime

    engine, catalog, values, _ = clinic
    today = datetime.date(2024, 1, 10)
    top = translate_select("List the diagnoses of visits last year.", catalog, values, today=today)[0]
    assert "'2023-01-01'" in top.sql and "'2024-01-01'" in top.sql
    assert _rows(engine, top.sql) == Counter({("flu",): 1, ("gout",): 1})
    march = datetime.date(2023, 3, 20)
    count = translate("How many visits were there this month?", catalog, values=values, today=march)[0]
    assert "'2023-03-01'" in count.sql and "'2023-04-01'" in count.sql
    assert engine.execute(count.sql).scalar() == 1


def test_period_bounds():
    import datetime

    from pimento.nl.mentions import _period_bounds

    d = datetime.date(2024, 3, 15)  # a Friday
    assert _period_bounds(d, "this", "month") == (datetime.date(2024, 3, 1), datetime.date(2024, 4, 1))
    assert _period_bounds(d, "last", "month") == (datetime.date(2024, 2, 1), datetime.date(2024, 3, 1))
    assert _period_bounds(datetime.date(2024, 1, 5), "last", "month") == (datetime.date(2023, 12, 1), datetime.date(2024, 1, 1))
    assert _period_bounds(d, "this", "week") == (datetime.date(2024, 3, 11), datetime.date(2024, 3, 18))
    assert _period_bounds(d, "", "yesterday") == (datetime.date(2024, 3, 14), d)


def test_companion_item_and_possessive_pick_columns_of_other_tables(clinic):
    engine, catalog, values, _ = clinic
    top = translate_select("List the medication of each order, together with the name of the patient.", catalog, values)[0]
    assert top.query.columns == (("medication_order", "medication"), ("patient", "name"))
    assert _rows(engine, top.sql) == Counter({("warfarin", "Ann"): 1, ("aspirin", "Ann"): 1, ("insulin", "Bo"): 1})
    top = translate_select("List the patient's name and the visit's diagnosis.", catalog, values)[0]
    assert top.query.columns == (("patient", "name"), ("visit", "diagnosis"))


def test_not_further_back_in_the_literals_clause_negates_it(school):
    engine, catalog, values = school
    top = translate_select("Which students do not live in the city of Boston?", catalog, values)[0]
    assert "<>" in top.sql
    assert _rows(engine, top.sql) == Counter({("Ann",): 1})
    # a "not" in another clause does not
    top = translate_select("Which students who are not 19 live in the city of Boston?", catalog, values)[0]
    assert "= 'Boston'" in top.sql


def test_hostile_table_names_are_quoted_by_the_one_quoting_function():
    """A table name with a double quote in it (issue 17): the FROM and JOIN clauses used to wrap the
    name in bare quotes (f'"{name}"'), which sqlglot could not even tokenize."""
    from pimento.nl.select import SelectQuery

    q = SelectQuery(
        columns=(('we"ird table', "select"), ("b t", "x")),
        tables=('we"ird table', "b t"),
        joins=(("b t", "fk", 'we"ird table', "select"),),
        where=(),
    )
    assert q.to_sql("duckdb") == (
        'SELECT "we""ird table"."select", "b t"."x" FROM "we""ird table" '
        'JOIN "b t" ON "b t"."fk" = "we""ird table"."select"'
    )
    assert 'FROM `we"ird table`' in q.to_sql("spark")
