"""A grouped answer through the service (issue 25): ``POST /v1/sql`` returns its table, the web page draws it with bars."""

from __future__ import annotations


import pytest

from service_support import TESTCLIENT_WARNING, csrf_token

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)

PER_CATEGORY = "SELECT d.category, COUNT(*) FROM Visit v JOIN DxCategory d ON v.diagnosis = d.diagnosis GROUP BY d.category"


def test_v1_sql_returns_the_groups_described_by_the_response_model(client_for, analyst_key):
    from pimento.service import schemas

    _entry, _key, headers = analyst_key
    client = client_for()
    data = client.post("/v1/sql", headers=headers, json={"sql": PER_CATEGORY, "epsilon": "1", "delta": "1e-6"}).json()
    assert data["aggregate"] == "count" and data["group_by"] == ["d.category"] and len(data["groups"]) == 14, data
    schemas.AnswerResponse.model_validate(data)
    assert set(data) <= set(schemas.AnswerResponse.model_fields), set(data) - set(schemas.AnswerResponse.model_fields)
    for group in data["groups"]:
        schemas.GroupRow.model_validate(group)
        assert set(group) <= set(schemas.GroupRow.model_fields)
    refused = client.post("/v1/sql", headers=headers, json={"sql": "SELECT SUM(v.visit_id) FROM Visit v", "epsilon": "1"})
    assert refused.status_code == 422 and "[bounds]" in refused.json()["error"]["hint"], refused.text


def test_the_web_page_shows_a_grouped_answer_as_a_table_with_bars(client_for, analyst_key):
    _entry, key, _headers = analyst_key
    client = client_for()
    page = client.get("/login")
    client.post("/login", data={"csrf": csrf_token(page.text), "key": key}, follow_redirects=False)
    form = {"sql": PER_CATEGORY, "epsilon": "1", "delta": "1e-6", "csrf": csrf_token(client.get("/ask").text)}
    answer = client.post("/sql/confirm", data=form)
    assert answer.status_code == 200, answer.text
    assert 'id="groups"' in answer.text and "Diseases of the circulatory system" in answer.text
    table = answer.text.split('id="groups"')[1].split("</table>")[0]
    assert table.count('class="fill w') == 14 and 'class="fill w100"' in table  # one bar per group, the largest full
    assert "style=" not in table  # the CSP allows no inline style: width classes only


def test_the_sql_preview_plans_a_grouped_query_and_spends_nothing(client_for, analyst_key):
    from pimento.service import schemas

    _entry, _key, headers = analyst_key
    client = client_for()
    before = client.get("/v1/budget", headers=headers).json()["spent"]
    shown = client.post("/v1/sql/preview", headers=headers, json={"sql": PER_CATEGORY, "epsilon": "1", "delta": "1e-6"})
    assert shown.status_code == 200, shown.text
    data = shown.json()
    assert data["groups"] == 14 and data["cost"]["epsilon"] == "1" and data["spent"] == {"epsilon": "0", "delta": "0"}, data
    assert set(data) <= set(schemas.SqlPreviewResponse.model_fields), set(data) - set(schemas.SqlPreviewResponse.model_fields)
    refused = client.post("/v1/sql/preview", headers=headers, json={"sql": "SELECT SUM(v.visit_id) FROM Visit v", "epsilon": "1"})
    assert refused.status_code == 422 and "[bounds]" in refused.json()["error"]["hint"], refused.text
    assert client.get("/v1/budget", headers=headers).json()["spent"] == before
