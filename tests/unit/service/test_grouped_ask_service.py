"""A grouped question through the service (issue 25, items 3 and 4): ``POST /v1/ask/preview`` and ``/v1/ask``, and the
web page's question form (its preview shows the groups and the predicted error; its answer the grouped table).

On the demo hospital (200 patients) with a stand-in synthetic copy; "How many patients per sex?" is read as
``SELECT Patient.sex, COUNT(*) FROM Patient GROUP BY Patient.sex`` (the demo declares the domain of Patient.sex).
"""

from __future__ import annotations

import pytest

from db_support import demo_with_copy
from service_support import TESTCLIENT_WARNING, csrf_token
from test_web import sign_in

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)

QUESTION = "How many patients per sex?"
CHOSEN = "SELECT Patient.sex, COUNT(*) FROM Patient GROUP BY Patient.sex"



@pytest.fixture(scope="module")
def served(tmp_path_factory, standin_synthetic):
    from fastapi.testclient import TestClient

    from pimento.service.app import ServiceOptions, create_app
    from pimento.service.deployment import Deployment, SearchSettings

    db = demo_with_copy(tmp_path_factory.mktemp("grouped_service"), standin_synthetic, patients=200, ledger='analyst_share = "1"')
    deployment = Deployment(db, search=SearchSettings(rollouts=1, k=5))
    return deployment, TestClient(create_app(deployment, ServiceOptions(rate=1000, burst=1000)), raise_server_exceptions=False)


def test_the_api_previews_then_answers_a_grouped_question(served):
    deployment, client = served
    entry, key = deployment.add_key("grouped-api")
    headers = {"Authorization": f"Bearer {key}"}
    body = {"question": QUESTION, "epsilon": "1", "delta": "0.000001"}
    preview = client.post("/v1/ask/preview", headers=headers, json=body)
    assert preview.status_code == 200, preview.text
    shown = preview.json()
    assert shown["chosen_sql"] == CHOSEN and shown["aggregate"] == "count" and shown["spent"] == {"epsilon": "0", "delta": "0"}
    from pimento.service import schemas

    assert set(shown) <= set(schemas.PreviewResponse.model_fields), set(shown) - set(schemas.PreviewResponse.model_fields)
    answer = client.post("/v1/ask", headers=headers, json={**body, "expect_sql": shown["chosen_sql"]})
    assert answer.status_code == 200, answer.text
    got = answer.json()
    assert set(got) <= set(schemas.AnswerResponse.model_fields), set(got) - set(schemas.AnswerResponse.model_fields)
    sql_preview = client.post("/v1/sql/preview", headers=headers, json={"sql": CHOSEN, "epsilon": "1", "delta": "0.000001"}).json()
    assert sql_preview["predicted_error"] == shown["predicted_error"]
    assert set(sql_preview) <= set(schemas.SqlPreviewResponse.model_fields), set(sql_preview) - set(schemas.SqlPreviewResponse.model_fields)
    assert got["question"] == QUESTION and got["chosen_sql"] == CHOSEN and "groups" in got and got["guarantee"]["epsilon_release"] == "1"
    with deployment.ledger() as ledger:
        assert len([c for c in ledger.charges() if c.analyst == entry.analyst]) == 1


def test_the_page_previews_then_answers_a_grouped_question(served):
    deployment, client = served
    _entry, key = deployment.add_key("grouped-page")
    sign_in(client, key)
    page = client.get("/ask").text
    form = {"question": QUESTION, "epsilon": "1", "delta": "0.000001", "mode": "dp", "sender": "", "purpose": ""}
    preview = client.post("/ask/preview", data={**form, "csrf": csrf_token(page)})
    assert preview.status_code == 200, preview.text
    assert 'id="preview-groups"' in preview.text and "every one shown, zeros included" in preview.text and CHOSEN in preview.text
    answer = client.post("/ask/confirm", data={**form, "previewed_sql": CHOSEN, "csrf": csrf_token(preview.text)})
    assert answer.status_code == 200, answer.text
    assert 'id="groups"' in answer.text and 'id="guarantee"' in answer.text and 'id="chosen-why"' in answer.text


def test_the_question_preview_and_its_noise_check_use_the_narrowed_bounds(served):
    """``bounds`` in ``POST /v1/ask/preview`` (and the check before ``POST /v1/ask``) narrow the declared ones as the release
    does: the preview states them and plans with them; a widening is refused there too, before anything is spent."""
    deployment, client = served
    entry, key = deployment.add_key("grouped-bounds")
    headers = {"Authorization": f"Bearer {key}"}
    body = {"question": "What is the average birth year of patients per sex?", "epsilon": "1", "delta": "0.000001"}
    declared = client.post("/v1/ask/preview", headers=headers, json=body)
    narrowed = client.post("/v1/ask/preview", headers=headers, json={**body, "bounds": {"Patient.birth_year": ["1940", "2000"]}})
    assert declared.status_code == 200 and narrowed.status_code == 200, (declared.text, narrowed.text)
    # the plan used the narrowed bounds: the copy's rows outside [1940, 2000] are predicted clipped, none of [1900, 2030]
    assert declared.json()["clipped_on_copy"]["rows"] == 0 < narrowed.json()["clipped_on_copy"]["rows"], narrowed.json()["clipped_on_copy"]
    widened = client.post("/v1/ask/preview", headers=headers, json={**body, "bounds": {"Patient.birth_year": ["1800", "2000"]}})
    assert widened.status_code == 422, widened.text
    refused = client.post("/v1/ask", headers=headers, json={**body, "bounds": {"Patient.birth_year": ["1800", "2000"]}})
    assert refused.status_code == 422, refused.text
    with deployment.ledger() as ledger:
        assert not [c for c in ledger.charges() if c.analyst == entry.analyst]
