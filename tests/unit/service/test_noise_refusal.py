"""Issue 26, item 4: the HTTP API warns before the charge. ``POST /v1/sql`` and ``POST /v1/ask`` refuse, with 409
MostlyNoiseError and nothing spent, an answer predicted (on the synthetic copy) to be mostly noise, unless the request
says ``accept_noise``; the refusal carries the warning and the epsilon predicted to give +-10%."""

from __future__ import annotations

import pytest

from service_support import TESTCLIENT_WARNING
from test_analyst_view import COUNT, _charges, tight  # noqa: F401  (the module's deployment fixture)

from pimento.errors import MostlyNoiseError
from pimento.release.accuracy import refuse_mostly_noise

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)
QUESTION = "How many patients are there?"


def test_sql_is_refused_before_the_charge_unless_the_noise_is_accepted(tight):  # noqa: F811
    deployment, client = tight
    entry, key = deployment.add_key("noise-sql")
    headers = {"Authorization": f"Bearer {key}"}
    previewed = client.post("/v1/sql/preview", headers=headers, json={"sql": COUNT, "epsilon": "0.001"}).json()
    refused = client.post("/v1/sql", headers=headers, json={"sql": COUNT, "epsilon": "0.001"})
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    assert error["type"] == "MostlyNoiseError" and "mostly noise" in error["message"] and "nothing was spent" in error["message"]
    assert "accept_noise" in error["hint"] and f"epsilon {previewed['epsilon_for_10_percent']}" in error["hint"]
    assert error["details"]["epsilon_for_10_percent"] == previewed["epsilon_for_10_percent"] is not None
    assert error["details"]["predicted_relative_error"] == previewed["predicted_relative_error"]
    assert not _charges(deployment, entry.analyst)
    spent = client.post("/v1/sql", headers=headers, json={"sql": COUNT, "epsilon": "0.001", "accept_noise": True})
    assert spent.status_code == 200 and spent.json()["value"] is not None, spent.text
    calm = client.post("/v1/sql", headers=headers, json={"sql": COUNT, "epsilon": "1"})  # not mostly noise: no acceptance needed
    assert calm.status_code == 200, calm.text
    assert len(_charges(deployment, entry.analyst)) == 2


def test_a_question_is_refused_before_the_charge_unless_the_noise_is_accepted(tight):  # noqa: F811
    deployment, client = tight
    entry, key = deployment.add_key("noise-ask")
    headers = {"Authorization": f"Bearer {key}"}
    refused = client.post("/v1/ask", headers=headers, json={"question": QUESTION, "epsilon": "0.001"})
    assert refused.status_code == 409 and refused.json()["error"]["type"] == "MostlyNoiseError", refused.text
    assert refused.json()["error"]["details"]["noise_warning"]
    assert not _charges(deployment, entry.analyst)
    spent = client.post("/v1/ask", headers=headers, json={"question": QUESTION, "epsilon": "0.001", "accept_noise": True})
    assert spent.status_code == 200, spent.text
    assert len(_charges(deployment, entry.analyst)) == 1


def test_the_openapi_document_lists_accept_noise_and_the_409(tight):  # noqa: F811
    _deployment, client = tight
    spec = client.get("/openapi.json").json()
    for path, model in (("/v1/sql", "SqlRequest"), ("/v1/ask", "AskRequest")):
        assert spec["components"]["schemas"][model]["properties"]["accept_noise"]["default"] is False
        assert "MostlyNoiseError" in spec["paths"][path]["post"]["responses"]["409"]["description"]


def test_the_decision_refuses_only_a_warned_unaccepted_spend():
    warned = {"noise_warning": "this answer would be mostly noise", "epsilon_for_10_percent": "0.8",
              "predicted_relative_error": 3.2, "warn_relative_error": 0.5}
    with pytest.raises(MostlyNoiseError) as caught:
        refuse_mostly_noise(warned, accept_noise=False)
    assert caught.value.http_status == 409
    assert getattr(caught.value, "details")["epsilon_for_10_percent"] == "0.8"
    assert "epsilon 0.8" in (caught.value.hint or "")
    refuse_mostly_noise(warned, accept_noise=True)
    refuse_mostly_noise({**warned, "noise_warning": None}, accept_noise=False)
    refuse_mostly_noise({}, accept_noise=False)  # no estimate (no copy, a grouped query): no refusal
