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
    for name in ("sql", "ask", "preview", "budget", "history", "request"):  # request: /v1/sql/preview's first step
        monkeypatch.setattr(type(served), name, lambda self, *a, **k: (_ for _ in ()).throw(RuntimeError("boom 99")))
    for route in api:
        if "analyst" in route.tags and route.path not in ("/v1/me", "/v1/catalog"):
            body = {"sql": "SELECT COUNT(*) FROM Patient", "question": "q", "epsilon": "1"}
            if route.path.startswith("/v1/sql"):
                body.pop("question")
            elif route.path.startswith("/v1/ask"):
                body.pop("sql")
            method = sorted(route.methods)[0]
            response = client.request(method, route.path, headers=headers, json=body if method == "POST" else None)
            assert_envelope(response, 500)
            assert "boom" not in response.text


def _errors_and_answers():
    """(error, status, type, message, hint) per class: statuses from the classes' ``http_status``;
    custodian-only texts (engine, data source, configuration, ledger) replaced by fixed ones."""
    from pimento import errors
    from pimento.service.errors import ABORTED, ASK_CUSTODIAN, INTERNAL, LEDGER_REFUSED, UNAVAILABLE

    halted = errors.DeploymentHaltedError
    return [
        (errors.ContextNotAllowedError("sender nurse:9 is not one of your key's", hint="pick one"), 403, "ContextNotAllowedError",
         "sender nurse:9 is not one of your key's", "pick one"),
        (errors.ModeError("unknown mode 'x'"), 422, "ModeError", "unknown mode 'x'", None),
        (errors.UnsupportedQuery("group_by", "outside  the\n class"), 422, "UnsupportedQuery", "outside the class", None),
        (errors.PrivacyParameterError("epsilon must be > 0"), 422, "PrivacyParameterError", "epsilon must be > 0", None),
        (errors.BudgetError("cap exhausted", hint="ask for more"), 409, "BudgetError", "cap exhausted", "ask for more"),
        (errors.LedgerIntegrityError("ledger /srv/x.ledger.sqlite damaged"), 503, "LedgerIntegrityError", LEDGER_REFUSED, ASK_CUSTODIAN),
        (errors.ReleaseAbortedError("release r1 closed as aborted at /srv/x"), 500, "ReleaseAbortedError", ABORTED, ASK_CUSTODIAN),
        (halted(), 503, "DeploymentHaltedError", halted.MESSAGE, halted.HINT),
        (errors.EngineQueryError("DuckDB", "Could not convert string 'Ana Baker'"), 503, "DataSourceError", UNAVAILABLE, ASK_CUSTODIAN),
        (errors.SyntheticCopyError("/srv/secret/syn.duckdb does not exist"), 503, "DataSourceError", UNAVAILABLE, ASK_CUSTODIAN),
        (errors.ConfigError("unknown key in /srv/pimento.toml"), 503, "DataSourceError", UNAVAILABLE, ASK_CUSTODIAN),
        (errors.LLMError("endpoint down"), 502, "LLMError", "endpoint down", None),
        (errors.NotACountingQuestion("q", "list", "asks for a list"), 400, "NotACountingQuestion", "asks for a list",
         "Pimento answers counting questions: 'How many ...', 'Count the number of ...', 'What is the total number of ...'"),
        (errors.KeyStoreError("no key with id 'x'"), 400, "KeyStoreError", "no key with id 'x'", None),
        (errors.ServiceError(429, "too many requests", hint="retry in 3 s", headers={"Retry-After": "3"}), 429, "RateLimited",
         "too many requests", "retry in 3 s"),
        (errors.ServiceError(403, "the form's CSRF token is missing", type_="CsrfError"), 403, "CsrfError", "the form's CSRF token is missing", None),
        (errors.InternalError("invariant failed on /srv/x"), 500, "InternalError", INTERNAL, ASK_CUSTODIAN),
    ]


def test_each_error_class_answers_its_status_and_envelope():
    """Through the installed handlers: the status each class carries, the envelope, fixed texts where the
    error's own is the custodian's (nothing of it reaches the analyst), a refusal's own headers."""
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from pimento.service.errors import install_error_handlers

    cases = _errors_and_answers()
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/raise/{i}")
    def _raise(i: int) -> None:
        raise cases[i][0]

    client = TestClient(app, raise_server_exceptions=False)
    for i, (error, status, type_, message, hint) in enumerate(cases):
        response = client.get(f"/raise/{i}")
        assert_envelope(response, status)
        assert response.json()["error"] == {"type": type_, "message": message, "hint": hint}, type(error).__name__
        for private in ("/srv", "Ana Baker"):
            assert private not in response.text
    assert client.get("/raise/14").headers["Retry-After"] == "3"
