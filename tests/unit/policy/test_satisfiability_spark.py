"""The satisfiability search on Spark where a negative norm holds a cell under another subject.

Spark correlates one level up only, so there the cells a negative norm holds under a subject
other than the permit's (``f = 2`` in :func:`pimento.policy.satisfiability.witness`) are tested
as a join of the candidate flows with that norm's view, minus (EXCEPT) those it prohibits. The
candidates' alias was ``c``, which the condition subqueries of the formula also use, so the
recipient test read the condition view's own column: any recipient counted as treating the
subject, and Spark returned a witness the policy prohibits. Here the witness Spark returns must
be a flow the DuckDB enforcer authorizes.
"""

from __future__ import annotations

import copy

import pytest
import yaml
from spark_support import SPARK_MARKS

from pimento.demo.hospital import create_demo
from pimento.engines.database import load_database
from pimento.policy import Enforcer, compile_policy, example_policy_path, policy_from_dict
from pimento.policy.satisfiability import witness

pytestmark = SPARK_MARKS


def _policy(norms):
    raw = copy.deepcopy(yaml.safe_load(open(example_policy_path(), encoding="utf-8")))
    # the notes again, under their attending's identifier as the subject: a cell both norms hold, two subjects
    raw["grounding"]["data_types"]["notes_by_attending"] = {
        "locations": [{"relation": "Visit", "attribute": "note", "subject": "attending_id"}]}
    raw["norms"] = norms
    return policy_from_dict(raw)


PERMIT = {"id": "P", "sign": "permit", "sender": "any", "recipient": "any", "data": ["clinical_notes"], "purpose": "treatment"}


@pytest.fixture(scope="module")
def databases(tmp_path_factory):
    from pimento.engines.spark_engine import write_spark_deployment

    root = tmp_path_factory.mktemp("sat_spark")
    duck = root / "duck" / "hospital.duckdb"
    create_demo(duck, patients=80, seed=5)
    spark = write_spark_deployment(duck, root / "spark")  # before DuckDB opens the file read-only (hardened)
    dbs = load_database(duck), load_database(spark)
    yield dbs
    for db in dbs:
        db.close()


def test_spark_witness_is_a_flow_the_policy_permits(databases) -> None:
    duck, spark = databases
    policy = _policy([PERMIT, {"id": "D", "sign": "deny", "data": ["notes_by_attending"],
                               "condition": "recipient_treats_patient"}])
    on_duck = compile_policy(policy, duck.catalog, duck.engine)
    on_spark = compile_policy(policy, spark.catalog, spark.engine)
    found = witness(on_spark, spark.engine, on_spark.norm("P"), "treatment", True)
    assert found is not None and witness(on_duck, duck.engine, on_duck.norm("P"), "treatment", True) is not None
    enforcer = Enforcer(on_duck, duck.engine, duck.catalog)
    ctx = enforcer.context(f"employee:{found[0]}", f"employee:{found[1]}", "treatment")
    cells = {(r, str(k), a) for r, k, a in enforcer.authorized_cells(ctx, "SELECT visit_id, note FROM Visit")}
    assert (found[2], str(found[3]), found[4]) in cells, found


def test_spark_finds_no_witness_where_every_flow_is_prohibited(databases) -> None:
    _, spark = databases
    policy = _policy([PERMIT, {"id": "D", "sign": "deny", "data": ["notes_by_attending"],
                               "condition": {"all": [{"purpose": "research"}]}}])
    on_spark = compile_policy(policy, spark.catalog, spark.engine)
    assert witness(on_spark, spark.engine, on_spark.norm("P"), "treatment", True) is None
    assert witness(on_spark, spark.engine, on_spark.norm("P"), "treatment", False) is not None
