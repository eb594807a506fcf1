"""Neighbour invariance of the four release modes (issue 16), with issue 18's harness.

A small policy over the harness clinic authorizes, for the context (patient:1 -> patient:1, stats),
the flu visits (all their cells) and the ids of patients born before 1980. Then:

* ``dp`` and ``contextual``: on every neighbour (one tuple added or removed) only the noisy value,
  what derives from it, and the separately charged DP bound may differ;
* ``split``: the same on *contextual* neighbours (the authorized cells, by provenance, equal on D
  and D'), the authorized part included; on other neighbours the authorized part may differ too
  (it is released under CI);
* ``ci``: on contextual neighbours the whole answer is equal (it reads authorized cells only).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from neighbours import VALUE_FIELDS, Clinic, assert_neighbour_invariant, cli_json, clinics, neighbours, outcome, few_examples

from policy_config import configure_policy
from pimento.mechanisms.samplers import fixed_noise_for_tests
from pimento.release.session import Session

EPS, DELTA = "1", "1e-6"
ALLOW = VALUE_FIELDS + ("noise_scale_upper", "noise_scale_upper_exact")
CTX = "sender=patient:1,recipient=patient:1,purpose=stats"

POLICY = """
version: 1
name: clinic-stats
description: flu visits and the ids of older patients may flow to a patient for statistics
grounding:
  principals:
    patient: {relation: Patient, key: pat_id}
  subject_principal: patient
  roles:
    patient: {principal: patient}
  data_types:
    flu_visits:
      locations:
        - {relation: Visit, attribute: visit_id, where: "diagnosis = 'flu'"}
        - {relation: Visit, attribute: pat_id, where: "diagnosis = 'flu'"}
        - {relation: Visit, attribute: diagnosis, where: "diagnosis = 'flu'"}
    ids:
      locations:
        - {relation: Patient, attribute: pat_id, where: "birth_year < 1980"}
  purposes:
    stats: {values: [stats]}
norms:
  - id: P1
    sign: permit
    sender: patient
    recipient: patient
    subject: patient
    data: [flu_visits, ids]
    purpose: stats
    source: flu visits and the ids of older patients are public for statistics
