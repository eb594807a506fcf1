"""Issue 28, item 4, the analyst's view: which cap binds, the SQL form and its free preview, the mode and the
split part in history and audit, the offline API reference, and the response models of the analyst routes."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from service_support import TESTCLIENT_WARNING, build_deployment, csrf_token
from test_web import sign_in

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)

COUNT = "SELECT COUNT(*) FROM Patient"
JOIN = "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.diagnosis = 'Heart failure'"


@pytest.fixture(scope="module")
def tight(tmp_path_factory, standin_synthetic):
    """A deployment whose caps meet: database 4 (the synthetic copy took 1.6), each analyst half of it (2)."""
    from fastapi.testclient import TestClient

    from pimento.service.app import ServiceOptions, create_app
    from pimento.service.deployment import Deployment, SearchSettings

    db = build_deployment(tmp_path_factory.mktemp("tight"), standin_synthetic, ledger='epsilon_cap = "4"\nanalyst_share = "0.5"', patients=120)
    deployment = Deployment(db, search=SearchSettings(rollouts=1, k=3))
    return deployment, TestClient(create_app(deployment, ServiceOptions(rate=1000, burst=1000)), raise_server_exceptions=False)


def _charges(deployment, analyst):
    with deployment.ledger() as ledger:
        return [c for c in ledger.charges() if c.analyst == analyst]


def test_the_budget_says_which_cap_binds(tight):
    deployment, client = tight
    _a, key_a = deployment.add_key("binds-a")
    _b, key_b = deployment.add_key("binds-b")
    r = client.post("/v1/sql", headers={"Authorization": f"Bearer {key_a}"}, json={"sql": COUNT, "epsilon": "1"})
    assert r.status_code == 200, r.text
    a = client.get("/v1/budget", headers={"Authorization": f"Bearer {key_a}"}).json()
    assert (a["cap"]["epsilon"], a["spent"]["epsilon"], a["left"]["epsilon"], a["binds"]) == ("2", "1", "1", "analyst")
    b = client.get("/v1/budget", headers={"Authorization": f"Bearer {key_b}"}).json()
    # b's own cap leaves 2; the database's leaves 4 - 1.6 - 1 = 1.4 for everyone
    assert (b["cap"]["epsilon"], b["spent"]["epsilon"], b["left"]["epsilon"], b["binds"]) == ("2", "0", "1.4", "database")
    sign_in(client, key_b)
    meter = client.get("/ask").text
    assert "the database-wide cap binds: 1.4 is left for all analysts together" in meter
    sign_in(client, key_a)
    assert "your own cap binds" in client.get("/ask").text


def test_the_sql_form_previews_for_free_then_spends_on_confirmation(tight):
    deployment, client = tight
    entry, key = deployment.add_key("sql-form")
    sign_in(client, key)
    page = client.get("/ask").text
    assert 'id="sql-form"' in page and 'action="/sql/preview"' in page and 'id="ask-form"' in page
    # the custodian's declarations beside the schema (the demo's: a functional dependency, link context)
    assert "DxCategory: diagnosis &rarr; hivstatus" in page and "Employee.role, Employee.specialty" in page
    form = {"sql": COUNT, "epsilon": "0.5", "delta": ""}
    assert client.post("/sql/preview", data={**form, "csrf": "x"}).status_code == 403
    preview = client.post("/sql/preview", data={**form, "csrf": csrf_token(page)})
    assert preview.status_code == 200, preview.text
    assert "Nothing has been spent" in preview.text and 'id="estimate"' in preview.text and 'id="synthetic-answer"' in preview.text
    assert "Spend epsilon 0.5 and answer" in preview.text
    assert not _charges(deployment, entry.analyst)
    posted = html.unescape(re.search(r'name="sql" value="([^"]+)"', preview.text).group(1))
    assert posted == COUNT
    answer = client.post("/sql/confirm", data={**form, "csrf": csrf_token(preview.text)})
    assert answer.status_code == 200 and 'id="value"' in answer.text and 'id="interval"' in answer.text, answer.text
    assert len(_charges(deployment, entry.analyst)) == 1


def test_the_sql_preview_refuses_what_the_release_refuses_and_spends_nothing(tight):
    deployment, client = tight
    entry, key = deployment.add_key("sql-refused")
    headers = {"Authorization": f"Bearer {key}"}
    r = client.post("/v1/sql/preview", headers=headers, json={"sql": "SELECT name FROM Patient", "epsilon": "1"})
    assert r.status_code in (400, 422) and r.json()["error"]["message"], r.text
    r = client.post("/v1/sql/preview", headers=headers, json={"sql": COUNT, "epsilon": "-1"})
    assert r.status_code in (400, 422) and "epsilon" in r.json()["error"]["message"], r.text
    r = client.post("/v1/sql/preview", headers=headers, json={"sql": COUNT, "mode": "ci"})
    assert r.status_code == 422 and "no policy" in r.json()["error"]["message"], r.text
    ok = client.post("/v1/sql/preview", headers=headers, json={"sql": COUNT, "epsilon": "1"}).json()
    assert ok["cost"] == {"epsilon": "1", "delta": "0"} and ok["spent"] == {"epsilon": "0", "delta": "0"}
    assert ok["synthetic"]["answer"] >= 0 and any(row["epsilon"] == "1" for row in ok["planner"]) and ok["estimated_half_width_95"] > 0
    sign_in(client, key)
    page = client.post("/sql/preview", data={"sql": "SELECT name FROM Patient", "epsilon": "1", "csrf": csrf_token(client.get("/ask").text)})
    assert page.status_code in (400, 422) and 'id="error"' in page.text and 'id="sql-form"' in page.text
    assert not _charges(deployment, entry.analyst)


@pytest.fixture(scope="module")
def with_policy(tmp_path_factory, standin_synthetic):
    from fastapi.testclient import TestClient

    from pimento.service.app import ServiceOptions, create_app, token_digest
    from pimento.service.deployment import Deployment, SearchSettings
    from policy_config import compile_example_policy, configure_policy
    from service_support import CUSTODIAN_TOKEN

    folder = tmp_path_factory.mktemp("split")
    db = build_deployment(folder, standin_synthetic, ledger='epsilon_cap = "100"', patients=120)
    configure_policy(db, compile_example_policy(db, folder / "compiled.json"))
    deployment = Deployment(Path(db), search=SearchSettings(rollouts=1, k=3))
    options = ServiceOptions(rate=1000, burst=1000, custodian_token_sha256=token_digest(CUSTODIAN_TOKEN))
    return deployment, TestClient(create_app(deployment, options), raise_server_exceptions=False)


def test_history_and_audit_show_the_mode_and_the_split_part(with_policy):
    from pimento.cli.cmd_audit import audit_table
    from rich.console import Console
    from service_support import CUSTODIAN_TOKEN

    deployment, client = with_policy
    _entry, key = deployment.add_key("split-history", "employee:1", ["employee:1"], ["treatment"])
    headers = {"Authorization": f"Bearer {key}"}
    context = {"sender": "employee:1", "purpose": "treatment"}
    split = client.post("/v1/sql", headers=headers, json={"sql": JOIN, "epsilon": "1", "mode": "split", **context, "accept_noise": True}).json()
    dp = client.post("/v1/sql", headers=headers, json={"sql": JOIN, "epsilon": "1", "accept_noise": True}).json()
    rows = client.get("/v1/history", headers=headers).json()["answers"]
    assert [(r["mode"], r["part"]) for r in rows] == [("dp", "count"), ("split", "remainder")]
    assert rows[1]["authorized_exact"] == split["authorized_exact"] and rows[1]["value"] == split["value"]
    assert "authorized_exact" not in rows[0] and rows[0]["value"] == dp["value"]
    sign_in(client, key)
    page = client.get("/history").text
    assert f"authorized part {split['authorized_exact']} (exact)" in page and "(noisy; not a total)" in page
    audit = client.get("/v1/audit", headers={"Authorization": f"Bearer {CUSTODIAN_TOKEN}"}).json()["rows"]
    released = [r for r in audit if r.get("analyst") == "split-history"]
    assert [r.get("part") for r in released] == ["remainder", "count"] and released[0]["authorized_exact"] == split["authorized_exact"]
    console = Console(width=100, record=True)
    console.print(audit_table(released))
    shown = console.export_text()
    assert "split" in shown and f"exact {split['authorized_exact']}" in shown and "rem." in shown and "dp" in shown


def test_the_api_reference_is_served_here_without_scripts(client_for):
    client = client_for()
    r = client.get("/docs")
    assert r.status_code == 200 and "<script" not in r.text.lower() and "script-src 'none'" in r.headers["content-security-policy"]
    for shown in ("POST /v1/sql/preview", "GET /v1/budget", "GET /v1/catalog", 'id="schema-BudgetResponse"', 'id="security-AnalystKey"',
                  "authentication: <a href=\"#security-AnalystKey\">AnalystKey</a> (bearer)", "CustodianToken"):
        assert shown in r.text, shown
    assert "http://" not in r.text and "https://" not in r.text  # nothing loaded from elsewhere
    redoc = client.get("/redoc", follow_redirects=False)
    assert redoc.status_code == 307 and redoc.headers["location"] == "/docs"


ROUTES = {("get", "/v1/me"): "MeResponse", ("get", "/v1/budget"): "BudgetResponse", ("get", "/v1/history"): "HistoryResponse",
          ("get", "/v1/catalog"): "CatalogResponse", ("post", "/v1/sql"): "AnswerResponse", ("post", "/v1/ask"): "AnswerResponse",
          ("post", "/v1/ask/preview"): "PreviewResponse", ("post", "/v1/sql/preview"): "SqlPreviewResponse"}


def test_openapi_describes_each_analyst_routes_answer(client_for):
    spec = client_for().get("/openapi.json").json()
    for (method, path), name in ROUTES.items():
        schema = spec["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"]
        assert schema == {"$ref": f"#/components/schemas/{name}"}, (path, schema)
        assert spec["paths"][path][method]["security"] == [{"AnalystKey": []}]
    assert set(spec["components"]["schemas"]["BudgetResponse"]["properties"]["binds"]["enum"]) == {"analyst", "database"}


def test_the_response_models_describe_every_key_sent(tight, with_policy):
    """The models document the JSON without rewriting it: real answers validate, and each key they carry is described."""
    from pimento.service import schemas

    def check(model, data):
        model.model_validate(data)
        assert set(data) <= set(model.model_fields), (model.__name__, set(data) - set(model.model_fields))

    deployment, client = tight
    _entry, key = deployment.add_key("models")
    headers = {"Authorization": f"Bearer {key}"}
    check(schemas.AnswerResponse, client.post("/v1/sql", headers=headers, json={"sql": COUNT, "epsilon": "0.25"}).json())
    check(schemas.SqlPreviewResponse, client.post("/v1/sql/preview", headers=headers, json={"sql": JOIN, "epsilon": "0.25"}).json())
    check(schemas.BudgetResponse, client.get("/v1/budget", headers=headers).json())
    check(schemas.MeResponse, client.get("/v1/me", headers=headers).json())
    history = client.get("/v1/history", headers=headers).json()
    check(schemas.HistoryResponse, history)
    for row in history["answers"]:
        check(schemas.HistoryRow, row)
    policy_deployment, policy_client = with_policy
    _entry, key = policy_deployment.add_key("models-ci", "employee:1", ["employee:1"], ["treatment"])
    headers = {"Authorization": f"Bearer {key}"}
    context = {"sender": "employee:1", "purpose": "treatment"}
    for mode in ("ci", "split", "contextual"):
        body = {"sql": JOIN, "mode": mode, **context, **({} if mode == "ci" else {"epsilon": "0.5", "accept_noise": True})}
        check(schemas.AnswerResponse, policy_client.post("/v1/sql", headers=headers, json=body).json())
