"""The schema-graph expander joins over foreign keys and over the warm start's own join predicates."""

from __future__ import annotations

import duckdb
import pytest

from pimento.engines import open_engine
from pimento.search import PartialQuery, SchemaGraphExpander, SearchConfig, SensitivitySearch
from pimento.search.actions import AddRelation
from pimento.search.expanders import NodeState
from pimento.search.query_intent import intent_of
from pimento.sql import parse_count_query


@pytest.fixture(scope="module")
def no_fk(tmp_path_factory):
    """airlines and flights joined by flights.airline = airlines.uid, with no declared foreign key."""
    path = tmp_path_factory.mktemp("nofk") / "flights.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE airports (code VARCHAR PRIMARY KEY, city VARCHAR)")
    con.execute("CREATE TABLE airlines (uid INTEGER PRIMARY KEY, name VARCHAR)")
    con.execute(
        "CREATE TABLE flights (fno INTEGER PRIMARY KEY, airline INTEGER, src VARCHAR REFERENCES airports (code))"
    )
    con.execute("INSERT INTO airports VALUES ('AHD', 'A'), ('ASY', 'B')")
    con.execute("INSERT INTO airlines VALUES (1, 'United'), (2, 'Delta')")
    con.execute("INSERT INTO flights VALUES (1, 1, 'AHD'), (2, 1, 'ASY'), (3, 2, 'AHD'), (4, 1, 'AHD')")
    con.close()
    engine = open_engine(str(path))
    yield engine, engine.introspect()
    engine.close()


SQL = (
    "SELECT COUNT(*) FROM airlines JOIN flights ON airlines.uid = flights.airline "
    "JOIN airports ON airports.code = flights.src WHERE airlines.name = 'United' AND airports.code = 'AHD'"
)


def test_the_warm_starts_join_is_an_edge(no_fk):
    _, catalog = no_fk
    query = parse_count_query(SQL, catalog).canonical()
    intent = intent_of(query, catalog)
    expander = SchemaGraphExpander(catalog)
    start = NodeState(PartialQuery(), intent)
    flights = next(a for a, _ in expander.propose(start, exclude=frozenset(), limit=20) if a.relation.table == "flights")
    state = NodeState(PartialQuery().apply(flights), intent, frozenset())
    tables = {a.relation.table for a, _ in expander.propose(state, exclude=frozenset(), limit=20) if isinstance(a, AddRelation)}
    assert "airlines" in tables  # no foreign key: reached over the warm start's own join
    # Without the warm start's joins (an intent that never joined them), airlines is unreachable.
    bare = intent_of(parse_count_query("SELECT COUNT(*) FROM flights WHERE flights.src = 'AHD'", catalog).canonical(), catalog)
    tables = {a.relation.table for a, _ in expander.propose(NodeState(PartialQuery().apply(flights), bare), exclude=frozenset(), limit=20)
              if isinstance(a, AddRelation)}
    assert "airlines" not in tables


def test_the_search_drops_the_joined_table_the_filter_could_move_off(no_fk):
    engine, catalog = no_fk
    query = parse_count_query(SQL, catalog)
    result = SensitivitySearch(engine, catalog, beta=0.1, config=SearchConfig(rollouts=10, seed=0)).run([query])
    assert {r.table for r in result.query.relations} == {"airlines", "flights"}
    assert result.synthetic_answer == engine.execute(query.to_sql()).scalar() == 2


def test_ranked_votes_spend_every_rollout_on_the_best_ranked_reading(no_fk):
    engine, catalog = no_fk
    first = parse_count_query(SQL, catalog)
    other = parse_count_query("SELECT COUNT(*) FROM flights WHERE flights.src = 'ASY'", catalog)
    search = SensitivitySearch(engine, catalog, beta=0.1, config=SearchConfig(rollouts=10, seed=0))
    search.run([first, other])
    made = [q for q, source in search._sources.items() if source == "search"]
    assert made
    assert all(search._ranks[q] == 0 for q in made)


def test_relations_that_would_leave_the_grain_are_not_proposed(no_fk):
    _, catalog = no_fk
    # Counting airports: adding flights (which reference airports) changes what is counted for good.
    query = parse_count_query("SELECT COUNT(*) FROM airports WHERE airports.city = 'A'", catalog).canonical()
    intent = intent_of(query, catalog)
    expander = SchemaGraphExpander(catalog)
    airports = next(a for a, _ in expander.propose(NodeState(PartialQuery(), intent), exclude=frozenset(), limit=20)
                    if a.relation.table == "airports")
    state = NodeState(PartialQuery().apply(airports), intent, frozenset({0}))
    proposed = expander.propose(state, exclude=frozenset(), limit=20)
    assert not any(isinstance(a, AddRelation) and a.relation.table == "flights" for a, _ in proposed)
    # Counting flights: airports is joined on its key, so it may be added (and eliminated again).
    query = parse_count_query("SELECT COUNT(*) FROM flights WHERE flights.src = 'AHD'", catalog).canonical()
    intent = intent_of(query, catalog)
    flights = next(a for a, _ in expander.propose(NodeState(PartialQuery(), intent), exclude=frozenset(), limit=20)
                   if a.relation.table == "flights")
    proposed = expander.propose(NodeState(PartialQuery().apply(flights), intent, frozenset({0})), exclude=frozenset(), limit=20)
    assert any(isinstance(a, AddRelation) and a.relation.table == "airports" for a, _ in proposed)
