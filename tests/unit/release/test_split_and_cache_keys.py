"""Tests that kill two surviving mutants of the release path (issue 23's mutation round).

* split mode: the exact part is the count over the *authorized* data only (brute-forced from the
  context's authorized cells), never the whole count; the DP part is computed on the remainder
  (with the noise fixed to 0 through the test hook, value == total - exact part);
* the answer cache: an answer computed for another context, another analyst or another delta is
  never returned as ``cached`` (the analyst would learn who asked, and pay nothing for it).
"""

from __future__ import annotations

import itertools
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from neighbours import Clinic, NoNoise, clinics, few_examples

from pimento.mechanisms.samplers import fixed_noise_for_tests
from pimento.release.session import Session
from policy_config import configure_policy
from system.test_modes_neighbour_invariance import authorized_cells, compiled_policy

CTX = "sender=patient:1,recipient=patient:1,purpose=stats"
OTHER_CTX = "sender=patient:2,recipient=patient:2,purpose=stats"
JOIN = "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id"

# Each query with its brute force: the join results (one row per relation, keyed by alias), the
# WHERE, and the boundary columns of each alias (join columns, WHERE columns: docs/modes.md).
_P, _V, _R = ("pat_id", "name", "birth_year"), ("visit_id", "pat_id", "diagnosis"), ("rx_id", "visit_id", "drug")
QUERIES = {
    JOIN: ({"p": ("Patient", _P), "v": ("Visit", _V)}, lambda r: r["p"]["pat_id"] == r["v"]["pat_id"],
           {"p": ("pat_id",), "v": ("pat_id",)}),
    JOIN + " WHERE v.diagnosis = 'flu'": ({"p": ("Patient", _P), "v": ("Visit", _V)},
                                          lambda r: r["p"]["pat_id"] == r["v"]["pat_id"] and r["v"]["diagnosis"] == "flu",
                                          {"p": ("pat_id",), "v": ("pat_id", "diagnosis")}),
    "SELECT COUNT(*) FROM Visit v WHERE v.diagnosis = 'flu'": ({"v": ("Visit", _V)}, lambda r: r["v"]["diagnosis"] == "flu",
                                                                {"v": ("diagnosis",)}),
    "SELECT COUNT(*) FROM Visit v JOIN Prescription r ON v.visit_id = r.visit_id": (
        {"v": ("Visit", _V), "r": ("Prescription", _R)}, lambda r: r["v"]["visit_id"] == r["r"]["visit_id"],
        {"v": ("visit_id",), "r": ("visit_id",)}),
}


def brute_force(clinic: Clinic, sql: str, cells: frozenset | None = None) -> tuple[int, int]:
    """(the whole count, the authorized part): join results whose every tuple has its boundary cells authorized."""
    relations, where, boundary = QUERIES[sql]
    cells = authorized_cells(clinic) if cells is None else cells
    aliases = list(relations)
    tables = [[dict(zip(relations[a][1], row)) for row in clinic.table(relations[a][0])] for a in aliases]
    key_of = {a: relations[a][1][0] for a in aliases}
    total = authorized = 0
    for combo in itertools.product(*tables):
        result = dict(zip(aliases, combo))
        if not where(result):
            continue
        total += 1
        authorized += all(
            (relations[a][0], str(result[a][key_of[a]]), column) in cells for a in aliases for column in boundary[a]
        )
    return total, authorized


def _deploy(clinic: Clinic, folder: Path) -> Path:
    path = clinic.write(folder / "clinic.duckdb")
    configure_policy(path, compiled_policy())
    return path


def _split(path: Path, sql: str) -> dict:
    with fixed_noise_for_tests(NoNoise), Session(path) as s:
        return s.release_sql(sql, "1", "1e-6", mode="split", context=CTX).to_dict()


FIXED = Clinic({
    "Patient": ((1, "Ana Baker", 1970), (2, "Bo Chen", 1990), (3, "Cy Diaz", 1975)),
    "Visit": ((100, 1, "flu"), (101, 1, "hiv"), (102, 2, "flu"), (103, 3, "asthma"), (104, 3, "flu")),
    "Prescription": ((1000, 100, "warfarin"), (1001, 102, "insulin")),
})


def test_the_hook_source_draws_no_noise():
    from fractions import Fraction

    from pimento.mechanisms.samplers import rounded_laplace

    for scale in (Fraction(1), Fraction(1, 3), Fraction(7, 2), Fraction(10**6, 7)):
        assert rounded_laplace(scale, Fraction(1), NoNoise()) == 0


