"""Neighbour invariance of what the HTTP service sends an analyst (issue 18's harness, tests/neighbours.py).

The same requests -- the SQL preview (issue 28), a release, the same release again (cached) and a third time (from the
process's answer memo), a refused query, the budget and
the history -- on a database and on a neighbour (one private tuple added or removed), with the
noise fixed and a fresh ledger each: every field must be equal except the noisy value, what is
derived from it (interval, the clamp and its flag) and the DP bound of RS. The interval, clamped,
must be recomputable from the unclamped value and the published bound.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neighbours import Clinic, VALUE_FIELDS, assert_neighbour_invariant, clinics, fixed_noise, neighbours, few_examples

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")

ATTACK = "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.pat_id = 1 AND v.diagnosis = 'hiv'"
REFUSED = "SELECT pat_id, COUNT(*) FROM Visit GROUP BY pat_id HAVING COUNT(*) > 1"  # (a GROUP BY alone is answered since issue 25)
PER_ANSWER = VALUE_FIELDS + ("noise_scale_upper", "noise_scale_upper_exact", "value_unclamped", "clamped")
ALLOW = tuple(f"{p}.{f}" for p in ("sql", "cached", "memoized") for f in PER_ANSWER) + tuple(
    f"history.answers.*.{f}" for f in ("value", "value_exact", "interval", "interval.*", "value_unclamped", "clamped", "time")
)


def _service(sql: str):
    def run(path: Path, rng) -> dict:
        from fastapi.testclient import TestClient

        from pimento.service.app import ServiceOptions, create_app
        from pimento.service.deployment import Deployment

        deployment = Deployment(path)
        _entry, key = deployment.add_key("ann")
        client = TestClient(create_app(deployment, ServiceOptions(rate=1000, burst=1000)), raise_server_exceptions=False)
        headers = {"Authorization": f"Bearer {key}"}
        body = {"sql": sql, "epsilon": "1", "delta": "1e-6"}
        memo_answer, hits = deployment.memo_answer, []

        def counted(*args, **kwargs):
            found = memo_answer(*args, **kwargs)
            hits.append(found is not None)
            return found

        deployment.memo_answer = counted  # type: ignore[method-assign]
        with fixed_noise(rng.getrandbits(32)):
            out = {
                "sql_preview": client.post("/v1/sql/preview", headers=headers, json=body).json(),  # before the release: nothing spent yet
                "sql": client.post("/v1/sql", headers=headers, json=body).json(),
                "cached": client.post("/v1/sql", headers=headers, json=body).json(),
                "memoized": client.post("/v1/sql", headers=headers, json=body).json(),  # the process's memo (release/answer_memo.py)
                "refused": client.post("/v1/sql", headers=headers, json={**body, "sql": REFUSED}).json(),
                "budget": client.get("/v1/budget", headers=headers).json(),
                "history": client.get("/v1/history", headers=headers).json(),
            }
        out["memo_hits"] = sum(hits)  # not sent to the analyst: how many answers came from the process's memo
        return out

    return run


def clamped_interval_from_public_fields(out: dict) -> None:
    from pimento.mechanisms.smooth import GlobalLaplace, mechanism_for

    for name in ("sql", "cached"):
        answer = out[name]
        assert "error" not in answer, answer
        value = Fraction(str(answer["value_unclamped"]))
        bound = Fraction(answer["noise_scale_upper_exact"])
        if answer["mechanism"] == "global_laplace":
            half = GlobalLaplace.of(answer["epsilon"]).half_width(bound)
        else:
            mech = mechanism_for(answer["epsilon"], answer["delta"])
            half = mech.half_width(bound, mech._q_bound)
        lo, hi = (Fraction(x) for x in answer["interval_exact"])
        assert (lo, hi) == (max(value - half, 0), max(value + half, 0)), (answer, half)
        assert Fraction(answer["value_exact"]) == max(value, 0) and answer["clamped"] == (value < 0 or value - half < 0)


def _attack_pair(c: int, change: int) -> tuple[Clinic, Clinic]:
    def clinic(hiv: int) -> Clinic:
        patients = tuple((i, f"P{i}", 1950 + i) for i in range(1, 5))
        visits = [(100 + j, 1, "hiv") for j in range(hiv)] + [(200 + j, 1 + j % 4, "flu") for j in range(9)]
        return Clinic({"Patient": patients, "Visit": tuple(visits), "Prescription": ()})

    return clinic(c), clinic(c + change)


@pytest.mark.parametrize("change", [-1, 1])
def test_the_finding_1_attack_through_the_service(tmp_path, change):
    d, d2 = _attack_pair(5, change)
    assert d.count(ATTACK) != d2.count(ATTACK)
    a, _b = assert_neighbour_invariant(
        _service(ATTACK), d, d2, tmp_path, allow=ALLOW, derived=clamped_interval_from_public_fields, what=f"service, {change:+d} HIV visit"
    )
    assert a["cached"]["cached"] is True and a["refused"]["error"]["type"] == "UnsupportedQuery"
    assert a["memo_hits"] == 1 and a["memoized"] == a["cached"]  # the memo's answer is the release path's, budget included
    assert "error" not in a["sql_preview"] and a["sql_preview"]["cost"]["epsilon"] == "1", a["sql_preview"]
    assert len(a["history"]["answers"]) == 1


@pytest.mark.slow
@few_examples(4)
@given(data=st.data())
def test_random_neighbours_through_the_service(tmp_path_factory, data):
    d = data.draw(clinics())
    what, d2 = data.draw(neighbours(d))
    assert_neighbour_invariant(
        _service("SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.diagnosis = 'flu'"),
        d, d2, tmp_path_factory.mktemp("n"), allow=ALLOW, derived=clamped_interval_from_public_fields, what=what,
    )


GROUPED = "SELECT v.diagnosis, AVG(p.birth_year) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id GROUP BY v.diagnosis"
GROUPED_CONFIG = '[domains]\n"Visit.diagnosis" = ["flu", "hiv", "asthma"]\n\n[bounds]\n"Patient.birth_year" = [1900, 2020]\n'
GROUPED_ALLOW = ALLOW + tuple(
    f"{p}.{f}" for p in ("sql", "cached", "memoized") for f in ("groups.*.value", "groups.*.value_exact", "groups.*.interval*", "groups.*.sum",
                                                    "groups.*.count", "releases.*.noise_scale_upper", "releases.*.noise_scale_upper_exact")
)


def test_a_grouped_release_through_the_service(tmp_path):
    """Issue 25: a grouped AVG through /v1/sql (released, cached, in the history): only the noisy values and their bounds differ."""
    d, d2 = _attack_pair(5, 1)
    a, _b = assert_neighbour_invariant(_service(GROUPED), d, d2, tmp_path, allow=GROUPED_ALLOW, config=GROUPED_CONFIG,
                                       what="service, grouped AVG, +1 HIV visit")
    assert a["sql"]["aggregate"] == "avg" and [g["key"] for g in a["sql"]["groups"]] == [["flu"], ["hiv"], ["asthma"]]
    assert a["cached"]["cached"] is True and a["cached"]["groups"] == a["sql"]["groups"] and a["memoized"] == a["cached"]
    assert len(a["history"]["answers"]) == 1
