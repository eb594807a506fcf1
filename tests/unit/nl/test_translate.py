"""Offline parser: intent, value linking, operators, join paths, count forms, ranking, errors."""

from __future__ import annotations

import pytest

from pimento.errors import NotACountingQuestion, UserError
from pimento.nl import ValueIndex, detect_intent, join_trees, translate
from pimento.schema import Catalog, Column, ForeignKey, Table


def _answer(engine, candidate):
    return engine.execute(candidate.query.to_sql(engine.dialect)).scalar()


def _top(engine, catalog, values, question, k=5):
    candidates = translate(question, catalog, values=values, k=k)
    assert candidates, question
    return candidates


# ------------------------------------------------------------------ intent
@pytest.mark.parametrize(
    "question",
    [
        "How many pets are there?",
        "Count the number of pets.",
        "What is the total number of pets?",
        "Find the number of pets.",
        "Show the count of pets",
        "what's the number of pets",
    ],
)
def test_counting_cues_are_recognised(question):
    assert detect_intent(question).start > 0


@pytest.mark.parametrize(
    ("question", "reason"),
    [
        ("List the names of all students.", "list"),
        ("What is the average age of students?", "average"),
        ("How many pets does each student have?", "group"),
        ("How many students are there for each city?", "group"),
        ("Which student has the most pets?", "extreme"),
        ("", "empty"),
    ],
)
def test_questions_outside_the_class_are_refused_with_a_reason(question, reason, school):
    _, catalog, values = school
    with pytest.raises(NotACountingQuestion) as info:
        translate(question, catalog, values=values)
    assert info.value.reason == reason
    assert isinstance(info.value, UserError)
    assert "count" in info.value.one_line().lower()


def test_distinct_is_detected():
    assert detect_intent("How many different pet types are there?").distinct
    assert not detect_intent("How many pets are there?").distinct


# ------------------------------------------------------------------ linking
def test_plain_table_count(school):
    engine, catalog, values = school
    top = _top(engine, catalog, values, "How many students do we have?")[0]
    assert top.sql == "SELECT COUNT(*) FROM student"
    assert _answer(engine, top) == 3


def test_value_links_to_its_column_by_lemma(school):
    engine, catalog, values = school
    top = _top(engine, catalog, values, "How many pets are dogs?")[0]
    assert "pets.pet_type = 'dog'" in top.sql
    assert _answer(engine, top) == 2


def test_numbers_get_comparison_operators(school):
    engine, catalog, values = school
    cases = {
        "How many pets weigh more than 5?": (">", 2),
        "How many students are younger than 22?": ("<", 1),
        "How many students are at least 22 years old?": (">=", 2),
        "How many students have an age between 20 and 30?": ("BETWEEN", 2),
    }
    for question, (op, answer) in cases.items():
        top = _top(engine, catalog, values, question)[0]
        assert op in top.sql, (question, top.sql)
        assert _answer(engine, top) == answer, (question, top.sql)


def test_negation_and_disjunction(school):
    engine, catalog, values = school
    top = _top(engine, catalog, values, "How many students do not live in Boston?")[0]
    assert "<>" in top.sql and _answer(engine, top) == 1
    top = _top(engine, catalog, values, "How many flights were in 2014 or 2015?")[0]
    assert " OR " in top.sql and _answer(engine, top) == 3


def test_like_for_contains(school):
    engine, catalog, values = school
    top = _top(engine, catalog, values, "How many airports have a city containing 'Aber'?")[0]
    assert "LIKE '%Aber%'" in top.sql
    assert _answer(engine, top) == 2


def test_values_come_only_from_the_index_passed():
    catalog = Catalog((Table("pets", (Column("pet_id", "integer"), Column("pet_type", "text")), ("pet_id",)),))
    # without values the capitalised word is not linked; with an index holding it, it is
    assert "dog" not in translate("How many Dog pets are there?", catalog)[0].sql
    index = ValueIndex.from_values({("pets", "pet_type"): ["Dog", "Cat"]}, source="test")
    assert "pets.pet_type = 'Dog'" in translate("How many Dog pets are there?", catalog, values=index)[0].sql


def test_value_index_records_whether_its_source_is_synthetic(school):
    _, _, values = school
    assert values.synthetic is False
    assert values.lookup("boston")[0].value == "Boston"


# ------------------------------------------------------------------ joins and count forms
def test_join_path_through_a_link_table(school):
    engine, catalog, values = school
    candidates = _top(engine, catalog, values, "How many dog pets are owned by students older than 20?")
    top = candidates[0]
    assert {r.table for r in top.query.relations} == {"student", "has_pet", "pets"}
    assert _answer(engine, top) == 1


def test_counting_the_one_side_of_a_one_to_many_join_uses_distinct(school):
    engine, catalog, values = school
    top = _top(engine, catalog, values, "How many students have a cat pet?")[0]
    assert "DISTINCT" in top.sql
    assert _answer(engine, top) == 2


def test_question_words_choose_between_two_foreign_keys(school):
    engine, catalog, values = school
    depart = _top(engine, catalog, values, "How many flights depart from Abilene?")[0]
    arrive = _top(engine, catalog, values, "How many flights arrive in Abilene?")[0]
    assert "source_airport" in depart.sql and _answer(engine, depart) == 2
    assert "dest_airport" in arrive.sql and _answer(engine, arrive) == 1


def test_join_trees_prefer_shortest_paths():
    a = Table("a", (Column("id", "integer"),), ("id",))
    b = Table("b", (Column("id", "integer"), Column("a_id", "integer"), Column("c_id", "integer")), ("id",))
    c = Table("c", (Column("id", "integer"), Column("a_id", "integer")), ("id",))
    fks = (
        ForeignKey("b", ("a_id",), "a", ("id",)),
        ForeignKey("b", ("c_id",), "c", ("id",)),
        ForeignKey("c", ("a_id",), "a", ("id",)),
    )
    catalog = Catalog((a, b, c), fks)
    trees = join_trees(catalog, "a", ["c"])
    assert len(trees[0].edges) == 1 and trees[0].edges[0].child == "c"
    assert any(len(t.edges) == 2 for t in trees), "a longer alternative is kept"
    assert join_trees(Catalog((a, Table("z", (Column("q", "text"),)))), "a", ["z"]) == []


# ------------------------------------------------------------------ ranking
def test_candidates_are_ranked_distinct_and_explained(school):
    engine, catalog, values = school
    candidates = translate("How many students live in Boston?", catalog, values=values, k=5)
    assert 1 <= len(candidates) <= 5
    assert len({c.sql for c in candidates}) == len(candidates)
    assert candidates[0].score >= max(c.score for c in candidates[1:]) - 0.31  # diversity adjustment at most one step
    assert candidates[0].explanation and all(isinstance(line, str) for line in candidates[0].explanation)
    assert _answer(engine, candidates[0]) == 2
    assert candidates[0].to_dict()["sql"] == candidates[0].sql


def test_k_must_be_positive(school):
    _, catalog, values = school
    with pytest.raises(Exception, match="k must be"):
        translate("How many students are there?", catalog, values=values, k=0)
