"""Compiler, checks and clear errors on the shipped HIPAA policy and small variants."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import yaml

from pimento.errors import PolicyError
from pimento.policy import compile_policy, example_policy_path, policy_from_dict, run_checks

GOLDEN = Path(__file__).parent / "golden"


def _raw() -> dict:
    return yaml.safe_load(Path(example_policy_path()).read_text())


def _compile(raw: dict, hospital):
    policy = policy_from_dict(raw)
    compiled = compile_policy(policy, hospital.catalog, hospital.engine)
    run_checks(compiled, hospital.catalog, hospital.engine, policy=policy)
    return compiled


def test_every_clause_has_views(compiled) -> None:
    report = compiled.checks["coverage"]
    assert report["ok"] and report["clauses"] == len(compiled.norms)
    views = compiled.views("N1")
    assert {"sender_view", "recipient_view", "subject_view", "data_view"} <= set(views)
    assert "condition_view:supervises" in views and "WITH RECURSIVE" in views["condition_view:supervises"]


def test_hiv_prohibition_implies_diagnoses(compiled) -> None:
    implied = {(i["norm"], i["location"]) for i in compiled.checks["information_implication"]}
    assert ("N4", "DxCategory.diagnosis") in implied
    assert ("N4", "Visit.diagnosis") in implied
    assert ("N4", "Discharge.finaldiagnosis") in implied
    n1 = next(i for i in compiled.checks["information_implication"] if i["location"] == "Visit.diagnosis")
    assert "N1" in n1["overrides_permits_of"]


def test_identical_role_views_are_merged(compiled) -> None:
    assert compiled.checks["redundancy"]["merged"]["roles"] == {"physician": "attending_physician"}
    assert all(n.sender != "physician" and n.recipient != "physician" for n in compiled.norms)


def test_every_positive_norm_has_a_witness(compiled) -> None:
    sat = compiled.checks["satisfiability"]
    assert set(sat["witnesses"]) == {n.id for n in compiled.norms if n.positive}
    assert sat["unsatisfied"] == {}


def test_golden_views(compiled, hospital) -> None:
    text = ""
    for nid in ("N1", "N4"):
        for name, sql in compiled.views(nid).items():
            text += f"-- {nid} {name}\n{sql}\n\n"
    path = GOLDEN / "hospital_hipaa_views.sql"
    if os.environ.get("PIMENTO_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), "compiled views changed; rerun with PIMENTO_UPDATE_GOLDEN=1 and review the diff"
    # execute-and-compare: every golden view runs on DuckDB
    for block in path.read_text().split("\n\n"):
        sql = "\n".join(line for line in block.splitlines() if not line.startswith("--")).strip()
        if sql and sql != "-- any":
            hospital.engine.execute(f"SELECT COUNT(*) FROM ({sql}) AS v")


def test_compiled_policy_round_trips_json(compiled) -> None:
    import json

    from pimento.policy import CompiledPolicy

    again = CompiledPolicy.from_dict(json.loads(json.dumps(compiled.to_dict(), default=str)))
    assert again.to_dict() == json.loads(json.dumps(compiled.to_dict(), default=str))


@pytest.mark.parametrize(
    ("mutate", "clause", "words"),
    [
        (lambda r: r["norms"][0].__setitem__("recipient", "intern"), "N1", "unknown recipient role 'intern'"),
        (lambda r: r["norms"][2].__setitem__("purpose", "marketing"), "N3", "unknown purpose 'marketing'"),
        (lambda r: r["norms"][0].__setitem__("condition", "is_on_call"), "N1", "unknown condition 'is_on_call'"),
        (lambda r: (r["grounding"]["data_types"].__setitem__("genetic_data", {"unmapped": True}),
                    r["norms"][2].__setitem__("data", ["genetic_data"])), "N3", "cannot be grounded"),
        (lambda r: r["grounding"]["conditions"]["supervises"].__setitem__("sql", "SELECT a AS sender FROM Supervisor"),
         "grounding.conditions.supervises", "table 'Supervisor'"),
        (lambda r: r["grounding"]["data_types"]["diagnosis"]["locations"][0].__setitem__("attribute", "dx"),
         "grounding.data_types.diagnosis", "no column 'dx'"),
    ],
)
def test_clause_that_cannot_be_grounded_is_named(hospital, mutate, clause, words) -> None:
    raw = copy.deepcopy(_raw())
    mutate(raw)
    with pytest.raises(PolicyError) as err:
        _compile(raw, hospital)
    assert err.value.clause == clause
    assert words in err.value.message


def test_unsatisfiable_policy_is_reported(hospital) -> None:
    raw = copy.deepcopy(_raw())
    raw["norms"] = [
        {"id": "P", "sign": "permit", "recipient": "researcher", "data": ["diagnosis"], "purpose": "research"},
        {"id": "D", "sign": "deny", "data": ["diagnosis", "demographics"]},
    ]
    with pytest.raises(PolicyError) as err:
        _compile(raw, hospital)
    assert "unsatisfiable" in err.value.message and "P" in err.value.message
    assert "prohibited by a negative norm" in err.value.message


def test_contradiction_is_reported_statically(hospital) -> None:
    raw = copy.deepcopy(_raw())
    raw["norms"].append({"id": "D9", "sign": "deny", "data": ["diagnosis_catalog"]})
    compiled = _compile(raw, hospital)
    assert {"permit": "N5", "deny": "D9", "reason": "D9 unconditionally prohibits every flow N5 permits"} in \
        compiled.checks["satisfiability"]["contradictions"]
    assert "N5" in compiled.checks["satisfiability"]["unsatisfied"]


def test_bad_yaml_names_the_clause() -> None:
    raw = copy.deepcopy(_raw())
    raw["norms"][1]["sign"] = "allow"
    with pytest.raises(PolicyError) as err:
        policy_from_dict(raw)
    assert err.value.clause == "N2"
