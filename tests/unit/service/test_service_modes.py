"""The release modes through the service: the recipient is the key's principal, the policy the custodian's."""

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
    entry, key = deployment.add_key("ci-analyst", "employee:1")
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
    entry, key = deployment.add_key("ctx-analyst", "employee:1")
    headers = {"Authorization": f"Bearer {key}"}
    for mode in ("contextual", "split"):
        r = client.post("/v1/sql", headers=headers, json={"sql": JOIN, "epsilon": "1", "delta": "1e-6", "mode": mode, "sender": "employee:1", "purpose": "treatment"})
        assert r.status_code == 200, r.text
        data = r.json()
        assert data["mode"] == mode and "clamped" in data and data["value"] >= 0 and data["interval"][0] >= 0
        assert "crs" not in json.dumps(data).lower()
    assert len(_charges(deployment, entry.analyst)) == 2


def test_what_each_mode_needs_is_refused_before_anything_is_spent(with_policy):
    deployment, client, plain = with_policy
    nobody, nobody_key = deployment.add_key("no-principal")
    entry, key = deployment.add_key("needs", "employee:1")
    plain_key = plain.app.state.deployment.add_key("needs-plain", "employee:1")[1]  # keys are per deployment
    cases = [
        (client, nobody_key, {"mode": "ci", "sender": "employee:1", "purpose": "treatment"}, "needs a principal"),
        (client, key, {"mode": "contextual", "epsilon": "1", "delta": "1e-6"}, "needs sender and purpose"),
        (client, key, {"mode": "dp", "epsilon": "1", "sender": "employee:1"}, "sender and purpose are for"),
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
    _entry, key = deployment.add_key("web-modes", "employee:1")
    login = client.get("/login")
    client.post("/login", data={"csrf": re.search(r'name="csrf" value="([^"]+)"', login.text).group(1), "key": key})
    page = client.get("/ask").text
    assert 'id="mode"' in page and "you are the recipient, employee:1" in page
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    form = {"csrf": csrf, "question": DEMO_QUESTION, "epsilon": "1", "delta": "1e-6", "mode": "ci", "sender": "employee:1", "purpose": "treatment"}
    preview = client.post("/ask/preview", data=form)
    assert preview.status_code == 200 and "no budget" in preview.text
    previewed = html.unescape(re.search(r'name="previewed_sql" value="([^"]+)"', preview.text).group(1))
    answer = client.post("/ask/confirm", data={**form, "previewed_sql": previewed})
    assert answer.status_code == 200 and 'id="rows"' in answer.text and "employee:1" in answer.text
    assert 'id="changed"' not in answer.text
    split = client.post("/ask/confirm", data={**form, "mode": "split", "previewed_sql": previewed})
    assert split.status_code == 200 and 'id="split"' in split.text and 'id="value"' in split.text
    bad = client.post("/ask/preview", data={**form, "mode": "contextual", "sender": ""})
    assert bad.status_code == 422 and "needs sender and purpose" in bad.text
    # A deployment without a policy offers no mode choice.
    _e, plain_key = deployment.add_key("web-plain", "employee:1")  # the same key file serves both
    login = plain.get("/login")
    plain.post("/login", data={"csrf": re.search(r'name="csrf" value="([^"]+)"', login.text).group(1), "key": plain_key})
    assert 'id="mode"' not in plain.get("/ask").text