"""

COUNTS = (
    "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id",
    "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.diagnosis = 'flu'",
    "SELECT COUNT(*) FROM Visit v JOIN Prescription r ON v.visit_id = r.visit_id",
)
CI_SQL = (
    "SELECT diagnosis, COUNT(*) AS n FROM Visit GROUP BY diagnosis ORDER BY diagnosis",
    "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id",
)
ALL_CELLS = "SELECT p.pat_id, p.name, p.birth_year, v.visit_id, v.pat_id, v.diagnosis, r.rx_id, r.visit_id, r.drug FROM Patient p, Visit v, Prescription r"

SLOW = few_examples(8, filter_too_much=True)

_COMPILED: dict[str, str] = {}


def compiled_policy() -> str:
    """The clinic policy compiled once (it reads the schema only), as a JSON file path."""
    if "path" not in _COMPILED:
        from pimento.engines.database import load_database
        from pimento.policy import compile_policy, load_policy

        folder = Path(tempfile.mkdtemp(prefix="pimento-modes-"))
        (folder / "clinic.yaml").write_text(POLICY)
        db_path = Clinic({"Patient": ((1, "A", 1970),), "Visit": (), "Prescription": ()}).write(folder / "c.duckdb")
        db = load_database(db_path)
        try:
            compiled = compile_policy(load_policy(str(folder / "clinic.yaml")), db.catalog, db.engine)
        finally:
            db.close()
        (folder / "compiled.json").write_text(json.dumps(compiled.to_dict()))
        _COMPILED["path"] = str(folder / "compiled.json")
    return _COMPILED["path"]


def authorized_cells(clinic: Clinic) -> frozenset:
    """A_c of the context on ``clinic``, by provenance (custodian tool, tests only)."""
    from pimento.engines.database import load_database
    from pimento.policy import Enforcer
    from pimento.policy import load_compiled_policy

    folder = Path(tempfile.mkdtemp(prefix="pimento-cells-"))
    db = load_database(clinic.write(folder / "c.duckdb"))
    try:
        enforcer = Enforcer(load_compiled_policy(compiled_policy()), db.engine, db.catalog)
        return frozenset(enforcer.authorized_cells(enforcer.context("patient:1", "patient:1", "stats"), ALL_CELLS))
    finally:
        db.close()


def _run(sql: str, mode: str):
    policy = compiled_policy()

    def run(path: Path, rng) -> dict:
        configure_policy(path, policy)  # the custodian's step: the deployment's policy
        with fixed_noise_for_tests(rng), Session(path, analyst="ann") as session:
            if mode == "ci":
                answer = outcome(lambda: session.release_sql(sql, mode="ci", context=CTX))
            else:
                answer = outcome(lambda: session.release_sql(sql, EPS, DELTA, mode=mode, context=CTX))
        return {**answer, "budget": cli_json(["budget", "--db", str(path)], 0)}

    return run


def test_the_policy_authorizes_something_and_not_everything():
    clinic = Clinic({"Patient": ((1, "A", 1970), (2, "B", 1990)), "Visit": ((100, 1, "flu"), (101, 2, "hiv")), "Prescription": ()})
    cells = authorized_cells(clinic)
    assert ("Visit", "100", "diagnosis") in cells and ("Patient", "1", "pat_id") in cells
    assert not any(k == "101" for _, k, _ in cells) and ("Patient", "2", "pat_id") not in cells


@pytest.mark.slow
@SLOW
@given(data=st.data(), d=clinics(), sql=st.sampled_from(COUNTS), mode=st.sampled_from(["dp", "contextual"]))
def test_dp_and_contextual_modes_on_every_neighbour(tmp_path_factory, data, d, sql, mode):
    what, d2 = data.draw(neighbours(d))
    a, _ = assert_neighbour_invariant(_run(sql, mode), d, d2, tmp_path_factory.mktemp("m"), allow=ALLOW, what=f"{mode}: {what}; {sql}")
    assert "error" not in a, a


@pytest.mark.slow
@SLOW
@given(data=st.data(), d=clinics(), sql=st.sampled_from(COUNTS))
def test_split_mode_on_contextual_neighbours(tmp_path_factory, data, d, sql):
    what, d2 = data.draw(neighbours(d))
    assume(authorized_cells(d) == authorized_cells(d2))
    a, _ = assert_neighbour_invariant(_run(sql, "split"), d, d2, tmp_path_factory.mktemp("m"), allow=ALLOW, what=f"split: {what}; {sql}")
    assert "error" not in a, a
    assert "authorized_exact" in a


@pytest.mark.slow
@SLOW
@given(data=st.data(), d=clinics(), sql=st.sampled_from(COUNTS))
def test_split_mode_on_every_neighbour_only_the_ci_part_may_move(tmp_path_factory, data, d, sql):
    what, d2 = data.draw(neighbours(d))
    assert_neighbour_invariant(_run(sql, "split"), d, d2, tmp_path_factory.mktemp("m"), allow=ALLOW + ("authorized_exact",),
                               what=f"split: {what}; {sql}")


@pytest.mark.slow
@SLOW
@given(data=st.data(), d=clinics(), sql=st.sampled_from(CI_SQL))
def test_ci_mode_on_contextual_neighbours_is_identical(tmp_path_factory, data, d, sql):
    what, d2 = data.draw(neighbours(d))
    assume(authorized_cells(d) == authorized_cells(d2))
    a, _ = assert_neighbour_invariant(_run(sql, "ci"), d, d2, tmp_path_factory.mktemp("m"), allow=(), what=f"ci: {what}; {sql}")
    assert a["mode"] == "ci", a


def test_ci_mode_differs_when_an_authorized_tuple_is_added(tmp_path):
    """The CI test can fail: adding a flu visit (authorized) changes the CI answer."""
    d = Clinic({"Patient": ((1, "A", 1970),), "Visit": ((100, 1, "flu"),), "Prescription": ()})
    d2 = d.with_row("Visit", (101, 1, "flu"))
    assert authorized_cells(d) != authorized_cells(d2)
    with pytest.raises(AssertionError):
        assert_neighbour_invariant(_run(CI_SQL[0], "ci"), d, d2, tmp_path, allow=())
