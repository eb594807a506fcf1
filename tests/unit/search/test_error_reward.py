"""The search compares formulations by the predicted error of the answer, not by RS alone (issue 26, item 3).

On the demo hospital with a stand-in RS oracle (tests/unit/search/test_mcts.py's style), and
the release layer's models (:mod:`pimento.release.predicted_error`) on the demo as the copy.
"""

from __future__ import annotations

import math

import pytest

from pimento.config import Settings
from pimento.demo.hospital import PUBLIC_TABLES, TABLES
from pimento.mechanisms import mechanism_for
from pimento.release.person_release import plan_person_release, predicted_half_width
from pimento.release.predicted_error import PersonUnitError, TupleUnitError, error_model, estimated_half_width
from pimento.search import SearchConfig, SensitivityInfo, SensitivitySearch
from pimento.search.evaluate import QueryEvaluator
from pimento.sql import parse_count_query

SINGLE = "SELECT COUNT(*) FROM Prescription WHERE medication = 'warfarin'"
JOIN = "SELECT COUNT(*) FROM Prescription P JOIN Patient A ON P.pat_id = A.pat_id WHERE P.medication = 'warfarin'"
#: Staff tables do not reach a patient: public under the person unit (as benchmarks/person_unit.py declares them).
STAFF = ("Employee", "Supervises", "CareTeamMember")
MECHANISM = mechanism_for("1", "1e-6")


@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_engine):
    with demo_engine(tmp_path_factory.mktemp("demo"), patients=300, seed=3) as opened:
        yield opened


def _rs_by_relations(single: float, several: float):
    """A stand-in RS oracle: ``single`` for a one-relation count, ``several`` for a join."""

    def oracle(query):
        rs = single if len(query.relations) == 1 else several
        return SensitivityInfo(rs, {a: rs / len(query.aliases) for a in query.aliases})

    return oracle


def test_a_one_relation_count_wins_by_its_global_noise_though_its_rs_is_higher(demo):
    engine, catalog = demo
    warm = [parse_count_query(JOIN, catalog), parse_count_query(SINGLE, catalog)]  # same answer (a foreign key)
    oracle = _rs_by_relations(5.0, 2.0)  # RS favours the join
    config = SearchConfig(rollouts=0)
    by_rs = SensitivitySearch(engine, catalog, beta=0.1, config=config, oracle=oracle).run(warm)
    assert len(by_rs.query.relations) == 2  # the paper's reward: the lower RS
    model = TupleUnitError(MECHANISM)
    chosen = SensitivitySearch(engine, catalog, beta=0.1, config=config, oracle=oracle, error_model=model).run(warm)
    # the release would add Laplace noise at GS 1 to the count over one relation: 95% half-width 3 at eps 1,
    # against the smooth mechanism's at RS 2 for the join
    assert len(chosen.query.relations) == 1
    assert chosen.synthetic_rs == 5.0
    assert chosen.predicted_error == 3.0 < float(estimated_half_width(MECHANISM.for_relations(2), 2.0))
    assert chosen.error_basis == model.basis
    shown = {a.sql: a.to_dict()["synthetic_predicted_error"] for a in chosen.alternatives}
    assert sorted(shown.values()) == [3.0, float(estimated_half_width(MECHANISM.for_relations(2), 2.0))]
    assert chosen.to_dict()["synthetic_predicted_error"] == 3.0


class _Inverse:
    """A model that ranks formulations against RS (as the person unit can): error = 100 - RS; no pruning bound."""

    basis = "stand-in"

    def error(self, query, rs):
        return 100.0 - rs

    def floor(self, query, rs):
        return None


def test_the_search_takes_the_models_least_error_where_rs_disagrees(demo):
    engine, catalog = demo
    warm = [parse_count_query(SINGLE, catalog), parse_count_query(JOIN, catalog)]
    oracle = _rs_by_relations(1.0, 7.0)
    result = SensitivitySearch(engine, catalog, beta=0.1, config=SearchConfig(rollouts=6, seed=2), oracle=oracle,
                               error_model=_Inverse()).run(warm)
    assert len(result.query.relations) >= 2 and result.predicted_error == 93.0
    assert result.pruned == 0  # no floor, no pruning


def test_the_tuple_floor_is_never_a_one_relation_global_value(demo):
    _, catalog = demo
    single, join = parse_count_query(SINGLE, catalog), parse_count_query(JOIN, catalog)
    model = TupleUnitError(MECHANISM)
    assert model.floor(single, 1.0) is None  # a one-relation prefix grows into joins: GS bounds nothing there
    # a two-relation prefix: the smooth half-width at its RS, below every extension's (RS does not fall)
    assert model.floor(join, 4.0) == model.error(join, 4.0) <= model.error(join, 4.5)
    assert model.error(single, 4.0) == 3.0 < model.floor(join, 0.9)


def test_the_person_model_is_the_person_releases_own_prediction(demo):
    engine, catalog = demo
    catalog = catalog.with_private([t for t in TABLES if t not in PUBLIC_TABLES and t not in STAFF])
    settings = Settings.model_validate({"privacy": {"unit": "Patient", "max_contribution": 16}})
    model = error_model(MECHANISM, engine, catalog, settings)
    assert isinstance(model, PersonUnitError) and model.epsilon == 1
    query = parse_count_query(SINGLE, catalog)
    planned = plan_person_release(query, catalog=catalog, settings=settings, epsilon=model.epsilon, copy=engine)
    assert model.error(query, 123.0) == float(predicted_half_width(planned, engine, catalog))  # RS plays no part
    assert model.floor(query, 1.0) is None
    # a formulation the person unit cannot release (a staff table that reaches no patient, made private): infinite
    staff_private = catalog.with_private([t for t in TABLES if t not in PUBLIC_TABLES])
    evaluator = QueryEvaluator(engine, staff_private, _rs_by_relations(1.0, 1.0),
                               error_model=error_model(MECHANISM, engine, staff_private, settings))
    assert evaluator.error(parse_count_query(SINGLE, staff_private)) == math.inf


def test_without_a_person_unit_the_model_is_the_tuple_units(demo):
    engine, catalog = demo
    assert isinstance(error_model(MECHANISM, engine, catalog, None), TupleUnitError)
    assert isinstance(error_model(MECHANISM, engine, catalog, Settings()), TupleUnitError)


class _Flat:
    """Every formulation predicts the same error (as COUNT(DISTINCT person) does under a person unit)."""

    basis = "stand-in"

    def error(self, query, rs):
        return 14.0

    def floor(self, query, rs):
        return None


def test_equal_predicted_errors_fall_back_to_the_lower_rs(demo):
    engine, catalog = demo
    warm = [parse_count_query(JOIN, catalog), parse_count_query(SINGLE, catalog)]  # the join is seen first
    result = SensitivitySearch(engine, catalog, beta=0.1, config=SearchConfig(rollouts=0), oracle=_rs_by_relations(1.0, 7.0),
                               error_model=_Flat()).run(warm)
    assert len(result.query.relations) == 1 and result.synthetic_rs == 1.0 and result.predicted_error == 14.0
