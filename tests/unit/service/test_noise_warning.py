"""Issue 26, item 4: a spend the preview predicts to be mostly noise is said so before anything is spent, on the
API (the warning and the planner's epsilon for +-10%) and on the web page (the spend needs the box ticked)."""

from __future__ import annotations

import pytest

from service_support import TESTCLIENT_WARNING, csrf_token
from test_analyst_view import COUNT, _charges, tight  # noqa: F401  (the module's deployment fixture)
from test_web import sign_in

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)


def test_the_sql_preview_warns_when_the_noise_would_drown_the_answer(tight):  # noqa: F811
    deployment, client = tight
    _entry, key = deployment.add_key("noise-api")
    headers = {"Authorization": f"Bearer {key}"}
    noisy = client.post("/v1/sql/preview", headers=headers, json={"sql": COUNT, "epsilon": "0.001"}).json()
    assert noisy["predicted_relative_error"] > 0.5 and noisy["warn_relative_error"] == 0.5
    assert "mostly noise" in noisy["noise_warning"], noisy
    assert noisy["epsilon_for_10_percent"] is not None and "epsilon " + noisy["epsilon_for_10_percent"] in noisy["noise_warning"]
    clear = client.post("/v1/sql/preview", headers=headers, json={"sql": COUNT, "epsilon": "1"}).json()
    assert clear["predicted_relative_error"] < 0.5 and clear["noise_warning"] is None


def test_the_web_page_spends_on_a_mostly_noise_answer_only_when_the_analyst_ticks_the_box(tight):  # noqa: F811
    deployment, client = tight
    entry, key = deployment.add_key("noise-web")
    sign_in(client, key)
    form = {"sql": COUNT, "epsilon": "0.001", "delta": ""}
    preview = client.post("/sql/preview", data={**form, "csrf": csrf_token(client.get("/ask").text)})
    assert preview.status_code == 200 and 'id="noise-warning"' in preview.text and 'id="accept-noise"' in preview.text
    assert 'id="planner-target"' in preview.text
    refused = client.post("/sql/confirm", data={**form, "noise_warned": "1", "csrf": csrf_token(preview.text)})
    assert refused.status_code == 409 and "mostly noise" in refused.text and not _charges(deployment, entry.analyst)
    spent = client.post("/sql/confirm", data={**form, "noise_warned": "1", "accept_noise": "1", "csrf": csrf_token(preview.text)})
    assert spent.status_code == 200 and 'id="value"' in spent.text
    assert len(_charges(deployment, entry.analyst)) == 1
    calm = client.post("/sql/preview", data={**form, "epsilon": "1", "csrf": csrf_token(client.get("/ask").text)})
    assert calm.status_code == 200 and 'id="noise-warning"' not in calm.text
