"""The analyst API: the key fixes the analyst, releases go through pimento.release, preview spends nothing."""

from __future__ import annotations

import json

import pytest

from neighbours import NoNoise
from service_support import CUSTODIAN_TOKEN, TESTCLIENT_WARNING
from pimento.demo.hospital import DEMO_QUESTION
from pimento.mechanisms.samplers import fixed_noise_for_tests
from pimento.service.deployment import HISTORY_FIELDS

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)

COUNT = "SELECT COUNT(*) FROM Patient"
JOIN = "SELECT COUNT(*) FROM Visit v JOIN Patient p ON v.pat_id = p.pat_id"
PRIVATE_FIELDS = ("rs", "scale", "te", "ls", "k_star", "private", "rs_upper", "log2_rs_steps", "true_value")


def _charges(served, analyst):
    with served.ledger() as ledger:
        return [c for c in ledger.charges() if c.analyst == analyst]


def _walk_keys(data):
    if isinstance(data, dict):
        for k, v in data.items():
            yield k
            yield from _walk_keys(v)
    elif isinstance(data, list):
        for v in data:
            yield from _walk_keys(v)


def test_no_key_or_a_wrong_key_is_refused_with_the_envelope(client_for):
    client = client_for()
    for headers in ({}, {"Authorization": "Bearer pmk_00000000_nope"}, {"Authorization": "Basic abc"}):
        r = client.get("/v1/budget", headers=headers)
        assert r.status_code == 401
        assert r.json()["error"]["type"] == "Unauthorized" and r.headers["www-authenticate"] == "Bearer"


def test_the_key_fixes_the_analyst_and_the_principal(client_for, analyst_key, served):
    entry, key, headers = analyst_key
    client = client_for()
    assert client.get("/v1/me", headers=headers).json() == {
        "analyst": entry.analyst, "principal": "employee:17", "key_id": entry.id, "modes": ["dp"], "senders": [], "purposes": [],
        "context": {"recipient": "employee:17", "senders": [], "purposes": []},
    }
    # A request cannot name another analyst: unknown fields are refused before anything is spent.
    r = client.post("/v1/sql", headers=headers, json={"sql": COUNT, "epsilon": "0.1", "analyst": "bob"})
    assert r.status_code == 422 and r.json()["error"]["type"] == "ValidationError"
    assert _charges(served, "bob") == [] and _charges(served, entry.analyst) == []


def test_sql_release_charges_the_keys_analyst_once_and_is_analyst_safe(client_for, analyst_key, served):
    entry, key, headers = analyst_key
    client = client_for()
    first = client.post("/v1/sql", headers=headers, json={"sql": JOIN, "epsilon": "0.5", "delta": "1e-6", "accept_noise": True})
    assert first.status_code == 200, first.text
    data = first.json()
    assert data["analyst"] == entry.analyst and data["cached"] is False
    assert not set(_walk_keys(data)) & set(PRIVATE_FIELDS), data
    again = client.post("/v1/sql", headers=headers, json={"sql": JOIN, "epsilon": "0.5", "delta": "1e-6", "accept_noise": True}).json()
    assert again["cached"] is True and again["value"] == data["value"]
    charges = _charges(served, entry.analyst)
    assert len(charges) == 1 and charges[0].id == data["charge_id"]
    budget = client.get("/v1/budget", headers=headers).json()
    assert budget["spent"]["epsilon"] == "0.5" and budget["analyst"] == entry.analyst


def test_released_counts_are_clamped_at_zero_and_say_so(client_for, analyst_key):
    _entry, _key, headers = analyst_key
    client = client_for()
    # A tiny epsilon on a join: the interval reaches far below zero, so it is clamped. The noise is
    # fixed at 0 (with real noise a large positive draw, a few percent of runs, lifted the interval
    # above zero and the test failed by chance).
    with fixed_noise_for_tests(NoNoise):
        data = client.post("/v1/sql", headers=headers, json={"sql": JOIN, "epsilon": "0.01", "delta": "1e-6", "accept_noise": True}).json()
    assert data["interval"][0] >= 0 and data["value"] >= 0 and data["clamped"] is True
    assert data["value"] == max(0, data["value_unclamped"])