@pytest.mark.parametrize("sql", list(QUERIES))
def test_split_exact_part_is_the_authorized_count_and_the_dp_part_the_remainder(tmp_path, sql):
    """On a fixed clinic: the exact part is the brute-forced authorized count (2 of the 5 patient
    visits), never the whole count; the value (noise 0) is the whole count minus it."""
    total, authorized = brute_force(FIXED, sql)
    got = _split(_deploy(FIXED, tmp_path), sql)
    assert got["authorized_exact"] == authorized, (sql, got)
    assert got["value"] == total - authorized, (sql, got)
    assert got["value"] + got["authorized_exact"] == total
    if sql == JOIN:
        assert (total, authorized) == (5, 2)  # the brute force is not vacuous: 0 < authorized < total


@few_examples(4)
@given(clinic=clinics(max_patients=5, max_visits=8, max_prescriptions=4))
def test_split_parts_on_random_clinics(clinic):
    folder = Path(tempfile.mkdtemp(prefix="pimento-split-"))
    path = _deploy(clinic, folder)
    cells = authorized_cells(clinic)
    for sql in (JOIN, JOIN + " WHERE v.diagnosis = 'flu'"):
        total, authorized = brute_force(clinic, sql, cells)
        got = _split(path, sql)
        assert (got["authorized_exact"], got["value"]) == (authorized, total - authorized), (sql, clinic, got)


# ------------------------------------------------------------------ the answer cache


@pytest.fixture()
def clinic_db(tmp_path) -> Path:
    return _deploy(FIXED, tmp_path)


def _release(s: Session, **kwargs) -> dict:
    args = {"sql": JOIN, "epsilon": "1", "delta": "1e-6", **kwargs}
    return s.release_sql(args.pop("sql"), args.pop("epsilon"), args.pop("delta"), **args).to_dict()


@pytest.mark.parametrize("mode", ["split", "contextual"])
def test_an_answer_for_another_context_is_not_cached(clinic_db, mode):
    with fixed_noise_for_tests(random.Random(0)), Session(clinic_db) as s:
        first = _release(s, mode=mode, context=CTX)
        again = _release(s, mode=mode, context=CTX)
        assert again["cached"]  # the same request is cached: the key works
        assert again.get("authorized_exact") == first.get("authorized_exact")  # split: read again, the same part
        other = _release(s, mode=mode, context=OTHER_CTX)
        assert not other["cached"] and other["charge_id"] != first["charge_id"]
        assert len(s.ledger.charges(s.location)) == 2


def test_an_answer_for_another_analyst_is_not_cached(clinic_db):
    with fixed_noise_for_tests(random.Random(0)), Session(clinic_db) as s:
        ann = _release(s, analyst="ann")
        assert _release(s, analyst="ann")["cached"]
        bob = _release(s, analyst="bob")
        assert not bob["cached"] and bob["charge_id"] != ann["charge_id"]
        charged = {c.analyst for c in s.ledger.charges(s.location)}
        assert charged == {"ann", "bob"}  # bob pays for his own answer


def test_an_answer_for_another_delta_is_not_cached(clinic_db):
    with fixed_noise_for_tests(random.Random(0)), Session(clinic_db) as s:
        first = _release(s, delta="1e-6")
        assert _release(s, delta="1e-6")["cached"]
        other = _release(s, delta="2e-6")
        assert not other["cached"] and other["charge_id"] != first["charge_id"] and other["delta"] != first["delta"]
        assert len(s.ledger.charges(s.location)) == 2


# ------------------------------------------------------------------ a failure after the charge


def test_a_failing_authorized_part_of_a_cached_split_answer_halts_the_deployment(clinic_db, monkeypatch):
    """The authorized part of a cached split answer is read again after the (earlier) charge: if that
    fails, the deployment halts like after any post-charge failure (one fixed message, for every
    analyst, nothing charged) until the custodian resumes; the engine text goes to the audit log only."""
    from pimento.errors import DeploymentHaltedError, EngineError
    from pimento.release.modes import split as modes

    def broken(*_a, **_k):
        raise EngineError("Conversion Error: could not convert 'Ana Baker' to INT")

    with fixed_noise_for_tests(random.Random(0)), Session(clinic_db) as s:
        first = _release(s, mode="split", context=CTX)
        monkeypatch.setattr(modes, "authorized_part", broken)
        with pytest.raises(DeploymentHaltedError) as info:
            _release(s, mode="split", context=CTX)  # the DP part is cached: only the authorized part runs
        assert "Ana" not in str(info.value) and "Conversion" not in str(info.value)
        assert s.ledger.halts(s.location)
        monkeypatch.undo()
        with pytest.raises(DeploymentHaltedError):  # another analyst, another query: halted too, nothing charged
            _release(s, sql="SELECT COUNT(*) FROM Visit", analyst="bob")
        assert len(s.ledger.charges(s.location)) == 1
        assert any("Ana Baker" in str(r) for r in s.ledger.audit_rows())
        s.ledger.resume(s.location, "checked")
        assert _release(s, mode="split", context=CTX)["authorized_exact"] == first["authorized_exact"]
