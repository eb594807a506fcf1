"""The search's mechanics on the demo hospital, with a stand-in sensitivity oracle.

Tests with the real residual sensitivity live in tests/system/test_search_demo.py.
"""

from __future__ import annotations

import pytest

from pimento.demo.hospital import DEMO_SQL_ORDERS, DEMO_SQL_PRESCRIPTION
from pimento.engines import open_engine
from pimento.errors import SearchError
from pimento.search import PartialQuery, SchemaGraphExpander, SearchConfig, SensitivityInfo, SensitivitySearch, decompose
from pimento.search.expanders import NodeState
from pimento.search.query_intent import intent_of
from pimento.search.mcts import votes_for_samples
from pimento.sql import parse_count_query


@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_engine):
    with demo_engine(tmp_path_factory.mktemp("demo"), patients=800, seed=3) as opened:
        yield opened


def _oracle(high: frozenset[str]):
    """RS 500 for queries over exactly the tables ``high``, else 10 per relation; equal Shapley shares."""

    calls = []

    def oracle(query):
        calls.append(query)
        tables = frozenset(r.table for r in query.relations)
        rs = 500.0 if tables == high else 10.0 * len(tables)
        return SensitivityInfo(rs, {a: rs / len(query.aliases) for a in query.aliases})

    oracle.calls = calls
    return oracle


def test_decompose_then_apply_rebuilds_the_query(demo):
    engine, catalog = demo
    for sql in (DEMO_SQL_PRESCRIPTION, DEMO_SQL_ORDERS):
        query = parse_count_query(sql, catalog)
        prefix = PartialQuery()
        for action in decompose(query):
            prefix = prefix.apply(action)
        assert prefix.complete() == query


def test_schema_graph_expander_never_reuses_a_sibling_key(demo):
    _, catalog = demo
    query = parse_count_query(DEMO_SQL_PRESCRIPTION, catalog).canonical()
    expander = SchemaGraphExpander(catalog)
    state = NodeState(PartialQuery(), intent_of(query))
    first = expander.propose(state, exclude=frozenset(), limit=50)
    keys = [a.key for a, _ in first]
    assert len(keys) == len(set(keys))
    again = expander.propose(state, exclude=frozenset(keys[:2]), limit=50)
    assert not {a.key for a, _ in again} & set(keys[:2])


def test_search_finds_the_lower_sensitivity_formulation_from_the_other(demo):
    engine, catalog = demo
    a = parse_count_query(DEMO_SQL_PRESCRIPTION, catalog)
    oracle = _oracle(frozenset({"Prescription", "Employee"}))
    result = SensitivitySearch(engine, catalog, beta=0.1, config=SearchConfig(rollouts=30, seed=1), oracle=oracle).run([a])
    assert result.synthetic_answer == engine.execute(a.to_sql()).scalar()
    assert result.synthetic_rs < 500.0
    tables = {r.table for r in result.query.relations}
    assert tables != {"Prescription", "Employee"}
    assert engine.execute(result.sql).scalar() == engine.execute(a.to_sql()).scalar()
    assert any(alt.source.startswith("warm-start") for alt in result.alternatives)


def test_final_selection_prefers_the_largest_cluster_over_lower_sensitivity(demo):
    engine, catalog = demo
    a = parse_count_query(DEMO_SQL_PRESCRIPTION, catalog)
    wrong = parse_count_query("SELECT COUNT(*) FROM Employee WHERE specialty = 'Oncology'", catalog)
    oracle = _oracle(frozenset({"Prescription", "Employee"}))
    config = SearchConfig(rollouts=0, warm_start=True, final_votes="proposals")  # samples: one vote each
    # Two copies of the correct warm start form no bigger cluster (queries are distinct values),
    # so add a second correct formulation to make its cluster the largest.
    b = parse_count_query(DEMO_SQL_ORDERS, catalog)
    result = SensitivitySearch(engine, catalog, beta=0.1, config=config, oracle=oracle).run([wrong, a, b])
    assert {r.table for r in result.query.relations} == {"MedicationOrders", "Visit", "Employee"}
    assert result.cluster_size == 2


def test_alphasql_ablation_never_computes_sensitivity(demo):
    engine, catalog = demo
    a = parse_count_query(DEMO_SQL_PRESCRIPTION, catalog)
    oracle = _oracle(frozenset())
    config = SearchConfig(rollouts=5, ignore_sensitivity=True)
    result = SensitivitySearch(engine, catalog, beta=0.1, config=config, oracle=oracle).run([a])
    assert oracle.calls == []
    assert result.pruned == 0


def test_no_candidate_is_a_clear_search_error(demo):
    engine, catalog = demo
    with pytest.raises(SearchError, match="no DP-compatible candidate"):
        SensitivitySearch(engine, catalog, beta=0.1, oracle=_oracle(frozenset())).run([])


def test_empty_synthetic_database_gives_a_clear_message(tmp_path, demo):
    _, catalog = demo
    empty = open_engine(str(tmp_path / "empty.duckdb"), read_only=False)
    query = parse_count_query("SELECT COUNT(*) FROM Patient", catalog)
    with pytest.raises(SearchError, match="no query that runs"):
        SensitivitySearch(empty, catalog, beta=0.1, config=SearchConfig(rollouts=2), oracle=_oracle(frozenset())).run([query])


