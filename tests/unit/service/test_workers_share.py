"""Several worker processes on one deployment (``pimento serve --workers N``): what they share.

Each "worker" here is a Deployment and an application of its own on the same database (as each
uvicorn worker process builds one): rate limits and failed sign-ins draw from the same buckets
(:mod:`pimento.service.shared_limits`), a synthetic copy put in place by another process is read
by this one (``Deployment.refresh_copy``), and a question read once on a copy is not searched
again by any of them (:mod:`pimento.release.reading_cache`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from service_support import TESTCLIENT_WARNING, build_deployment

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)

QUESTION = "How many patients are there?"


def _worker(db, *, rate=1000.0, burst=1000, auth_burst=20):
    from fastapi.testclient import TestClient

    from pimento.service.app import ServiceOptions, create_app
    from pimento.service.deployment import Deployment, SearchSettings

    deployment = Deployment(db, search=SearchSettings(rollouts=1, k=3))
    deployment.hold_open()
    options = ServiceOptions(rate=rate, burst=burst, auth_rate=0.001, auth_burst=auth_burst, shared_limits=True)
    return deployment, TestClient(create_app(deployment, options), raise_server_exceptions=False)


@pytest.fixture
def db(tmp_path, standin_synthetic):
    return build_deployment(tmp_path / "dep", standin_synthetic, patients=120)


def test_two_workers_draw_a_keys_requests_and_failed_sign_ins_from_one_bucket(db):
    (a, client_a), (b, client_b) = _worker(db, rate=0.001, burst=4, auth_burst=3), _worker(db, rate=0.001, burst=4, auth_burst=3)
    try:
        _entry, key = a.add_key("ann")
        headers = {"Authorization": f"Bearer {key}"}
        codes = [(client_a if i % 2 else client_b).get("/v1/me", headers=headers).status_code for i in range(8)]
        assert codes == [200] * 4 + [429] * 4  # per-process buckets would answer all 8
        wrong = {"Authorization": "Bearer not-a-key"}
        codes = [(client_a if i % 2 else client_b).get("/v1/me", headers=wrong).status_code for i in range(6)]
        assert codes == [401] * 3 + [429] * 3
    finally:
        a.close()
        b.close()


def test_a_sign_in_on_one_worker_is_a_sign_in_on_the_other(db):
    """The web page's sessions are shared (stored under the SHA-256 of their id, never the id)."""
    (a, client_a), (b, client_b) = _worker(db), _worker(db)
    try:
        _entry, key = a.add_key("ann")
        page = client_a.get("/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        assert client_a.post("/login", data={"csrf": csrf, "key": key}, follow_redirects=False).status_code == 303
        sid = client_a.cookies.get("pimento_session")
        client_b.cookies.set("pimento_session", sid)
        assert client_b.get("/ask", follow_redirects=False).status_code == 200
        state = (db.parent / "hospital.duckdb.ledger.sqlite.service-state.sqlite").read_bytes()
        assert sid.encode() not in state and (os.stat(db.parent / "hospital.duckdb.ledger.sqlite.service-state.sqlite").st_mode & 0o077) == 0
        client_b.cookies.set("pimento_session", "forged")
        assert client_b.get("/ask", follow_redirects=False).status_code == 303
    finally:
        a.close()
        b.close()


_TAKES = """
import sys
from pimento.service.shared_limits import SharedRateLimiter, SqliteState

limiter = SharedRateLimiter(SqliteState(sys.argv[1]), "key", rate=1e-9, burst=50)
print(sum(1 for _ in range(int(sys.argv[2])) if limiter.take("k1") == 0.0))
"""


def test_a_shared_bucket_gives_its_burst_once_across_processes(tmp_path):
    """Four processes race for 50 tokens (120 takes): exactly 50 are granted, never one more. Fresh
    interpreters, not forks: a fork of a test worker that imported JAX warns (and may deadlock)."""
    path = str(tmp_path / "buckets.sqlite")
    procs = [subprocess.Popen([sys.executable, "-c", _TAKES, path, "30"], stdout=subprocess.PIPE, text=True) for _ in range(4)]
    granted = 0
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        granted += int(out.strip())
    assert granted == 50


def test_the_shared_arithmetic_is_the_in_process_buckets(monkeypatch):
    """Same rate, burst and clock: the shared bucket grants and refuses exactly as TokenBucket does."""
    from pimento.service import limits
    from pimento.service.shared_limits import refill_and_take

    clock = [100.0]
    monkeypatch.setattr(limits.time, "monotonic", lambda: clock[0])
    bucket = limits.TokenBucket(rate=2.0, burst=3)
    tokens, stamp = 3.0, 100.0
    for step in (0.0, 0.0, 0.0, 0.0, 0.1, 0.4, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0):
        clock[0] += step
        tokens, stamp, wait = refill_and_take(tokens, stamp, clock[0], rate=2.0, burst=3)
        assert wait == pytest.approx(bucket.take())


def _replace_copy(db, standin_synthetic, *, patients: int, seed: int) -> None:
    folder = db.parent / f"made-{seed}"
    folder.mkdir()
    made = standin_synthetic(folder / "hospital.duckdb", patients=patients, seed=seed, for_database=db)
    os.replace(made, db.parent / "hospital.synthetic.duckdb")


def test_a_copy_put_in_place_by_another_process_is_read_by_this_one(db, standin_synthetic):
    """(One worker in this process: a second one here would share DuckDB's per-process instance of the old file.)"""
    b, _cb = _worker(db)
    try:
        entry, _key = b.add_key("ann")
        before = b.preview(entry, QUESTION, "1", None)["synthetic_answer"]
        _replace_copy(db, standin_synthetic, patients=37, seed=8)  # what another worker's POST /v1/synth does
        after = b.preview(entry, QUESTION, "1", None)["synthetic_answer"]
        assert (before, after) == (120, 37)
    finally:
        b.close()


def test_a_question_read_once_is_not_searched_again_by_any_worker(db, standin_synthetic, monkeypatch):
    """The preview's reading serves the ask on another worker (released afresh, not searched again); an
    ask repeated is not searched again; another analyst, another epsilon or another copy is."""
    from pimento.release import ask as release_ask

    searches: list[str] = []
    real = release_ask.search_question

    def counted(question, *args, **kwargs):
        searches.append(question)
        return real(question, *args, **kwargs)

    monkeypatch.setattr(release_ask, "search_question", counted)
    (a, _ca), (b, _cb) = _worker(db), _worker(db)
    try:
        keys = {name: a.add_key(name)[0] for name in ("ann", "bob")}
        seen = a.preview(keys["ann"], QUESTION, "0.5", None)
        assert len(searches) == 1
        first = b.ask(keys["ann"], QUESTION, "0.5", None)  # another worker: the preview's reading, a fresh release
        assert len(searches) == 1
        assert first["sql"] == seen["chosen_sql"] and first["cached"] is False
        assert a.ask(keys["ann"], QUESTION, "0.5", None)["cached"] is True and len(searches) == 1  # the answer cache, no search
        second = b.ask(keys["bob"], QUESTION, "0.5", None)  # another analyst reads for themself (timing tells nothing)
        assert len(searches) == 2 and second["sql"] == first["sql"] and second["charge_id"] != first["charge_id"]
        a.ask(keys["ann"], QUESTION, "0.25", None)  # another epsilon: another beta steers the search
        assert len(searches) == 3
        a.close()  # (in this one test process it would keep DuckDB's instance of the old file alive)
        _replace_copy(db, standin_synthetic, patients=50, seed=9)  # another copy: read again
        b.preview(keys["ann"], QUESTION, "0.5", None)
        assert len(searches) == 4
    finally:
        a.close()
        b.close()
