"""A memoized ``POST /v1/sql`` answered without a worker thread, rendered once (issue 28, PERF7).

The key check and the shared rate-limit take of a SQLite-backed deployment run on the event loop
(:func:`pimento.service.app.analyst_key`), so that a memo hit never waits for a worker thread behind fresh
releases; the memo's rendered answer is the release path's, byte for byte once parsed, keys in order.
"""

from __future__ import annotations

import json

import pytest

from service_support import TESTCLIENT_WARNING, build_deployment

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)


@pytest.fixture(scope="module")
def served(tmp_path_factory, standin_synthetic):
    """The deployment as ``pimento serve`` holds it (:meth:`Deployment.hold_open`), closed at the end."""
    from pimento.service.deployment import Deployment, SearchSettings

    db = build_deployment(tmp_path_factory.mktemp("perf7"), standin_synthetic, ledger='epsilon_cap = "1000"\ndelta_cap = "0.001"')
    deployment = Deployment(db, search=SearchSettings(rollouts=2, k=5))
    deployment.hold_open()
    yield deployment
    deployment.close()


@pytest.fixture
def hops(monkeypatch):
    """The calls FastAPI and the routes hand to a worker thread (their names)."""
    import fastapi.dependencies.utils
    import fastapi.routing

    from pimento.service import app as service_app

    seen: list[str] = []
    for module in (fastapi.dependencies.utils, fastapi.routing, service_app):
        real = module.run_in_threadpool

        async def counted(func, *args, _real=real, **kwargs):
            seen.append(getattr(func, "__name__", repr(func)))
            return await _real(func, *args, **kwargs)

        monkeypatch.setattr(module, "run_in_threadpool", counted)
    return seen


@pytest.mark.parametrize("shared_limits", [True, False])
def test_a_memo_hit_runs_no_worker_thread_and_is_the_release_paths_answer(client_for, analyst_key, served, hops, shared_limits):
    _entry, _key, headers = analyst_key
    client = client_for(shared_limits=shared_limits)
    body = {"sql": "SELECT COUNT(*) FROM Patient WHERE birth_year <> 810001", "epsilon": "0.5", "accept_noise": True}
    fresh = client.post("/v1/sql", headers=headers, json=body)
    slow = client.post("/v1/sql", headers=headers, json=body)  # the release path's stored answer: the memo keeps it
    assert fresh.status_code == slow.status_code == 200 and slow.json()["cached"] is True
    hops.clear()
    hit = client.post("/v1/sql", headers=headers, json=body)
    assert hit.status_code == 200 and hit.headers["content-type"] == "application/json"
    assert hops == [], f"a memo hit waited for worker threads: {hops}"  # the key check ran in one before
    assert hit.json() == slow.json() and list(hit.json()) == list(slow.json())
    assert json.loads(hit.content) == json.loads(slow.content)


def test_a_wrong_key_is_still_refused_and_counted_on_the_event_loop(client_for, served, hops):
    client = client_for(shared_limits=True, auth_burst=2, auth_rate=0.001)
    codes = [client.post("/v1/sql", headers={"Authorization": "Bearer wrong"}, json={"sql": "SELECT 1", "epsilon": "1"}).status_code
             for _ in range(4)]
    assert codes == [401, 401, 429, 429]
    assert "analyst" not in hops


def test_a_stored_answer_changed_under_the_same_charge_is_answered_as_the_release_path_answers_it(client_for, analyst_key, served):
    """The memo compares the whole stored answer, not only its charge id: an answer rewritten in the ledger (by hand:
    ``pimento audit verify`` reports it) is what the release path returns, so the memo must not return the old one."""
    import sqlite3

    _entry, _key, headers = analyst_key
    client = client_for()
    body = {"sql": "SELECT COUNT(*) FROM Patient WHERE birth_year <> 810002", "epsilon": "0.5", "accept_noise": True}
    for _ in range(3):
        memoized = client.post("/v1/sql", headers=headers, json=body).json()
    assert memoized["cached"] is True
    with sqlite3.connect(served.ledger_file) as raw:
        (text,) = raw.execute("SELECT answer FROM answers WHERE charge_id = ?", (memoized["charge_id"],)).fetchone()
        stored = json.loads(text)
        stored["value"], stored["value_exact"] = stored["value"] + 1, str(int(stored["value_exact"]) + 1)
        raw.execute("UPDATE answers SET answer = ? WHERE charge_id = ?", (json.dumps(stored, sort_keys=True), memoized["charge_id"]))
    again = client.post("/v1/sql", headers=headers, json=body).json()
    assert again["value"] == memoized["value"] + 1  # the release path's answer: the ledger's, as it now stands
