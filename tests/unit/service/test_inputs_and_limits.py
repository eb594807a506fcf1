"""Issue 23, service side: request bodies are strictly typed (``"epsilon": true`` is not epsilon 1), error
bodies carry neither the engine's text nor the offending value, the rate buckets stay capped after
idling, and failed sign-ins are limited per client address before any key is looked at."""

from __future__ import annotations

import pytest

from service_support import CUSTODIAN_TOKEN, TESTCLIENT_WARNING

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)

COUNT = "SELECT COUNT(*) FROM Patient"
#: A value that looks like private data: it must never come back in an error body.
PRIVATE = "Alice Q. Patient, HIV positive, born 1961-04-02"


def _charges(served, analyst):
    with served.ledger() as ledger:
        return [c for c in ledger.charges() if c.analyst == analyst]


# ---------------------------------------------------------------- strict request bodies (finding 12)

@pytest.mark.parametrize("field", ["epsilon", "delta"])
@pytest.mark.parametrize("value", [True, False, [1], {"x": 1}])
def test_sql_refuses_booleans_and_containers_as_numbers_before_any_charge(client_for, analyst_key, served, field, value):
    """``"epsilon": true`` was read as epsilon 1 and charged (pydantic coerced it before the bool refusal)."""
    entry, _key, headers = analyst_key
    body = {"sql": COUNT, "epsilon": "0.5", "delta": "1e-6", field: value}
    r = client_for().post("/v1/sql", headers=headers, json=body)
    assert r.status_code == 422 and r.json()["error"]["type"] == "ValidationError", r.text
    assert _charges(served, entry.analyst) == []


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/ask", {"question": "How many patients?", "epsilon": True}),
    ("/v1/ask", {"question": "How many patients?", "epsilon": "1", "delta": True}),
    ("/v1/ask/preview", {"question": "How many patients?", "epsilon": True}),
    ("/v1/sql", {"sql": COUNT, "epsilon": "1", "mode": "dp", "sender": True}),
    ("/v1/sql", {"sql": ["SELECT COUNT(*) FROM Patient"], "epsilon": "1"}),
    ("/v1/ask", {"question": 12, "epsilon": "1"}),
])
def test_every_analyst_body_is_strict(client_for, analyst_key, served, path, body):
    entry, _key, headers = analyst_key
    r = client_for().post(path, headers=headers, json=body)
    assert r.status_code == 422 and r.json()["error"]["type"] == "ValidationError", r.text
    assert _charges(served, entry.analyst) == []


@pytest.mark.parametrize("body", [{"epsilon": True, "delta": "1e-6"}, {"epsilon": "1", "delta": True}, {"epsilon": "1", "delta": "1e-6", "seed": True},
                                  {"epsilon": [1], "delta": "1e-6"}])
def test_the_synth_endpoint_is_strict(client_for, served, body):
    custodian = {"Authorization": f"Bearer {CUSTODIAN_TOKEN}"}
    with served.ledger() as ledger:
        before = len(ledger.charges())
    r = client_for().post("/v1/synth", headers=custodian, json=body)
    assert r.status_code == 422 and r.json()["error"]["type"] == "ValidationError", r.text
    with served.ledger() as ledger:
        assert len(ledger.charges()) == before


def test_a_number_is_still_a_number(client_for, analyst_key, served):
    """Strict does not mean text only: a JSON number is an epsilon (an integer too)."""
    entry, _key, headers = analyst_key
    r = client_for().post("/v1/sql", headers=headers, json={"sql": COUNT, "epsilon": 1})
    assert r.status_code == 200, r.text
    assert len(_charges(served, entry.analyst)) == 1


# ---------------------------------------------------------------- the error channel echoes nothing

@pytest.mark.parametrize("body", [
    {"sql": COUNT, "epsilon": {PRIVATE: PRIVATE}},
    {"sql": COUNT, "epsilon": [PRIVATE]},
    {"sql": COUNT, "epsilon": "1", "mode": PRIVATE},
    {"sql": COUNT, "epsilon": "1", PRIVATE: 1},
    {"sql": COUNT, "epsilon": "1", "sender": PRIVATE * 10},
])
def test_a_422_does_not_echo_the_offending_input(client_for, analyst_key, body):
    _entry, _key, headers = analyst_key
    r = client_for().post("/v1/sql", headers=headers, json=body)
    assert r.status_code == 422, r.text
    assert "Alice" not in r.text and "HIV" not in r.text, r.text


