"""The DP text-to-SQL benchmark's ground truth and scoring on a tiny SQLite database."""

from __future__ import annotations

import sqlite3

import pytest

from benchmarks.dp_text2sql import Item, RealRS, build_ground_truth, enumerate_formulations, norm_key, pick_root, score
from pimento.engines import open_engine
from pimento.mechanisms import mechanism_for
from pimento.sql import parse_count_query

GOLD = (
    "SELECT COUNT(*) FROM models AS m JOIN makers AS k ON m.Maker = k.Id "
    "JOIN countries AS c ON k.Country = c.CountryId WHERE c.CountryId = 1"
)


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("cars") / "cars.sqlite")
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE countries (CountryId INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE makers (Id INTEGER PRIMARY KEY, name TEXT, Country INTEGER REFERENCES countries (CountryId));
        CREATE TABLE models (ModelId INTEGER PRIMARY KEY, Maker INTEGER REFERENCES makers (Id), name TEXT);
        INSERT INTO countries VALUES (1, 'usa'), (2, 'japan');
        INSERT INTO makers VALUES (1, 'ford', 1), (2, 'gm', 1), (3, 'honda', 2), (4, 'tesla', 1);
        INSERT INTO models VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 2, 'c'), (4, 3, 'd'), (5, 3, 'e'), (6, 1, 'f');
        """
    )
    con.close()
    return path


def test_root_is_the_parentless_table_above_the_most_tables(db):
    engine = open_engine(db)
    try:
        assert pick_root(engine.introspect()) == "countries"
    finally:
        engine.close()


def test_enumeration_moves_the_filter_through_the_key_and_drops_the_dimension(db):
    engine = open_engine(db)
    catalog = engine.introspect()
    engine.close()
    gold = parse_count_query(GOLD, catalog)
    keys = {norm_key(q) for q in enumerate_formulations(gold, catalog, max_relations=3)}
    assert norm_key(gold) in keys
    short = parse_count_query("SELECT COUNT(*) FROM models m JOIN makers k ON m.Maker = k.Id WHERE k.Country = 1", catalog)
    assert norm_key(short) in keys


def test_ground_truth_keeps_correct_formulations_and_scores_choices(db):
    beta = mechanism_for("1", "1e-6").beta_float()
    real = RealRS(beta, {})
    item = Item("t-0", "spider-dev", "cars", db, "How many models are made in the usa?", (GOLD,), "sqlite")
    try:
        gt = build_ground_truth([item], real)["t-0"]
        assert gt["answer"] == 4
        assert all(f["rs"] >= gt["min_rs"] for f in gt["formulations"])
        sqls = [f["sql"] for f in gt["formulations"]]
        assert len(sqls) >= 2 and gt["q_star"] == sqls[0]
        catalog = real.catalog(db)
        best = parse_count_query(gt["q_star"], catalog)
        assert score({}, gt, best, real)["joint"] is True
        wrong = parse_count_query("SELECT COUNT(*) FROM countries WHERE CountryId = 1", catalog)
        s = score({}, gt, wrong, real)
        assert s["acc"] is False and s["joint"] is False
        assert score({}, gt, None, real) == {
            "acc": False, "is_min": False, "joint": False, "rs_real": None, "beat_gt": False, "joint_same_grain": False
        }
    finally:
        real.close()
