"""Custodian endpoints for the synthetic copy and the policy: GET/POST /v1/synth, GET /v1/policy."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest

from service_support import CUSTODIAN_TOKEN, TESTCLIENT_WARNING, build_deployment

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)

CUSTODIAN = {"Authorization": f"Bearer {CUSTODIAN_TOKEN}"}


@pytest.fixture(scope="module")
def own(tmp_path_factory, standin_synthetic):
    """A deployment of its own: these tests replace its synthetic copy."""
    from fastapi.testclient import TestClient

    from pimento.service.app import ServiceOptions, create_app, token_digest
    from pimento.service.deployment import Deployment, SearchSettings

    db = build_deployment(tmp_path_factory.mktemp("synth_endpoint"), standin_synthetic, patients=150)
    deployment = Deployment(db, search=SearchSettings(rollouts=2, k=5))
    deployment.hold_open()
    client = TestClient(create_app(deployment, ServiceOptions(custodian_token_sha256=token_digest(CUSTODIAN_TOKEN), rate=1000.0, burst=1000)),
                        raise_server_exceptions=False)
    yield deployment, client
    deployment.close()


def _synthetic_charges(deployment):
    with deployment.ledger() as ledger:
        return [c for c in ledger.charges() if c.kind == "synthetic"]


def test_synth_and_policy_are_custodian_only(own):
    deployment, client = own
    _entry, key = deployment.add_key("ann")
    analyst = {"Authorization": f"Bearer {key}"}
    for method, path in (("get", "/v1/synth"), ("post", "/v1/synth"), ("get", "/v1/policy")):
        assert getattr(client, method)(path, headers=analyst, **({"json": {"epsilon": "1", "delta": "1e-6"}} if method == "post" else {})).status_code == 401
    assert client.get("/v1/policy", headers=CUSTODIAN).json() == {"policy": None, "modes": ["dp"]}
    me = client.get("/v1/me", headers=analyst).json()
    assert me["purposes"] == [] and me["modes"] == ["dp"]


def test_bad_parameters_are_refused_before_any_job_or_charge(own):
    deployment, client = own
    before = _synthetic_charges(deployment)
    for body in ({"epsilon": "abc", "delta": "1e-6"}, {"epsilon": "-1", "delta": "1e-6"}, {"epsilon": "1", "delta": "2"}):
        r = client.post("/v1/synth", headers=CUSTODIAN, json=body)
        assert r.status_code == 422 and r.json()["error"]["type"] == "PrivacyParameterError", r.text
    assert _synthetic_charges(deployment) == before and deployment.synth_jobs.latest() is None


def test_a_new_copy_is_charged_made_in_the_background_and_served_after_it(own):
    deployment, client = own
    status = client.get("/v1/synth", headers=CUSTODIAN).json()
    assert status["copy"]["usable"] and status["copy"]["epsilon"] == "1.6" and status["job"] is None
    started = client.post("/v1/synth", headers=CUSTODIAN, json={"epsilon": "0.5", "delta": "1e-7", "seed": 3})
    assert started.status_code == 202, started.text
    assert started.json()["state"] == "running"
    busy = client.post("/v1/synth", headers=CUSTODIAN, json={"epsilon": "0.5", "delta": "1e-7"})
    assert busy.status_code == 409 and busy.json()["error"]["type"] == "SynthesisRunning"
    deadline = time.monotonic() + 600
    while (job := client.get("/v1/synth", headers=CUSTODIAN).json()["job"])["state"] == "running":
        assert time.monotonic() < deadline, job
        time.sleep(0.5)
    assert job["state"] == "done", job["error"]
    assert job["result"]["epsilon"] == "1/2" or job["result"]["epsilon"] == "0.5"
    status = client.get("/v1/synth", headers=CUSTODIAN).json()
    assert status["copy"]["usable"] and status["copy"]["epsilon"] == "0.5" and status["copy"]["delta"] == "0.0000001"
    assert any(c.budget.epsilon == Fraction(1, 2) and c.budget.delta == Fraction(1, 10**7) for c in _synthetic_charges(deployment))
    # The analysts' answers now carry the new copy's part of the guarantee.
    _entry, key = deployment.add_key("bob")
    preview = client.post("/v1/ask/preview", headers={"Authorization": f"Bearer {key}"},
                          json={"question": "How many patients are there?", "epsilon": "1"})
    assert preview.status_code == 200, preview.text
    assert preview.json()["guarantee_if_confirmed"]["epsilon_synthetic"] == "0.5"
