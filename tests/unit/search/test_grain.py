"""The grain of a formulation: which tables decide how many rows COUNT(*) counts."""

from __future__ import annotations

import pytest

from pimento.schema import Catalog, Column, ForeignKey, Table
from pimento.search import PartialQuery, SchemaGraphExpander, SetCount
from pimento.search.expanders import NodeState
from pimento.search.query_intent import grain, intent_of
from pimento.sql import parse_count_query


@pytest.fixture(scope="module")
def cars() -> Catalog:
    """continents <- countries <- car_makers <- model_list (Spider car_1, trimmed)."""
    t = lambda name, cols, pk: Table(name, tuple(Column(c, "integer" if c != "name" else "text") for c in cols), (pk,))  # noqa: E731
    return Catalog(
        (
            t("continents", ("ContId", "name"), "ContId"),
            t("countries", ("CountryId", "name", "Continent"), "CountryId"),
            t("car_makers", ("Id", "name", "Country"), "Id"),
            t("model_list", ("ModelId", "Maker", "name"), "ModelId"),
        ),
        (
            ForeignKey("countries", ("Continent",), "continents", ("ContId",)),
            ForeignKey("car_makers", ("Country",), "countries", ("CountryId",)),
            ForeignKey("model_list", ("Maker",), "car_makers", ("Id",)),
        ),
    )


def q(sql: str, catalog: Catalog):
    return parse_count_query(sql, catalog)


def test_referenced_dimensions_are_eliminated(cars):
    gold = q(
        "SELECT COUNT(*) FROM model_list m JOIN car_makers c ON m.Maker = c.Id "
        "JOIN countries k ON c.Country = k.CountryId WHERE k.name = 'usa'",
        cars,
    )
    assert grain(gold, cars) == {"model_list"}


def test_dropping_the_counted_table_changes_the_grain(cars):
    wrong = q("SELECT COUNT(*) FROM countries k WHERE k.name = 'usa'", cars)
    makers = q("SELECT COUNT(*) FROM car_makers c JOIN countries k ON c.Country = k.CountryId WHERE k.name = 'usa'", cars)
    assert grain(wrong, cars) == {"countries"}
    assert grain(makers, cars) == {"car_makers"}


def test_a_join_on_a_non_key_or_without_foreign_key_is_kept(cars):
    # model_list.name is no key of model_list: the join can multiply rows.
    odd = q("SELECT COUNT(*) FROM car_makers c JOIN model_list m ON c.name = m.name", cars)
    assert grain(odd, cars) == {"car_makers", "model_list"}


def test_the_count_column_relation_is_never_eliminated(cars):
    query = q("SELECT COUNT(k.name) FROM car_makers c JOIN countries k ON c.Country = k.CountryId", cars)
    assert grain(query, cars) == {"car_makers", "countries"}


def test_expander_completes_only_formulations_with_the_warm_start_grain(cars):
    gold = q(
        "SELECT COUNT(*) FROM model_list m JOIN car_makers c ON m.Maker = c.Id "
        "JOIN countries k ON c.Country = k.CountryId WHERE k.name = 'usa'",
        cars,
    ).canonical()
    intent = intent_of(gold, cars)
    assert intent.grain == {"model_list"}
    expander = SchemaGraphExpander(cars)
    # countries alone, its filter placed: counting countries is not counting models.
    start = [a for a, _ in expander.propose(NodeState(PartialQuery(), intent), exclude=frozenset(), limit=50)]
    add_countries = next(a for a in start if a.relation.table == "countries")
    state = NodeState(PartialQuery().apply(add_countries), intent, frozenset({0}))
    assert not any(isinstance(a, SetCount) for a, _ in expander.propose(state, exclude=frozenset(), limit=50))
    # Without the grain check (the benchmark's ground-truth enumeration) it may complete there.
    loose = SchemaGraphExpander(cars, preserve_grain=False)
    assert any(isinstance(a, SetCount) for a, _ in loose.propose(state, exclude=frozenset(), limit=50))


def test_distinct_counts_keep_their_grain(cars):
    # Joining model_list keeps only makers that have a model: not the same question.
    joined = q("SELECT COUNT(DISTINCT c.Country) FROM car_makers c JOIN model_list m ON m.Maker = c.Id", cars)
    alone = q("SELECT COUNT(DISTINCT c.Country) FROM car_makers c", cars)
    assert intent_of(alone, cars).grain == {"car_makers"}
    assert grain(joined, cars) != grain(alone, cars)


def test_a_one_to_one_extension_stands_for_the_row_it_extends():
    t = lambda name, cols, pk: Table(name, tuple(Column(c, "integer") for c in cols), (pk,))  # noqa: E731
    cat = Catalog(
        (t("orders", ("order_id", "pat"), "order_id"), t("prescription", ("rx_id", "order_id", "pat"), "rx_id")),
        (ForeignKey("prescription", ("order_id",), "orders", ("order_id",)),),
    )
    cat = Catalog((cat.tables[0], Table("prescription", cat.tables[1].columns, ("rx_id",), (("order_id",),))), cat.foreign_keys)
    rx = q("SELECT COUNT(DISTINCT p.pat) FROM prescription p", cat)
    orders = q("SELECT COUNT(DISTINCT o.pat) FROM orders o", cat)
    assert grain(rx, cat) == grain(orders, cat) == {"orders"}


def test_filters_move_through_keys_not_through_shared_names(cars):
    expander = SchemaGraphExpander(cars)
    gold = q("SELECT COUNT(*) FROM car_makers c JOIN countries k ON c.Country = k.CountryId WHERE k.CountryId = 3", cars)
    by_key = intent_of(gold.canonical(), cars).filters[0]
    assert expander.filter_host(by_key, "car_makers") == {"countryid": "Country"}
    by_name = intent_of(q("SELECT COUNT(*) FROM countries k WHERE k.name = 'usa'", cars), cars).filters[0]
    assert expander.filter_host(by_name, "car_makers") is None  # car_makers.name is a maker's name
    assert SchemaGraphExpander(cars, moves="names").filter_host(by_name, "car_makers") == {"name": "name"}


def test_moved_filter_is_rendered_on_the_host_column(cars):
    gold = q("SELECT COUNT(*) FROM car_makers c JOIN countries k ON c.Country = k.CountryId WHERE k.CountryId = 3", cars)
    f = intent_of(gold.canonical(), cars).filters[0]
    assert f.on("car_makers", {"countryid": "Country"}) == "car_makers.Country = 3"