def test_a_context_value_refused_by_the_grammar_is_not_echoed(client_for, analyst_key):
    _entry, _key, headers = analyst_key
    r = client_for().post("/v1/sql", headers=headers, json={"sql": COUNT, "epsilon": "1", "sender": PRIVATE + "\t"})
    assert r.status_code == 422 and r.json()["error"]["type"] == "ModeError", r.text
    assert "Alice" not in r.text


@pytest.mark.parametrize("error", ["DataSourceError", "ConfigError", "EngineError", "QueryTimeout"])
def test_a_503_carries_the_fixed_text_not_the_data_sources(client_for, analyst_key, served, monkeypatch, error, caplog):
    import pimento.errors as errors

    exc = getattr(errors, error)(f"Binder Error: value '{PRIVATE}' in column name", hint=f"row of {PRIVATE}")
    _entry, _key, headers = analyst_key
    monkeypatch.setattr(type(served), "sql", lambda self, *a, **k: (_ for _ in ()).throw(exc))
    r = client_for().post("/v1/sql", headers=headers, json={"sql": COUNT, "epsilon": "1"})
    assert r.status_code == 503, r.text
    assert "Alice" not in r.text and "Binder" not in r.text, r.text
    assert r.json()["error"]["type"] == "DataSourceError"


# ---------------------------------------------------------------- rate buckets

class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_a_bucket_never_banks_more_than_its_burst_however_long_it_idles(monkeypatch):
    from pimento.service import limits

    clock = _Clock()
    monkeypatch.setattr(limits, "time", clock)
    bucket = limits.TokenBucket(rate=2.0, burst=3)
    assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take() == pytest.approx(0.5)
    clock.now += 10_000  # a long idle: 20,000 tokens accrued, 3 banked
    assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take() == pytest.approx(0.5)  # the 4th waits for the next token
    limiter = limits.RateLimiter(2.0, 3)
    assert [limiter.take("k") for _ in range(3)] == [0.0] * 3
    clock.now += 10_000
    assert [limiter.take("k") for _ in range(4)][-1] == pytest.approx(0.5)


def test_the_per_key_rate_limit_is_capped_after_idling_at_the_api(client_for, analyst_key, monkeypatch):
    from pimento.service import limits

    clock = _Clock()
    monkeypatch.setattr(limits, "time", clock)
    _entry, _key, headers = analyst_key
    client = client_for(rate=1.0, burst=2)
    assert client.get("/v1/me", headers=headers).status_code == 200  # the key's bucket exists from here
    clock.now += 3600  # an hour idle banks 2 requests, not 3,600
    assert [client.get("/v1/me", headers=headers).status_code for _ in range(3)] == [200, 200, 429]


def test_failed_sign_ins_are_limited_per_address(client_for, analyst_key, served):
    """Past ``auth_burst`` failed sign-ins from an address, a wrong key (or custodian token) is 429 on
    the API and the web sign-in; a valid key still passes; another address is not affected."""
    import re

    from fastapi.testclient import TestClient

    from pimento.service.app import ServiceOptions, create_app, token_digest

    _entry, key, headers = analyst_key
    app = create_app(served, ServiceOptions(custodian_token_sha256=token_digest(CUSTODIAN_TOKEN), rate=1000.0, burst=1000,
                                            auth_rate=0.0001, auth_burst=3))
    attacker = TestClient(app, raise_server_exceptions=False, client=("203.0.113.7", 4000))
    wrong = {"Authorization": "Bearer pmk_00000000_" + "y" * 43}
    assert [attacker.get("/v1/me", headers=wrong).status_code for _ in range(3)] == [401, 401, 401]
    for path, h in (("/v1/budget", wrong), ("/v1/caps", {"Authorization": "Bearer not-the-custodian-token"}), ("/v1/me", {})):
        r = attacker.get(path, headers=h)
        assert r.status_code == 429 and r.json()["error"]["type"] == "RateLimited" and int(r.headers["retry-after"]) >= 1, r.text
    assert attacker.get("/v1/me", headers=headers).status_code == 200  # a valid key is not locked out
    login = attacker.get("/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', login.text).group(1)
    r = attacker.post("/login", data={"csrf": csrf, "key": "pmk_wrong"}, follow_redirects=False)
    assert r.status_code == 429 and "too many failed sign-ins" in r.text
    other = TestClient(app, raise_server_exceptions=False, client=("198.51.100.9", 4000))
    assert other.get("/v1/me", headers=wrong).status_code == 401