def test_preview_spends_nothing_never_opens_the_private_database_and_matches_ask(client_for, analyst_key, served, monkeypatch):
    entry, _key, headers = analyst_key
    client = client_for()
    import sys

    import pimento.engines.database as database_module
    import pimento.release.session as session_module

    def forbidden(*args, **kwargs):
        raise AssertionError("the preview opened the private database")

    with monkeypatch.context() as m:
        # load_database wherever a module imported it (the service and the release layer import it at their top)
        for module in [mod for name, mod in sys.modules.items() if name.startswith("pimento.")]:
            if getattr(module, "load_database", None) is database_module.load_database:
                m.setattr(module, "load_database", forbidden)
        m.setattr(session_module.Session, "__init__", forbidden)
        r = client.post("/v1/ask/preview", headers=headers, json={"question": DEMO_QUESTION, "epsilon": "1", "delta": "1e-6"})
    assert r.status_code == 200, r.text
    preview = r.json()
    assert preview["spent"] == {"epsilon": "0", "delta": "0"} and _charges(served, entry.analyst) == []
    assert preview["chosen_sql"].startswith("SELECT COUNT") and preview["alternatives"]
    assert preview["estimated_half_width_95"] >= 0 and preview["guarantee_if_confirmed"]["epsilon"] == "2.6"
    # The epsilon planner: the requested epsilon's row is the estimate; more epsilon buys a narrower interval.
    planner = {row["epsilon"]: row["estimated_half_width_95"] for row in preview["planner"]}
    assert planner["1"] == preview["estimated_half_width_95"] and set(planner) >= {"0.1", "0.5", "2"}
    widths = [row["estimated_half_width_95"] for row in preview["planner"]]
    assert widths == sorted(widths, reverse=True) and widths[0] > widths[-1]
    answer = client.post("/v1/ask", headers=headers, json={"question": DEMO_QUESTION, "epsilon": "1", "delta": "1e-6", "accept_noise": True}).json()
    assert answer["chosen_sql"] == preview["chosen_sql"]  # confirming answers what was previewed
    assert answer["guarantee"]["epsilon"] == "2.6" and "clamped" in answer
    assert len(_charges(served, entry.analyst)) == 1


def test_history_holds_only_my_released_answers_and_only_safe_fields(client_for, analyst_key, served):
    entry, _key, headers = analyst_key
    client = client_for()
    other, other_key = served.add_key(entry.analyst + "-other")
    client.post("/v1/sql", headers={"Authorization": f"Bearer {other_key}"}, json={"sql": COUNT, "epsilon": "0.3", "accept_noise": True})
    client.post("/v1/sql", headers=headers, json={"sql": COUNT, "epsilon": "0.2", "accept_noise": True})
    client.post("/v1/sql", headers=headers, json={"sql": JOIN, "epsilon": "0.2", "delta": "1e-6", "accept_noise": True})
    history = client.get("/v1/history", headers=headers).json()
    assert history["analyst"] == entry.analyst
    answers = history["answers"]
    assert [a["sql"] for a in answers] == ["SELECT COUNT(*) FROM Patient AS p JOIN Visit AS v ON p.pat_id = v.pat_id", COUNT]
    allowed = set(HISTORY_FIELDS) | {"clamped", "value_unclamped", "part", "authorized_exact"}  # part: pimento.mechanisms.audit.released_part
    for a in answers:
        assert set(a) <= allowed, set(a) - allowed
    # The audit rows behind them do hold private quantities: the filter is what keeps them out.
    with served.ledger() as ledger:
        rows = [r for r in ledger.audit_rows() if r.get("analyst") == entry.analyst and r.get("outcome") == "released"]
    assert any("private" in r for r in rows)


