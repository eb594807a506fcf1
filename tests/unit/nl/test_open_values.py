"""Open value linking: literals the (synthetic) value index does not hold still get a column."""

from __future__ import annotations

import pytest

from pimento.nl import ValueIndex, translate
from pimento.nl.open_values import column_profile, find_spans
from pimento.nl.text import tokenize
from pimento.schema import Catalog, Column, ForeignKey, Table

PLACEHOLDER = "[synthetic]"


def _catalog() -> Catalog:
    t = (
        Table("countries", (Column("CountryId", "integer"), Column("CountryName"), Column("Continent")), ("CountryId",)),
        Table("makers", (Column("Id", "integer"), Column("Maker"), Column("FullName"), Column("Country", "integer")), ("Id",)),
        Table("cars", (Column("CarId", "integer"), Column("MakerId", "integer"), Column("Horsepower"), Column("Year", "integer")), ("CarId",)),
        Table("templates", (Column("template_id", "integer"), Column("template_type_code"), Column("template_details")), ("template_id",)),
        Table("people", (Column("person_id", "integer"), Column("first_name"), Column("last_name"), Column("sex")), ("person_id",)),
        Table("channels", (Column("channel_id", "integer"), Column("series_name"), Column("language")), ("channel_id",)),
        Table("faculty", (Column("fac_id", "integer"), Column("rank"), Column("building"), Column("headquarters")), ("fac_id",)),
    )
    fks = (
        ForeignKey("makers", ("Country",), "countries", ("CountryId",)),
        ForeignKey("cars", ("MakerId",), "makers", ("Id",)),
    )
    return Catalog(t, fks)


CATALOG = _catalog()


def _synthetic(overrides=None) -> ValueIndex:
    """An index as a small synthetic copy gives it: every text column holds only the placeholder."""
    values = {
        (t.name, c.name): [PLACEHOLDER] for t in CATALOG.tables for c in t.columns if c.type == "text"
    }
    values.update(overrides or {})
    return ValueIndex.from_values(values, source="synthetic", synthetic=True)


def _sqls(question, values=None, k=10):
    return [c.sql for c in translate(question, CATALOG, values=values if values is not None else _synthetic(), k=k)]


def test_country_literal_gets_its_column_and_the_join():
    top = _sqls("How many car makers are there in France?")[0]
    assert "countries.CountryId = makers.Country" in top
    assert "countries.CountryName = 'France'" in top


def test_lower_case_literal_keeps_its_casing_first_and_offers_the_other():
    sqls = _sqls("How many car makers are there in france?")
    assert "countries.CountryName = 'france'" in sqls[0]
    assert any("countries.CountryName = 'France'" in s for s in sqls[1:])


def test_continent_goes_to_the_continent_column():
    assert "countries.Continent = 'Asia'" in _sqls("How many countries are in Asia?")[0]


def test_language_named_beside_its_column():
    assert "channels.language = 'English'" in _sqls("How many channels use the English language?")[0]


def test_code_goes_to_the_code_column_named_nearby():
    assert "templates.template_type_code = 'CV'" in _sqls("How many templates have the type CV?")[0]


def test_quoted_code_is_a_code_too():
    assert "templates.template_type_code = 'PPT'" in _sqls("How many templates have type code 'PPT'?")[0]


def test_two_word_name_splits_over_first_and_last_name_columns():
    top = _sqls("How many people are named Mark Giuliano?")[0]
    assert "people.first_name = 'Mark' AND people.last_name = 'Giuliano'" in top


def test_coded_word_on_a_placeholder_sex_column():
    assert "people.sex = 'F'" in _sqls("How many female people are there?")[0]


def test_numeric_comparative_on_a_placeholder_text_column_named_beside_it():
    top = _sqls("How many cars have a horsepower greater than 150?")[0]
    assert "cars.Horsepower > '150'" in top


def test_a_word_beside_one_literal_does_not_name_the_column_of_another():
    top = _sqls("How many Professors are in building NEB?")[0]
    assert "faculty.building = 'NEB'" in top
    assert "faculty.building = 'Professors'" not in top


def test_a_value_the_index_placed_keeps_its_neighbour_word():
    values = _synthetic({("people", "last_name"): ["Goodwin"]})
    top = _sqls("How many people are called Ryan Goodwin?", values)[0]
    assert "people.last_name = 'Goodwin'" in top and "Ryan" not in top


def test_country_aliases_are_offered():
    catalog = Catalog((Table("company", (Column("company_id", "integer"), Column("name"), Column("headquarters")), ("company_id",)),))
    sqls = [c.sql for c in translate("How many companies are headquartered in the US?", catalog, values=ValueIndex.empty(), k=10)]
    assert "company.headquarters = 'US'" in sqls[0]
    assert any("company.headquarters = 'USA'" in s for s in sqls)


def test_a_literal_with_no_joinable_column_is_dropped_rather_than_answering_nothing():
    catalog = Catalog(
        (
            Table("faculty", (Column("fac_id", "integer"), Column("building")), ("fac_id",)),
            Table("countries", (Column("country_id", "integer"), Column("country_name")), ("country_id",)),
        )
    )
    top = translate("How many faculty are in France?", catalog, values=ValueIndex.empty())
    assert top and top[0].sql == "SELECT COUNT(*) FROM faculty"


def test_no_link_when_no_column_can_hold_the_literal():
    catalog = Catalog((Table("cars", (Column("CarId", "integer"), Column("Horsepower", "integer")), ("CarId",)),))
    top = translate("How many cars does Zorblax own?", catalog, values=ValueIndex.empty())[0]
    assert top.sql == "SELECT COUNT(*) FROM cars"


def test_index_hit_is_preferred_over_open_linking():
    values = _synthetic({("makers", "Maker"): ["France"]})
    top = translate("How many car makers are there in France?", CATALOG, values=values)[0]
    assert "makers.Maker = 'France'" in top.sql
    assert any("exact match" in line for line in top.explanation)


def test_surviving_values_set_the_casing():
    values = _synthetic({("countries", "CountryName"): ["germany", "japan"]})
    assert "countries.CountryName = 'france'" in _sqls("How many car makers are there in France?", values)[0]


def test_open_link_explains_itself():
    top = translate("How many countries are in Asia?", CATALOG, values=_synthetic())[0]
    assert any("not in the value index" in line and "a continent" in line for line in top.explanation)


@pytest.mark.parametrize(
    ("question", "spans"),
    [
        ("How many flights depart from City Aberdeen?", ["Aberdeen"]),  # label trimmed
        ("How many United Airlines flights go to ASY Airport?", ["United Airlines", "ASY"]),
        ("How many car makers are there in france?", ["france"]),  # a known country, lower case
        ("How many unique languages are spoken in the world?", []),  # not a value
        ("Kyle has how many friends?", []),  # sentence-initial capital
    ],
)
def test_value_like_spans(question, spans):
    found = find_spans(tokenize(question), set(), lambda t: t.lower in {"city", "airport", "flight", "friend", "language"})
    assert [s.text for s in found] == spans


def test_column_profile_tells_placeholders_and_minted_labels_from_values():
    values = ValueIndex.from_values(
        {("countries", "CountryName"): [PLACEHOLDER], ("makers", "Maker"): ["makers_1", "makers_2"], ("channels", "language"): ["EN", "FR"]}
    )
    assert not column_profile(values, CATALOG, "countries", "CountryName").informative
    assert not column_profile(values, CATALOG, "makers", "Maker").informative
    lang = column_profile(values, CATALOG, "channels", "language")
    assert lang.informative and lang.style == "upper"
