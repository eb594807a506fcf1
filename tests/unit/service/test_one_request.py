"""Issue 24 on the service: each call builds one Request and hands it to pimento.release.

``/v1/ask`` takes the SQL a preview showed (``expect_sql``) and refuses anything else before any
charge; the web page confirms the SQL it previewed the same way; the routes are module-level
functions of their modules.
"""

from __future__ import annotations

import html
import re
import sys

import pytest
from fastapi.routing import APIRoute

from pimento.demo.hospital import DEMO_QUESTION
from service_support import TESTCLIENT_WARNING

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)

OTHER_SQL = "SELECT COUNT(*) FROM Patient"


def _charges(served, analyst):
    with served.ledger() as ledger:
        return [c for c in ledger.charges() if c.analyst == analyst]


def _audit_rows(served):
    with served.ledger() as ledger:
        return len(ledger.audit_rows())


def test_ask_with_expect_sql_refuses_another_reading_before_any_charge(client_for, analyst_key, served):
    entry, _key, headers = analyst_key
    client = client_for()
    body = {"question": DEMO_QUESTION, "epsilon": "1", "delta": "1e-6"}
    preview = client.post("/v1/ask/preview", headers=headers, json=body).json()
    assert preview["chosen_sql"] != OTHER_SQL
    rows = _audit_rows(served)
    refused = client.post("/v1/ask", headers=headers, json={**body, "expect_sql": OTHER_SQL})
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert set(error) == {"type", "message", "hint"} and "nothing was spent" in error["message"]
    assert _charges(served, entry.analyst) == [] and _audit_rows(served) == rows  # nothing charged, nothing audited
    answered = client.post("/v1/ask", headers=headers, json={**body, "expect_sql": preview["chosen_sql"], "accept_noise": True})
    assert answered.status_code == 200, answered.text
    assert answered.json()["chosen_sql"] == preview["chosen_sql"] and len(_charges(served, entry.analyst)) == 1


def _signed_in(client, key):
    login = client.get("/login")
    client.post("/login", data={"csrf": re.search(r'name="csrf" value="([^"]+)"', login.text).group(1), "key": key})
    return re.search(r'name="csrf" value="([^"]+)"', client.get("/ask").text).group(1)


def test_the_web_page_releases_only_the_sql_it_previewed(client_for, served):
    """The confirm form carries the previewed SQL: a reading other than it is refused, nothing spent
    (the page used to release it and then say the query had changed)."""
    entry, key = served.add_key("web-expect", "employee:17")
    client = client_for()
    csrf = _signed_in(client, key)
    form = {"csrf": csrf, "question": DEMO_QUESTION, "epsilon": "1", "delta": "1e-6"}
    preview = client.post("/ask/preview", data=form)
    previewed = html.unescape(re.search(r'name="previewed_sql" value="([^"]+)"', preview.text).group(1))
    refused = client.post("/ask/confirm", data={**form, "previewed_sql": OTHER_SQL})
    assert refused.status_code == 400 and "nothing was spent" in refused.text
    assert _charges(served, entry.analyst) == []
    answer = client.post("/ask/confirm", data={**form, "previewed_sql": previewed, "accept_noise": "1"})
    assert answer.status_code == 200 and 'id="value"' in answer.text
    assert len(_charges(served, entry.analyst)) == 1


def test_every_route_is_a_module_level_function(client_for):
    """No route is a closure: each endpoint is its module's attribute of the same name (importable and testable alone)."""
    routes = [r for r in client_for().app.routes if isinstance(r, APIRoute)]
    assert len(routes) >= 25
    for route in routes:
        endpoint = route.endpoint
        assert endpoint.__module__ in ("pimento.service.app", "pimento.service.web"), route.path
        assert getattr(sys.modules[endpoint.__module__], endpoint.__name__, None) is endpoint, route.path