def test_a_failure_after_the_charge_reads_the_fixed_message_without_engine_text(client_for, analyst_key, served, monkeypatch):
    """It halts the deployment: a 503 with one fixed body, for this request and every later one, until resumed."""
    from pimento import sensitivity
    from pimento.errors import DeploymentHaltedError

    entry, _key, headers = analyst_key
    other, other_key = served.add_key(entry.analyst + "-later")
    secret = "engine said: 4711 rows in Visit"

    def boom(*args, **kwargs):
        raise RuntimeError(secret)

    client = client_for()
    try:
        with monkeypatch.context() as m:
            m.setattr(sensitivity, "residual_sensitivity", boom)
            r = client.post("/v1/sql", headers=headers, json={"sql": JOIN, "epsilon": "0.1", "delta": "1e-6", "accept_noise": True})
        assert r.status_code == 503 and "4711" not in r.text
        body = r.json()
        assert body["error"] == {"type": "DeploymentHaltedError", "message": DeploymentHaltedError.MESSAGE, "hint": DeploymentHaltedError.HINT}
        later = client.post("/v1/sql", headers={"Authorization": f"Bearer {other_key}"}, json={"sql": COUNT, "epsilon": "0.1"})
        assert later.status_code == 503 and later.json() == body and _charges(served, other.analyst) == []
        assert client.get("/v1/budget", headers=headers).status_code == 200  # read-only queries still work
        assert client.get("/v1/history", headers=headers).status_code == 200
    finally:
        with served.ledger() as ledger:
            ledger.resume(served.location, "test over")
    assert client.post("/v1/sql", headers={"Authorization": f"Bearer {other_key}"}, json={"sql": COUNT, "epsilon": "0.1"}).status_code == 200


def test_an_unexpected_error_is_a_500_with_a_fixed_message(client_for, analyst_key, served, monkeypatch):
    _entry, _key, headers = analyst_key
    monkeypatch.setattr(type(served), "budget", lambda self, key: (_ for _ in ()).throw(ValueError("secret 1234")))
    r = client_for().get("/v1/budget", headers=headers)
    assert r.status_code == 500 and "1234" not in r.text
    assert r.json()["error"] == {"type": "InternalError", "message": "internal error in the Pimento service; nothing was released",
                                 "hint": "ask the custodian to check the service's log and `pimento audit`"}


def test_budget_refusal_is_409_and_spends_nothing(client_for, served):
    entry, key = served.add_key("bounded-" + __import__("secrets").token_hex(3))
    headers = {"Authorization": f"Bearer {key}"}
    r = client_for().post("/v1/sql", headers=headers, json={"sql": COUNT, "epsilon": "5000"})
    assert r.status_code == 409 and r.json()["error"]["type"] == "BudgetError"
    assert _charges(served, entry.analyst) == []


def test_bad_parameters_and_bad_sql_are_422(client_for, analyst_key):
    _entry, _key, headers = analyst_key
    client = client_for()
    r = client.post("/v1/sql", headers=headers, json={"sql": COUNT, "epsilon": "-1"})
    assert r.status_code == 422 and r.json()["error"]["type"] == "PrivacyParameterError"
    r = client.post("/v1/sql", headers=headers, json={"sql": "SELECT name FROM Patient", "epsilon": "1"})
    assert r.status_code == 422 and r.json()["error"]["type"] in ("SqlError", "UnsupportedQuery")


def test_rate_limit_is_per_key_and_says_when_to_retry(client_for, served):
    client = client_for(rate=0.01, burst=3)
    _a, key_a = served.add_key("rl-a")
    _b, key_b = served.add_key("rl-b")
    codes = [client.get("/v1/me", headers={"Authorization": f"Bearer {key_a}"}).status_code for _ in range(5)]
    assert codes == [200, 200, 200, 429, 429]
    r = client.get("/v1/me", headers={"Authorization": f"Bearer {key_a}"})
    assert r.json()["error"]["type"] == "RateLimited" and int(r.headers["retry-after"]) >= 1
    assert client.get("/v1/me", headers={"Authorization": f"Bearer {key_b}"}).status_code == 200


