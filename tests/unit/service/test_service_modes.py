"""The release modes through the service: the context is the key's (recipient = its principal, sender and
purpose among those the custodian bound it to), the policy the custodian's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service_support import TESTCLIENT_WARNING, build_deployment

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)

JOIN = "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.diagnosis = 'Heart failure'"
GROUPED = "SELECT diagnosis, COUNT(*) AS n FROM Visit GROUP BY diagnosis ORDER BY diagnosis"


@pytest.fixture(scope="module")
def with_policy(tmp_path_factory, standin_synthetic):
    from fastapi.testclient import TestClient

    from pimento.service.app import ServiceOptions, create_app
    from pimento.service.deployment import Deployment, SearchSettings

    from policy_config import compile_example_policy, configure_policy

    folder = tmp_path_factory.mktemp("modes")
    db = build_deployment(folder, standin_synthetic, ledger='epsilon_cap = "100"', patients=120)
    policy = compile_example_policy(db, folder / "compiled.json")
    # Two deployments of the same data: one whose pimento.toml names the policy (the custodian's
    # step), one without it.
    import shutil

    served = folder / "with_policy"
    shutil.copytree(Path(db).parent, served, ignore=shutil.ignore_patterns("with_policy"))
    served_db = served / Path(db).name
    configure_policy(served_db, policy)
    deployment = Deployment(served_db, search=SearchSettings(rollouts=1, k=3))
    plain = Deployment(db, search=SearchSettings(rollouts=1, k=3))
    options = ServiceOptions(rate=1000, burst=1000)
    return deployment, TestClient(create_app(deployment, options), raise_server_exceptions=False), TestClient(create_app(plain, options), raise_server_exceptions=False)


def _charges(deployment, analyst):
    with deployment.ledger() as ledger:
        return [c for c in ledger.charges() if c.analyst == analyst]


def test_ci_answers_for_the_keys_principal_and_spends_nothing(with_policy):
    deployment, client, _plain = with_policy
    entry, key = deployment.add_key("ci-analyst", "employee:1", ["employee:1"], ["treatment"])
    headers = {"Authorization": f"Bearer {key}"}
    assert client.get("/v1/me", headers=headers).json()["modes"] == ["dp", "ci", "split", "contextual"]
    r = client.post("/v1/sql", headers=headers, json={"sql": GROUPED, "mode": "ci", "sender": "employee:1", "purpose": "treatment"})
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["mode"] == "ci" and data["context"]["recipient"] == "employee:1" and data["rows"]
    assert _charges(deployment, entry.analyst) == []
    # The analyst cannot name the recipient: the field does not exist.
    r = client.post("/v1/sql", headers=headers, json={"sql": GROUPED, "mode": "ci", "sender": "employee:1", "purpose": "treatment", "recipient": "employee:2"})
    assert r.status_code == 422 and r.json()["error"]["type"] == "ValidationError"


def test_contextual_and_split_are_charged_and_clamped(with_policy):
    deployment, client, _plain = with_policy
    entry, key = deployment.add_key("ctx-analyst", "employee:1", ["employee:1"], ["treatment"])
    headers = {"Authorization": f"Bearer {key}"}
    for mode in ("contextual", "split"):
        r = client.post("/v1/sql", headers=headers, json={"sql": JOIN, "epsilon": "1", "delta": "1e-6", "mode": mode, "sender": "employee:1", "purpose": "treatment",
                                                          "accept_noise": True})
        assert r.status_code == 200, r.text
        data = r.json()
        assert data["mode"] == mode and "clamped" in data and data["value"] >= 0 and data["interval"][0] >= 0
        assert "crs" not in json.dumps(data).lower()
    assert len(_charges(deployment, entry.analyst)) == 2


def test_what_each_mode_needs_is_refused_before_anything_is_spent(with_policy):
    deployment, client, plain = with_policy
    nobody, nobody_key = deployment.add_key("no-principal")
    entry, key = deployment.add_key("needs", "employee:1", ["employee:1", "employee:2"], ["treatment"])
    plain_key = plain.app.state.deployment.add_key("needs-plain", "employee:1")[1]  # keys are per deployment
    cases = [
        (client, nobody_key, {"mode": "ci", "sender": "employee:1", "purpose": "treatment"}, "needs a principal"),
        (client, key, {"mode": "contextual", "epsilon": "1", "delta": "1e-6"}, "bound to several senders"),
        (client, key, {"mode": "dp", "epsilon": "1", "sender": "employee:1"}, "sender and purpose are for"),
        (client, key, {"mode": "ci", "sender": "employee:1", "purpose": "treatment\t"}, "blanks around it"),
        (plain, plain_key, {"mode": "split", "epsilon": "1", "delta": "1e-6", "sender": "employee:1", "purpose": "treatment"}, "not served here"),
    ]
    for http, k, body, words in cases:
        r = http.post("/v1/sql", headers={"Authorization": f"Bearer {k}"}, json={"sql": JOIN, **body})
        assert r.status_code == 422 and r.json()["error"]["type"] == "ModeError" and words in r.json()["error"]["message"], r.text
    assert _charges(deployment, nobody.analyst) == [] and _charges(deployment, entry.analyst) == []


def test_the_web_page_asks_in_the_modes_the_deployment_serves(with_policy):
    import html
    import re

    from pimento.demo.hospital import DEMO_QUESTION

    deployment, client, plain = with_policy
    _entry, key = deployment.add_key("web-modes", "employee:1", ["employee:1"], ["treatment"])
    login = client.get("/login")
    client.post("/login", data={"csrf": re.search(r'name="csrf" value="([^"]+)"', login.text).group(1), "key": key})
    page = client.get("/ask").text
    assert 'id="mode"' in page and "you are the recipient, employee:1" in page
    assert '<select name="sender"' in page and '<option value="employee:1"' in page and '<input name="sender"' not in page
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    form = {"csrf": csrf, "question": DEMO_QUESTION, "epsilon": "1", "delta": "1e-6", "mode": "ci", "sender": "employee:1", "purpose": "treatment"}
    preview = client.post("/ask/preview", data=form)
    assert preview.status_code == 200 and "no budget" in preview.text
    previewed = html.unescape(re.search(r'name="previewed_sql" value="([^"]+)"', preview.text).group(1))
    answer = client.post("/ask/confirm", data={**form, "previewed_sql": previewed})
    assert answer.status_code == 200 and 'id="rows"' in answer.text and "employee:1" in answer.text
    assert 'id="changed"' not in answer.text
    split = client.post("/ask/confirm", data={**form, "mode": "split", "previewed_sql": previewed, "accept_noise": "1"})
    assert split.status_code == 200 and 'id="split"' in split.text and 'id="value"' in split.text
    bad = client.post("/ask/preview", data={**form, "mode": "contextual", "sender": "employee:2"})  # not in the page's choices
    assert bad.status_code == 403 and "not one this key is bound to" in bad.text
    # A key bound to no context is told to have it re-issued, and offered no sender to fill in.
    _e, unbound = deployment.add_key("web-unbound", "employee:1")
    other = type(client)(client.app, raise_server_exceptions=False)
    login = other.get("/login")
    other.post("/login", data={"csrf": re.search(r'name="csrf" value="([^"]+)"', login.text).group(1), "key": unbound})
    page = other.get("/ask").text
    assert "re-issue" in page and 'name="sender"' not in page
    # A deployment without a policy offers no mode choice.
    _e, plain_key = deployment.add_key("web-plain", "employee:1")  # the same key file serves both
    login = plain.get("/login")
    plain.post("/login", data={"csrf": re.search(r'name="csrf" value="([^"]+)"', login.text).group(1), "key": plain_key})
    assert 'id="mode"' not in plain.get("/ask").text


def _audit_count(deployment):
    with deployment.ledger() as ledger:
        return len(ledger.audit_rows())


def test_the_context_is_the_keys_an_analyst_cannot_name_another_sender_or_purpose(with_policy):
    """Finding 6 of issue 23: the sender was the analyst's word (employee:13 named himself and saw 149
    diagnoses instead of 53). The key now fixes it; another sender or purpose is 403 before anything
    is read, charged or audited."""
    deployment, client, _plain = with_policy
    entry, key = deployment.add_key("bound-13", "employee:13", ["employee:1"], ["treatment"])
    headers = {"Authorization": f"Bearer {key}"}
    me = client.get("/v1/me", headers=headers).json()
    assert me["context"] == {"recipient": "employee:13", "senders": ["employee:1"], "purposes": ["treatment"]}
    assert me["senders"] == ["employee:1"] and me["purposes"] == ["treatment"]
    audited = _audit_count(deployment)
    for body in ({"mode": "ci", "sender": "employee:13", "purpose": "treatment"},            # himself as sender
                 {"mode": "ci", "sender": "employee:2", "purpose": "treatment"},             # another sender
                 {"mode": "ci", "purpose": "research"},                                      # another purpose
                 {"mode": "contextual", "epsilon": "1", "delta": "1e-6", "sender": "employee:13"},
                 {"mode": "split", "epsilon": "1", "delta": "1e-6", "purpose": "research"}):
        sql = GROUPED if body["mode"] == "ci" else JOIN
        r = client.post("/v1/sql", headers=headers, json={"sql": sql, **body})
        assert r.status_code == 403, r.text
        error = r.json()["error"]
        assert error["type"] == "ContextNotAllowedError" and "not one this key is bound to" in error["message"]
        assert "employee:13" not in error["message"] and "research" not in error["message"]  # the request's value is not echoed
        r = client.post("/v1/ask", headers=headers, json={"question": "How many patients?", "epsilon": "1", **{k: v for k, v in body.items() if k != "epsilon"}})
        assert r.status_code == 403, r.text
    assert _charges(deployment, entry.analyst) == [] and _audit_count(deployment) == audited
    # Left out, the sender and purpose are the key's own (one each); the answer carries the bound context.
    for body in ({"mode": "ci"}, {"mode": "ci", "sender": "employee:1", "purpose": "treatment"}):
        r = client.post("/v1/sql", headers=headers, json={"sql": GROUPED, **body})
        assert r.status_code == 200, r.text
        assert r.json()["context"] == {"sender": "employee:1", "recipient": "employee:13", "purpose": "treatment"}
    r = client.post("/v1/sql", headers=headers, json={"sql": JOIN, "epsilon": "1", "delta": "1e-6", "mode": "contextual", "accept_noise": True})
    assert r.status_code == 200 and r.json()["context"] == {"sender": "employee:1", "recipient": "employee:13", "purpose": "treatment"}


def test_a_key_bound_to_several_senders_picks_one_and_the_answers_differ_by_context(with_policy):
    deployment, client, _plain = with_policy
    _entry, key = deployment.add_key("two-senders", "employee:13", ["employee:1", "employee:13"], ["treatment", "research"])
    headers = {"Authorization": f"Bearer {key}"}
    r = client.post("/v1/sql", headers=headers, json={"sql": GROUPED, "mode": "ci", "purpose": "treatment"})
    assert r.status_code == 422 and "bound to several senders" in r.json()["error"]["message"]
    assert "employee:1, employee:13" in r.json()["error"]["hint"]
    contexts = set()
    for sender in ("employee:1", "employee:13"):
        r = client.post("/v1/sql", headers=headers, json={"sql": GROUPED, "mode": "ci", "sender": sender, "purpose": "treatment"})
        assert r.status_code == 200, r.text
        contexts.add(tuple(sorted(r.json()["context"].items())))
    assert len(contexts) == 2  # each answer is for the context it was asked in (the service passes it through)


def test_keys_in_the_old_format_still_load_and_serve_dp_only(with_policy):
    """A key file written before keys carried senders and purposes: the keys load; modes ci, split,
    contextual are refused with a request to have the key re-issued; dp still answers."""
    import hashlib

    deployment, client, _plain = with_policy
    key = "pmk_0ld0ld00_" + "x" * 43
    data = json.loads(deployment.keys.path.read_text())
    data["keys"].append({"id": "0ld0ld00", "analyst": "old-format", "principal": "employee:1", "created": "2026-01-01T00:00:00+00:00",
                         "revoked": None, "sha256": hashlib.sha256(key.encode()).hexdigest()})  # no senders, no purposes
    deployment.keys.path.write_text(json.dumps(data))
    headers = {"Authorization": f"Bearer {key}"}
    assert client.get("/v1/me", headers=headers).json()["context"] == {"recipient": "employee:1", "senders": [], "purposes": []}
    r = client.post("/v1/sql", headers=headers, json={"sql": GROUPED, "mode": "ci", "sender": "employee:1", "purpose": "treatment"})
    assert r.status_code == 403 and "re-issue" in r.json()["error"]["hint"], r.text
    r = client.post("/v1/sql", headers=headers, json={"sql": "SELECT COUNT(*) FROM Patient", "epsilon": "0.5"})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(("principal", "senders", "purposes", "words"), [
    ("employe:172", ["employee:1"], ["treatment"], "unknown principal"),       # a kind the policy does not name
    ("employee:999999", ["employee:1"], ["treatment"], "unknown principal"),   # no such employee
    ("employee:1", ["employe:1"], ["treatment"], "unknown sender"),
    ("employee:1", ["employee:1"], ["marketting"], "unknown purpose"),
    ("employee:1", ["employee:1"], ["treatment\t"], "invalid purpose"),
    ("employee:1", ["employee:1"], [], "needs its principal, at least one sender and at least one purpose"),
    (None, ["employee:1"], ["treatment"], "needs its principal"),
])
def test_keys_add_checks_the_context_against_the_policy(with_policy, principal, senders, purposes, words):
    from pimento.errors import UserError

    deployment, _client, _plain = with_policy
    before = len(deployment.keys.keys())
    with pytest.raises(UserError, match=words):
        deployment.add_key("checked", principal, senders, purposes)
    assert len(deployment.keys.keys()) == before


def test_the_custodian_issues_bound_keys_through_the_api_and_the_cli(with_policy):
    from typer.testing import CliRunner

    from pimento.cli.app import app

    from service_support import CUSTODIAN_TOKEN

    from fastapi.testclient import TestClient

    from pimento.service.app import ServiceOptions, create_app, token_digest

    deployment, _client, _plain = with_policy
    custodian = TestClient(create_app(deployment, ServiceOptions(custodian_token_sha256=token_digest(CUSTODIAN_TOKEN), rate=1000, burst=1000)),
                           raise_server_exceptions=False)
    auth = {"Authorization": f"Bearer {CUSTODIAN_TOKEN}"}
    added = custodian.post("/v1/keys", headers=auth, json={"analyst": "api-bound", "principal": "employee:3", "senders": ["employee:1"], "purposes": ["treatment"]})
    assert added.status_code == 200 and added.json()["senders"] == ["employee:1"] and added.json()["purposes"] == ["treatment"], added.text
    bad = custodian.post("/v1/keys", headers=auth, json={"analyst": "api-bad", "principal": "employe:3", "senders": ["employee:1"], "purposes": ["treatment"]})
    assert bad.status_code == 422 and "unknown principal" in bad.json()["error"]["message"]
    runner = CliRunner()
    db = str(deployment.db)
    out = runner.invoke(app, ["keys", "add", "--db", db, "--analyst", "cli-bound", "--principal", "employee:3", "--sender", "employee:1",
                              "--sender", "employee:2", "--purpose", "treatment", "--json"])
    assert out.exit_code == 0, out.output
    entry = json.loads(out.stdout)
    assert entry["senders"] == ["employee:1", "employee:2"] and entry["purposes"] == ["treatment"] and entry["key"].startswith("pmk_")
    out = runner.invoke(app, ["keys", "add", "--db", db, "--analyst", "cli-bad", "--principal", "employe:172", "--sender", "employee:1",
                              "--purpose", "treatment"])
    assert out.exit_code == 2 and "unknown principal" in out.stderr, out.output
    # The custodian's web form: senders and purposes separated by commas or blanks.
    import re

    login = custodian.get("/login")
    custodian.post("/login", data={"csrf": re.search(r'name="csrf" value="([^"]+)"', login.text).group(1), "key": CUSTODIAN_TOKEN})
    csrf = re.search(r'name="csrf" value="([^"]+)"', custodian.get("/custodian").text).group(1)
    page = custodian.post("/custodian/keys", data={"csrf": csrf, "analyst": "web-bound", "principal": "employee:3",
                                                    "senders": "employee:1, employee:2", "purposes": "treatment"})
    assert page.status_code == 200 and 'id="new-key-value"' in page.text, page.text
    web_key = deployment.keys.verify(re.search(r'id="new-key-value">([^<]+)<', page.text).group(1))
    assert web_key.senders == ("employee:1", "employee:2") and web_key.purposes == ("treatment",)
    page = custodian.post("/custodian/keys", data={"csrf": csrf, "analyst": "web-bad", "principal": "employee:3", "senders": "employe:1",
                                                    "purposes": "treatment"})
    assert page.status_code == 422 and "unknown sender" in page.text
    listed = json.loads(runner.invoke(app, ["keys", "list", "--db", db, "--json"]).stdout)["keys"]
    assert [(k["senders"], k["purposes"]) for k in listed if k["analyst"] == "cli-bound"] == [(["employee:1", "employee:2"], ["treatment"])]
    assert runner.invoke(app, ["keys", "list", "--db", db]).exit_code == 0


CLEAN = ("employee:1", "employee:1", "treatment")


@pytest.mark.parametrize("fields", [
    CLEAN,
    ("employee:1", "employee:1", "treatment\t"),     # finding 8: `pimento sql` answered this for treatment
    ("employee:1", "employee:1", "treatment "),
    (" employee:1", "employee:1", "treatment"),
    ("employee:1\x00", "employee:1", "treatment"),
    ("employee:1", "employee:1\n", "treatment"),
])
def test_every_path_gives_the_same_verdict_on_the_same_context(with_policy, fields):
    """Finding 8 of issue 23: one grammar for contexts. Context.parse, `pimento sql --context`,
    `pimento authorize`, Session and the service accept exactly the same texts, taken verbatim."""
    from typer.testing import CliRunner

    from pimento.cli.app import app
    from pimento.errors import ModeError
    from pimento.release import Context, Session

    deployment, client, _plain = with_policy
    sender, recipient, purpose = fields
    text = f"sender={sender},recipient={recipient},purpose={purpose}"
    ok = fields == CLEAN
    verdicts = {}
    try:
        Context.parse(text)
        verdicts["Context.parse"] = True
    except ModeError:
        verdicts["Context.parse"] = False
    runner = CliRunner()
    db = str(deployment.db)
    out = runner.invoke(app, ["sql", "--db", db, "--mode", "ci", "--sql", GROUPED, "--context", text, "--json"])
    assert out.exit_code in (0, 2) and "Traceback" not in out.output, out.output
    verdicts["pimento sql"] = out.exit_code == 0
    out = runner.invoke(app, ["authorize", "--db", db, "--sender", sender, "--recipient", recipient, "--purpose", purpose, "--sql", GROUPED, "--json"])
    assert out.exit_code in (0, 2) and "Traceback" not in out.output, out.output
    verdicts["pimento authorize"] = out.exit_code == 0
    for context in (text, {"sender": sender, "recipient": recipient, "purpose": purpose}):
        with Session(db, analyst="grammar") as session:
            try:
                session.release_sql(GROUPED, mode="ci", context=context)
                verdicts[f"Session {type(context).__name__}"] = True
            except ModeError:
                verdicts[f"Session {type(context).__name__}"] = False
    if recipient == CLEAN[1]:  # on the service the recipient is the key's principal: only sender and purpose travel
        _entry, key = deployment.add_key("grammar-svc", "employee:1", ["employee:1"], ["treatment"])
        r = client.post("/v1/sql", headers={"Authorization": f"Bearer {key}"}, json={"sql": GROUPED, "mode": "ci", "sender": sender, "purpose": purpose})
        assert r.status_code in (200, 422), r.text
        verdicts["service"] = r.status_code == 200
    assert verdicts == dict.fromkeys(verdicts, ok), verdicts


def test_the_answer_cache_follows_the_bound_context(with_policy):
    """An answer computed in one of the key's contexts is never returned, free and `cached`, in another
    (the service passes the bound context through to the Session, whose cache is keyed by it)."""
    deployment, client, _plain = with_policy
    entry, key = deployment.add_key("cache-ctx", "employee:13", ["employee:1", "employee:13"], ["treatment"])
    headers = {"Authorization": f"Bearer {key}"}
    body = {"sql": JOIN, "epsilon": "1", "delta": "1e-6", "mode": "contextual", "accept_noise": True}
    first = client.post("/v1/sql", headers=headers, json={**body, "sender": "employee:1"}).json()
    other = client.post("/v1/sql", headers=headers, json={**body, "sender": "employee:13"}).json()
    again = client.post("/v1/sql", headers=headers, json={**body, "sender": "employee:1"}).json()
    assert first["cached"] is False and other["cached"] is False and again["cached"] is True, (first, other, again)
    assert other["context"]["sender"] == "employee:13" and again["value"] == first["value"]
    assert len(_charges(deployment, entry.analyst)) == 2


#: A reading the search alone never chooses for the demo question: the contextual mode's, in the test below.
CONTEXTUAL_READING = "SELECT COUNT(*) FROM Patient AS p JOIN Visit AS v ON p.pat_id = v.pat_id WHERE v.diagnosis = 'Asthma'"


def test_the_preview_reads_the_question_in_its_mode_and_ask_releases_that_reading(with_policy, monkeypatch):
    """Issue 24: the preview (API and web page) is the reading of the same request the answer releases,
    in its mode: in contextual mode the contextual reading, not the dp one (the web page used to preview
    the dp reading). The contextual mode's choice on the copy is pinned to a reading the search never makes."""
    import html
    import re

    from pimento.demo.hospital import DEMO_QUESTION
    from pimento.release.modes.contextual import ContextualMode

    monkeypatch.setattr(ContextualMode, "reading_on_copy", lambda self, job, outcome, synthetic, catalog: (CONTEXTUAL_READING, 1.0))
    deployment, client, _plain = with_policy
    entry, key = deployment.add_key("preview-ctx", "employee:1", ["employee:1"], ["treatment"])
    headers = {"Authorization": f"Bearer {key}"}
    body = {"question": DEMO_QUESTION, "epsilon": "1", "delta": "1e-6"}
    dp = client.post("/v1/ask/preview", headers=headers, json=body).json()
    assert dp["mode"] == "dp" and dp["chosen_sql"] != CONTEXTUAL_READING
    r = client.post("/v1/ask/preview", headers=headers, json={**body, "mode": "contextual"})
    assert r.status_code == 200, r.text
    preview = r.json()
    assert preview["mode"] == "contextual" and preview["chosen_sql"] == CONTEXTUAL_READING and preview["synthetic_crs"] == 1.0
    assert _charges(deployment, entry.analyst) == []
    answer = client.post("/v1/ask", headers=headers, json={**body, "mode": "contextual", "expect_sql": CONTEXTUAL_READING})
    assert answer.status_code == 200, answer.text
    assert answer.json()["chosen_sql"] == CONTEXTUAL_READING and answer.json()["mode"] == "contextual"
    assert len(_charges(deployment, entry.analyst)) == 1
    # The web page previews the same request (its mode, the key's context) and confirms what it showed.
    page_client = type(client)(client.app, raise_server_exceptions=False)
    login = page_client.get("/login")
    page_client.post("/login", data={"csrf": re.search(r'name="csrf" value="([^"]+)"', login.text).group(1), "key": key})
    csrf = re.search(r'name="csrf" value="([^"]+)"', page_client.get("/ask").text).group(1)
    form = {"csrf": csrf, **body, "mode": "contextual", "sender": "employee:1", "purpose": "treatment"}
    shown = page_client.post("/ask/preview", data=form)
    assert shown.status_code == 200, shown.text
    previewed = html.unescape(re.search(r'name="previewed_sql" value="([^"]+)"', shown.text).group(1))
    assert previewed == CONTEXTUAL_READING
    confirmed = page_client.post("/ask/confirm", data={**form, "previewed_sql": previewed})
    assert confirmed.status_code == 200 and CONTEXTUAL_READING.replace("'", "&#39;") in confirmed.text
    assert len(_charges(deployment, entry.analyst)) == 1  # the same request again: the cached answer, free
