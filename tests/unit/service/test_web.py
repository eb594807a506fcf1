"""The web page over the same app: sign-in, cookie flags, CSRF, the ask -> preview -> confirm flow, custodian pages."""

from __future__ import annotations

import html
import re

import pytest

from service_support import CUSTODIAN_TOKEN, TESTCLIENT_WARNING, csrf_token
from pimento.demo.hospital import DEMO_QUESTION

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)


def sign_in(client, key):
    page = client.get("/login")
    return client.post("/login", data={"csrf": csrf_token(page.text), "key": key}, follow_redirects=False)


def test_sign_in_sets_a_strict_httponly_session_cookie_and_not_the_key(client_for, analyst_key):
    _entry, key, _headers = analyst_key
    client = client_for()
    r = sign_in(client, key)
    assert r.status_code == 303 and r.headers["location"] == "/ask"
    cookie = [h for h in r.headers.get_list("set-cookie") if h.startswith("pimento_session=")][0]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict") and key not in cookie
    page = client.get("/ask")
    assert page.status_code == 200 and "budget-meter" in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'self'") and page.headers["x-frame-options"] == "DENY"


def test_a_wrong_key_is_refused_and_pages_need_a_session(client_for):
    client = client_for()
    assert sign_in(client, "pmk_nope").status_code == 401
    for path in ("/ask", "/history", "/custodian", "/custodian/audit"):
        r = client.get(path, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/login"


def test_sign_in_without_the_forms_csrf_token_is_refused(client_for, analyst_key):
    _entry, key, _headers = analyst_key
    client = client_for()
    client.get("/login")
    r = client.post("/login", data={"csrf": "forged", "key": key}, follow_redirects=False)
    assert r.status_code == 403 and r.json()["error"]["type"] == "CsrfError"
    # Without the sign-in cookie no token matches (an earlier version compared against "x").
    fresh = client_for()
    for token in ("", "x"):
        r = fresh.post("/login", data={"csrf": token, "key": key}, follow_redirects=False)
        assert r.status_code == 403 and r.json()["error"]["type"] == "CsrfError", token


def test_preview_then_confirm_and_csrf_on_every_post(client_for, analyst_key, served):
    entry, key, _headers = analyst_key
    client = client_for()
    sign_in(client, key)
    csrf = csrf_token(client.get("/ask").text)
    form = {"question": DEMO_QUESTION, "epsilon": "1", "delta": "1e-6"}
    assert client.post("/ask/preview", data={**form, "csrf": "x"}).status_code == 403
    preview = client.post("/ask/preview", data={**form, "csrf": csrf})
    assert preview.status_code == 200 and 'id="chosen-sql"' in preview.text and "Nothing has been spent" in preview.text
    with served.ledger() as ledger:
        assert not [c for c in ledger.charges() if c.analyst == entry.analyst]
    sql = html.unescape(re.search(r'name="previewed_sql" value="([^"]+)"', preview.text).group(1))
    assert client.post("/ask/confirm", data={**form, "csrf": "x", "previewed_sql": sql}).status_code == 403
    answer = client.post("/ask/confirm", data={**form, "csrf": csrf, "previewed_sql": sql, "accept_noise": "1"})
    assert answer.status_code == 200 and 'id="value"' in answer.text and 'id="guarantee"' in answer.text
    assert 'id="changed"' not in answer.text
    with served.ledger() as ledger:
        assert len([c for c in ledger.charges() if c.analyst == entry.analyst]) == 1
    assert DEMO_QUESTION in client.get("/history").text


def test_a_bad_epsilon_shows_the_error_on_the_page_and_spends_nothing(client_for, analyst_key):
    _entry, key, _headers = analyst_key
    client = client_for()
    sign_in(client, key)
    csrf = csrf_token(client.get("/ask").text)
    r = client.post("/ask/preview", data={"question": DEMO_QUESTION, "epsilon": "-3", "delta": "", "csrf": csrf})
    assert r.status_code == 422 and 'id="error"' in r.text and "epsilon" in r.text


def test_revoking_the_key_ends_its_session(client_for, served):
    entry, key = served.add_key("web-revoked")
    client = client_for()
    sign_in(client, key)
    assert client.get("/ask").status_code == 200
    served.revoke_key(entry.id)
    r = client.get("/ask", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login"


def test_custodian_pages_issue_and_revoke_keys(client_for, served):
    client = client_for()
    r = sign_in(client, CUSTODIAN_TOKEN)
    assert r.headers["location"] == "/custodian"
    home = client.get("/custodian")
    csrf = csrf_token(home.text)
    added = client.post("/custodian/keys", data={"csrf": csrf, "analyst": "dora", "principal": "employee:4"})
    key = re.search(r'id="new-key-value">([^<]+)<', added.text).group(1)
    entry = served.keys.verify(key)
    assert entry is not None and entry.analyst == "dora"
    assert key not in client.get("/custodian").text  # shown once
    client.post(f"/custodian/keys/{entry.id}/revoke", data={"csrf": csrf})
    assert served.keys.verify(key) is None
    assert client.get("/custodian/audit").status_code == 200
    # An analyst session does not open custodian pages.
    analyst_client = client_for()
    _e, analyst_key = served.add_key("not-custodian")
    sign_in(analyst_client, analyst_key)
    assert analyst_client.get("/custodian", follow_redirects=False).status_code == 303