def test_request_body_limit(client_for, analyst_key):
    _entry, _key, headers = analyst_key
    client = client_for(max_body_bytes=2048)
    r = client.post("/v1/sql", headers=headers, json={"sql": COUNT + " " * 4000, "epsilon": "1"})
    assert r.status_code == 413 and r.json()["error"]["type"] == "PayloadTooLarge"

    def chunks():
        yield b'{"sql": "' + b" " * 1500
        yield b" " * 1500 + b'", "epsilon": "1"}'

    r = client.post("/v1/sql", headers={**headers, "Content-Type": "application/json"}, content=chunks())
    assert r.status_code == 413


def test_revoked_key_is_refused_at_once(client_for, served):
    entry, key = served.add_key("revoked-one")
    client = client_for()
    headers = {"Authorization": f"Bearer {key}"}
    assert client.get("/v1/me", headers=headers).status_code == 200
    served.revoke_key(entry.id)
    assert client.get("/v1/me", headers=headers).status_code == 401


def test_custodian_endpoints(client_for, analyst_key, served):
    _entry, _key, headers = analyst_key
    custodian = {"Authorization": f"Bearer {CUSTODIAN_TOKEN}"}
    client = client_for()
    for path in ("/v1/audit", "/v1/caps", "/v1/keys"):
        assert client.get(path, headers=headers).status_code == 401  # an analyst key is not the custodian token
        assert client.get(path, headers=custodian).status_code == 200
    added = client.post("/v1/keys", headers=custodian, json={"analyst": "carol", "principal": "employee:3"}).json()
    assert added["key"].startswith("pmk_") and added["analyst"] == "carol"
    assert added["key"] not in json.dumps(client.get("/v1/keys", headers=custodian).json())
    assert client.get("/v1/me", headers={"Authorization": f"Bearer {added['key']}"}).json()["analyst"] == "carol"
    assert client.delete(f"/v1/keys/{added['id']}", headers=custodian).json()["revoked"]
    assert client.delete("/v1/keys/nope", headers=custodian).status_code == 400
    off = client_for(custodian_token_sha256=None)
    r = off.get("/v1/audit", headers=custodian)
    assert r.status_code == 403 and "off" in r.json()["error"]["message"]


def test_openapi_is_published(client_for):
    spec = client_for().get("/openapi.json").json()
    for path in ("/v1/ask", "/v1/ask/preview", "/v1/sql", "/v1/budget", "/v1/history", "/v1/audit", "/v1/keys", "/v1/caps"):
        assert path in spec["paths"], path


def test_the_docs_name_every_field_an_analyst_receives(client_for, analyst_key):
    """docs/service-api.md (with the sql/ask pages and analyst-learns it points to) names every top-level field."""
    from pathlib import Path

    docs = Path(__file__).resolve().parents[3] / "docs"
    text = "".join((docs / name).read_text(encoding="utf-8") for name in ("service-api.md", "analyst-learns.md", "sql.md", "ask.md"))
    _entry, _key, headers = analyst_key
    client = client_for()
    body = {"question": DEMO_QUESTION, "epsilon": "1", "delta": "1e-6"}
    responses = {
        "me": client.get("/v1/me", headers=headers).json(),
        "catalog": client.get("/v1/catalog", headers=headers).json(),
        "sql": client.post("/v1/sql", headers=headers, json={"sql": JOIN, "epsilon": "1", "delta": "1e-6"}).json(),
        "preview": client.post("/v1/ask/preview", headers=headers, json=body).json(),
        "ask": client.post("/v1/ask", headers=headers, json=body).json(),
        "budget": client.get("/v1/budget", headers=headers).json(),
    }
    responses["history"] = client.get("/v1/history", headers=headers).json()["answers"][0]
    missing = sorted({f"{where}.{k}" for where, data in responses.items() for k in data if f"`{k}`" not in text})
    assert not missing, f"fields not named in the docs: {missing}"