def test_an_empty_answer_cluster_keeps_the_best_ranked_reading(demo):
    engine, catalog = demo
    first = parse_count_query(
        "SELECT COUNT(*) FROM Prescription P JOIN Employee E ON P.prescriber_id = E.employee_id "
        "WHERE P.medication = 'no-such-drug' AND E.specialty = 'Cardiology'",
        catalog,
    )
    other = parse_count_query("SELECT COUNT(*) FROM Visit WHERE Visit.diagnosis = 'no-such-diagnosis'", catalog)
    oracle = _oracle(frozenset({"Prescription", "Employee"}))
    kept = SensitivitySearch(engine, catalog, beta=0.1, config=SearchConfig(rollouts=0), oracle=oracle).run([first, other])
    assert kept.synthetic_answer == 0 and kept.cluster_size == 2
    assert {r.table for r in kept.query.relations} == {"Prescription", "Employee"}
    paper = SearchConfig(rollouts=0, intent_incumbent=False)
    lowest = SensitivitySearch(engine, catalog, beta=0.1, config=paper, oracle=_oracle(frozenset({"Prescription", "Employee"}))).run([first, other])
    assert {r.table for r in lowest.query.relations} == {"Visit"}


def test_ranked_proposals_keep_the_best_ranked_reading(demo):
    engine, catalog = demo
    many = parse_count_query(DEMO_SQL_PRESCRIPTION, catalog)
    patients = parse_count_query("SELECT COUNT(*) FROM Patient", catalog)
    patients_too = parse_count_query("SELECT COUNT(DISTINCT Visit.pat_id) FROM Visit JOIN Patient ON Visit.pat_id = Patient.pat_id", catalog)
    oracle = _oracle(frozenset({"Prescription", "Employee"}))
    result = SensitivitySearch(engine, catalog, beta=0.1, config=SearchConfig(rollouts=30, seed=1), oracle=oracle).run([many, patients, patients_too])
    # Rank 0 outweighs ranks 1 and 2 together; the search still finds its lower-RS formulation.
    assert result.synthetic_answer == engine.execute(many.to_sql()).scalar()
    assert result.synthetic_rs < 500.0


def test_only_proposals_vote_in_the_final_selection(demo):
    engine, catalog = demo
    # One proposal whose reading has many formulations (the search adds them to its cluster) ...
    many = parse_count_query(DEMO_SQL_PRESCRIPTION, catalog)
    # ... against two proposals that agree with each other on another reading.
    patients = parse_count_query("SELECT COUNT(*) FROM Patient", catalog)
    patients_too = parse_count_query("SELECT COUNT(DISTINCT Visit.pat_id) FROM Visit JOIN Patient ON Visit.pat_id = Patient.pat_id", catalog)
    assert engine.execute(patients.to_sql()).scalar() == engine.execute(patients_too.to_sql()).scalar()
    oracle = _oracle(frozenset({"Prescription", "Employee"}))
    config = votes_for_samples(SearchConfig(rollouts=30, seed=1))
    assert config.final_votes == "proposals"
    search = SensitivitySearch(engine, catalog, beta=0.1, config=config, oracle=oracle)
    chosen = search.run([many, patients, patients_too])
    assert chosen.synthetic_answer == engine.execute(patients.to_sql()).scalar()
    sizes = {a.cluster: a.cluster_size for a in chosen.alternatives}
    # The search did add formulations of the first reading, so by size alone it would compete.
    assert sizes[next(a.cluster for a in chosen.alternatives if a.synthetic_answer != chosen.synthetic_answer)] >= 2
    # The paper's literal rule (every evaluated query votes) is the largest cluster by size.
    literal = SensitivitySearch(engine, catalog, beta=0.1, config=SearchConfig(rollouts=30, seed=1, final_votes="all"), oracle=oracle)
    result = literal.run([many, patients, patients_too])
    assert result.cluster_size == max(a.cluster_size for a in result.alternatives)


def test_warm_starts_sharing_a_first_action_keep_their_own_reading(demo):
    engine, catalog = demo
    first = parse_count_query("SELECT COUNT(*) FROM Visit WHERE Visit.diagnosis = 'I10'", catalog)
    second = parse_count_query("SELECT COUNT(*) FROM Visit", catalog)
    search = SensitivitySearch(engine, catalog, beta=0.1, config=SearchConfig(rollouts=10, seed=2), oracle=_oracle(frozenset()))
    search.run([first, second])
    # The unfiltered count is the second proposal's reading, whatever the search did with the first.
    assert search._proposals[second.canonical()] == 1
    assert search._ranks[second.canonical()] == 1
    for query, rank in search._ranks.items():
        if rank == 0:
            assert query.selections or any("diagnosis" in str(s) for s in query.to_sql().split()), query.to_sql()


def test_an_unknown_vote_rule_is_refused_before_any_search():
    from pimento.errors import UserError

    with pytest.raises(UserError, match="final_votes"):
        SearchConfig(final_votes="majority")
