"""Every error the service returns is one envelope: {"error": {"type", "message", "hint"}}, on every route."""

from __future__ import annotations

import pytest
from fastapi.routing import APIRoute

from service_support import CUSTODIAN_TOKEN, TESTCLIENT_WARNING

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)


def assert_envelope(response, status=None):
    assert status is None or response.status_code == status, (response.status_code, response.text)
    assert response.status_code >= 400
    assert response.headers["content-type"].startswith("application/json"), response.headers["content-type"]
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message", "hint"}, body
    assert isinstance(body["error"]["type"], str) and body["error"]["type"]
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert "Traceback" not in response.text


def _routes(app):
    return [r for r in app.routes if isinstance(r, APIRoute)]


def _concrete(path: str) -> str:
    return path.replace("{key_id}", "deadbeef")


def test_every_route_answers_errors_with_the_envelope(client_for, analyst_key, served, monkeypatch):
    _entry, _key, headers = analyst_key
    client = client_for()
    app = client.app
    custodian = {"Authorization": f"Bearer {CUSTODIAN_TOKEN}"}
    routes = _routes(app)
    api = [r for r in routes if r.path.startswith("/v1/")]
    assert len(api) >= 12
    for route in routes:
        path = _concrete(route.path)
        allowed = set(route.methods)
        wrong = next(m for m in ("PATCH", "PUT", "DELETE", "POST", "GET") if m not in allowed and not (m == "GET" and "HEAD" in allowed))
        # 405 on every route, API and web page alike.
        if not any(r.path == route.path and wrong in r.methods for r in routes):
            assert_envelope(client.request(wrong, path), 405)
    for route in api:
        path = _concrete(route.path)
        method = sorted(route.methods)[0]
        if route.path == "/v1/health":
            continue
        # 401 without credentials.
        assert_envelope(client.request(method, path), 401)
        auth = custodian if "custodian" in route.tags else headers
        if method == "POST":
            # 422 for a malformed body, an empty body, and a body that is not JSON.
            assert_envelope(client.request(method, path, headers=auth, json={"unexpected": 1}), 422)
            assert_envelope(client.request(method, path, headers=auth), 422)
            assert_envelope(client.request(method, path, headers={**auth, "Content-Type": "application/json"}, content=b"{not json"), 422)
            # 413 for a body over the limit.
            small = client_for(max_body_bytes=1024)
            assert_envelope(small.request(method, path, headers=auth, content=b"x" * 5000), 413)
        if "limit" in {p.name for p in route.dependant.query_params}:
            assert_envelope(client.request(method, path, headers=auth, params={"limit": "-5"}), 422)
    # 404 anywhere.
    for path in ("/nope", "/v1/nope", "/v1/keys/abc/def", "/static/nope.css"):
        assert_envelope(client.get(path, headers=headers), 404)
    # 429 from the rate limit.
    limited = client_for(rate=0.001, burst=1)
    limited.get("/v1/me", headers=headers)
    assert_envelope(limited.get("/v1/me", headers=headers), 429)
    # 500 from anything unexpected, on every analyst route (but /v1/me and /v1/catalog, which send what
    # the service holds since its start).
    for name in ("sql", "ask", "preview", "budget", "history"):
        monkeypatch.setattr(type(served), name, lambda self, *a, **k: (_ for _ in ()).throw(RuntimeError("boom 99")))
    for route in api:
        if "analyst" in route.tags and route.path not in ("/v1/me", "/v1/catalog"):
            body = {"sql": "SELECT COUNT(*) FROM Patient", "question": "q", "epsilon": "1"}
            if route.path == "/v1/sql":
                body.pop("question")
            elif route.path.startswith("/v1/ask"):
                body.pop("sql")
            method = sorted(route.methods)[0]
            response = client.request(method, route.path, headers=headers, json=body if method == "POST" else None)
            assert_envelope(response, 500)
            assert "boom" not in response.text
