"""The demo's question, answered offline, yields both formulations of the paper's running example."""

from __future__ import annotations

import pytest

from pimento.engines import open_engine
from pimento.nl import ValueIndex, translate

hospital = pytest.importorskip("pimento.demo.hospital")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    path = tmp_path_factory.mktemp("demo") / "hospital.duckdb"
    hospital.create_demo(str(path), patients=300, seed=7)
    engine = open_engine(str(path))
    catalog = engine.introspect()
    # the demo stands in for its own synthetic copy here (no synthesizer in this test)
    values = ValueIndex.from_engine(engine, catalog)
    yield engine, catalog, values
    engine.close()


def test_warfarin_question_has_both_formulations(demo):
    engine, catalog, values = demo
    candidates = translate(hospital.DEMO_QUESTION, catalog, values=values, k=10)
    shapes = [frozenset(r.table for r in c.query.relations) for c in candidates]
    assert frozenset({"Prescription", "Employee"}) in shapes
    assert frozenset({"MedicationOrders", "Visit", "Employee"}) in shapes
    expected = engine.execute(hospital.DEMO_SQL_PRESCRIPTION).scalar()
    for c, shape in zip(candidates, shapes):
        if shape in ({"Prescription", "Employee"}, {"MedicationOrders", "Visit", "Employee"}):
            assert "'warfarin'" in c.sql and "'Cardiology'" in c.sql
            assert c.query.count.distinct and c.query.count.column.column == "pat_id"
            assert engine.execute(c.query.to_sql("duckdb")).scalar() == expected
    # the top candidate uses both literals
    assert "'warfarin'" in candidates[0].sql and "'Cardiology'" in candidates[0].sql
