"""The reward benchmark's measures (benchmarks/search_error_reward.py) on a tiny SQLite schema."""

from __future__ import annotations

import sqlite3

import pytest

from benchmarks.search_error_reward import _half_width, _min_half_width, _realised
from pimento.engines import open_engine
from pimento.mechanisms import mechanism_for
from pimento.sql import parse_count_query

ONE = "SELECT COUNT(*) FROM models"
JOIN = "SELECT COUNT(*) FROM models AS m JOIN makers AS k ON m.Maker = k.Id"
MECHANISM = mechanism_for("1", "1e-6")


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("cars") / "cars.sqlite")
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE makers (Id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE models (ModelId INTEGER PRIMARY KEY, Maker INTEGER REFERENCES makers (Id), name TEXT);
        """
    )
    con.close()
    engine = open_engine(path)
    try:
        yield engine.introspect()
    finally:
        engine.close()


def test_a_one_relation_count_is_priced_at_its_global_sensitivity_whatever_its_rs(catalog):
    one, join = parse_count_query(ONE, catalog), parse_count_query(JOIN, catalog)
    assert _half_width(MECHANISM, one, 40.0) == _half_width(MECHANISM, one, 1.0) == 3.0
    assert _half_width(MECHANISM, join, 40.0) > _half_width(MECHANISM, join, 1.0) > 3.0
    assert _half_width(MECHANISM, join, None) is None


def test_the_least_half_width_among_correct_formulations_may_be_a_higher_rs(catalog):
    gt = {"formulations": [{"sql": JOIN, "rs": 2.0}, {"sql": ONE, "rs": 5.0}]}
    assert _min_half_width(gt, MECHANISM, catalog) == 3.0


def test_realised_noise_is_seeded(catalog):
    join = parse_count_query(JOIN, catalog)
    first = _realised(MECHANISM, join, 2.0, 100, 20, seed=3)
    assert first == _realised(MECHANISM, join, 2.0, 100, 20, seed=3) and first > 0
