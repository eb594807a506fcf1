"""The analyst's narrowed bounds and the goal's clear refusals through the service (issue 25).

``POST /v1/sql``, ``/v1/sql/preview`` take ``bounds`` (``{"Table.column": ["LOWER", "UPPER"]}``) inside the custodian's
``[bounds]`` (the demo's ``"MedicationOrders.dose_mg" = [0, 1000]``); a widening, a column without declared bounds, a SUM
on such a column, a private group key without delta and more groups than ``[release] max_groups`` are each a 422 with one
line naming what to fix, and nothing is spent.
"""

from __future__ import annotations

import pytest

from service_support import TESTCLIENT_WARNING, csrf_token

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)

DOSE = "SELECT SUM(m.dose_mg) FROM MedicationOrders m"
#: (body beyond sql and epsilon, the error type, what the message and hint name)
REFUSALS = [
    ({"sql": "SELECT SUM(v.visit_id) FROM Visit v"}, "UnsupportedQuery", '"Visit.visit_id" = [LOWER, UPPER] under [bounds]'),
    ({"sql": "SELECT p.name, COUNT(*) FROM Patient p GROUP BY p.name"}, "UnsupportedQuery", "Patient.name under [domains]"),
    ({"sql": "SELECT e.department, v.diagnosis, COUNT(*) FROM Employee e JOIN Visit v ON e.employee_id = v.attending_id "
             "GROUP BY e.department, v.diagnosis", "delta": "1e-6"}, "UnsupportedQuery", "[release] max_groups"),
    ({"sql": DOSE, "bounds": {"MedicationOrders.dose_mg": ["0", "2000"]}}, "PrivacyParameterError", "0 <= LOWER <= UPPER <= 1000"),
    ({"sql": DOSE, "bounds": {"Visit.visit_id": [0, 5]}}, "PrivacyParameterError", '"Visit.visit_id" = [LOWER, UPPER] under [bounds]'),
    ({"sql": DOSE, "bounds": {"MedicationOrders.dose_mg": ["9", "5"]}}, "PrivacyParameterError", "LOWER <= UPPER"),
]


@pytest.mark.parametrize("route", ["/v1/sql", "/v1/sql/preview"])
@pytest.mark.parametrize(("body", "kind", "names"), REFUSALS)
def test_bad_input_is_a_422_with_one_line_naming_the_fix_and_nothing_spent(client_for, analyst_key, route, body, kind, names):
    _entry, _key, headers = analyst_key
    client = client_for()
    before = client.get("/v1/budget", headers=headers).json()["spent"]
    refused = client.post(route, headers=headers, json={"epsilon": "1", "accept_noise": True, **body} if route == "/v1/sql"
                          else {"epsilon": "1", **body})
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    line = f"{error['message']} ({error['hint']})"
    assert error["type"] == kind and "\n" not in line and names in line, error
    assert client.get("/v1/budget", headers=headers).json()["spent"] == before


def test_narrowed_bounds_clip_the_release_and_are_stated(client_for, analyst_key):
    from pimento.service import schemas

    _entry, _key, headers = analyst_key
    client = client_for()
    body = {"sql": DOSE, "epsilon": "1", "bounds": {"MedicationOrders.dose_mg": ["0", "250"]}}
    shown = client.post("/v1/sql/preview", headers=headers, json=body)
    assert shown.status_code == 200 and "> 250 THEN 250" in shown.json()["normalized_sql"], shown.text
    released = client.post("/v1/sql", headers=headers, json={**body, "accept_noise": True})
    assert released.status_code == 200, released.text
    data = released.json()
    assert data["bounds"] == ["0", "250"] and data["releases"][0]["noise_scale_upper_exact"] == "250"  # B / epsilon, B narrowed
    schemas.AnswerResponse.model_validate(data)
    again = client.post("/v1/sql", headers=headers, json={**body, "accept_noise": True}).json()
    declared = client.post("/v1/sql", headers=headers, json={"sql": DOSE, "epsilon": "1", "accept_noise": True}).json()
    assert again["cached"] is True and declared["cached"] is False and declared["bounds"] == ["0", "1000"]


@pytest.mark.parametrize("bounds", [{"MedicationOrders.dose_mg": ["0"]}, {"MedicationOrders.dose_mg": "0:5"},
                                    {"MedicationOrders.dose_mg": [True, 5]}])
def test_a_malformed_bounds_field_is_a_422_before_anything(client_for, analyst_key, bounds):
    _entry, _key, headers = analyst_key
    refused = client_for().post("/v1/sql", headers=headers, json={"sql": DOSE, "epsilon": "1", "bounds": bounds})
    assert refused.status_code == 422, refused.text


def test_the_web_sql_form_carries_the_bounds_from_the_preview_to_the_release(client_for, analyst_key):
    _entry, key, headers = analyst_key
    client = client_for()
    page = client.get("/login")
    client.post("/login", data={"csrf": csrf_token(page.text), "key": key}, follow_redirects=False)
    form = client.get("/ask").text
    assert 'name="bounds"' in form.split('id="sql-form"')[1].split("</form>")[0]
    fields = {"sql": DOSE, "epsilon": "1", "delta": "", "bounds": "MedicationOrders.dose_mg=0:250", "csrf": csrf_token(form)}
    shown = client.post("/sql/preview", data=fields)
    assert shown.status_code == 200 and "&gt; 250 THEN 250" in shown.text and 'name="bounds" value="MedicationOrders.dose_mg=0:250"' in shown.text
    answer = client.post("/sql/confirm", data={**fields, "accept_noise": "on"})
    assert answer.status_code == 200 and "&gt; 250 THEN 250" in answer.text, answer.text
    before = client.get("/v1/budget", headers=headers).json()["spent"]
    refused = client.post("/sql/preview", data={**fields, "bounds": "MedicationOrders.dose_mg=0:5000"})
    assert refused.status_code == 422 and "an analyst may only narrow them" in refused.text
    assert client.get("/v1/budget", headers=headers).json()["spent"] == before
