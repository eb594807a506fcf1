"""Issue 28 (PERF6): a repeat of a stored SQL answer is answered from the process's memo with one ledger read.

The memo (:mod:`pimento.release.answer_memo`) must answer exactly what the release path answers, with the budget
figures read now; only to the analyst whose answer it is; never after the database, its pimento.toml, its
deployment file or the ledger file changed; never while the releases are halted; and it must write and charge
nothing. The shared rate-limit state's process lock is checked at the end.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from fractions import Fraction
from pathlib import Path

import pytest

from pimento.mechanisms.ledger_identity import deployment_file
from pimento.service.open_databases import settings_file
from service_support import TESTCLIENT_WARNING, build_deployment

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)


@pytest.fixture(scope="module")
def served(tmp_path_factory, standin_synthetic):
    """The deployment as ``pimento serve`` holds it (:meth:`Deployment.hold_open`: the ledger kept open, so that a
    release's ledger closing does not checkpoint the WAL into the ledger file), closed at the end."""
    from pimento.service.deployment import Deployment, SearchSettings

    db = build_deployment(tmp_path_factory.mktemp("memo"), standin_synthetic, ledger='epsilon_cap = "1000"\ndelta_cap = "0.001"')
    deployment = Deployment(db, search=SearchSettings(rollouts=2, k=5))
    deployment.hold_open()
    yield deployment
    deployment.close()


def _sql(n: int) -> str:
    return f"SELECT COUNT(*) FROM Patient WHERE birth_year <> {700000 + n}"


def _ledger_state(served):
    with served.ledger() as ledger:
        return len(ledger.charges()), len(ledger.audit_rows())


@pytest.fixture
def sessions(served, monkeypatch):
    """Counts the release path's sessions (a memo hit opens none)."""
    opened = []
    real = served.session

    def counting(analyst):
        opened.append(analyst)
        return real(analyst)

    monkeypatch.setattr(served, "session", counting)
    return opened


def _post(client, headers, sql, epsilon="0.5"):
    r = client.post("/v1/sql", headers=headers, json={"sql": sql, "epsilon": epsilon, "accept_noise": True})
    assert r.status_code == 200, r.text
    return r.json()


def _memoized(client, headers, sql, sessions):
    """Release ``sql`` fresh, then once more (the release path's stored answer, which the memo keeps), then a third time
    from the memo: two sessions in all; returns the second answer."""
    _post(client, headers, sql)
    slow = _post(client, headers, sql)
    _post(client, headers, sql)
    assert len(sessions) == 2
    return slow


def test_a_repeat_is_the_release_paths_answer_with_the_budget_read_now(client_for, analyst_key, served, sessions):
    _entry, _key, headers = analyst_key
    client = client_for()
    sql = _sql(1)
    fresh = _post(client, headers, sql)
    assert fresh["cached"] is False
    slow = _post(client, headers, sql)  # the release path returns the stored answer: the memo keeps it
    assert slow["cached"] is True and len(sessions) == 2
    state = _ledger_state(served)
    hit = _post(client, headers, sql)
    assert len(sessions) == 2, "the repeat took the release path"
    assert hit == slow and list(hit) == list(slow)  # the same answer, keys in the same order
    assert _ledger_state(served) == state  # no charge, no audit row (as for the release path's cached answer)
    _post(client, headers, _sql(2), epsilon="0.25")  # another spend: the budget left must show it
    again = _post(client, headers, sql)
    assert len(sessions) == 3  # the spend above; the repeat was the memo's
    assert again["budget_left"] != slow["budget_left"]
    assert {k: v for k, v in again.items() if k != "budget_left"} == {k: v for k, v in slow.items() if k != "budget_left"}
    with served.ledger() as ledger:
        left = ledger.remaining(served.location, _entry.analyst)
    assert Fraction(again["budget_left"]["epsilon"]) == left.epsilon


def test_another_analyst_never_meets_the_memo(client_for, analyst_key, served, sessions):
    _entry, _key, headers = analyst_key
    other, other_key = served.add_key(_entry.analyst + "-other")
    client = client_for()
    sql = _sql(3)
    for _ in range(3):
        _post(client, headers, sql)
    assert served.memo.find(_entry.analyst, served.request(_key_of(served, headers), sql=sql, epsilon="0.5"), served.files()) is not None
    state = _ledger_state(served)
    theirs = _post(client, {"Authorization": f"Bearer {other_key}"}, sql)
    assert theirs["cached"] is False and theirs["analyst"] == other.analyst  # their own release, charged to them
    assert _ledger_state(served)[0] == state[0] + 1


def _key_of(served, headers):
    return served.keys.verify(headers["Authorization"].split(" ", 1)[1])


@pytest.mark.parametrize("which", ["database", "settings", "deployment", "copy"])
def test_a_changed_file_misses_the_memo(client_for, analyst_key, served, sessions, which):
    _entry, _key, headers = analyst_key
    client = client_for()
    sql = _sql(10)
    slow = _memoized(client, headers, sql, sessions)
    path = {"database": Path(served.location), "settings": settings_file(served.db, served.location),
            "deployment": deployment_file(served.location), "ledger": Path(served.ledger_file), "copy": served._synthetic_path()}[which]
    st = os.stat(path)
    if which == "database":  # the service refuses a replaced database: a changed mtime is the change it must see
        served.identity = None
    try:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        again = _post(client, headers, sql)
        assert len(sessions) == 3, f"a changed {which} file was answered from the memo"
        assert again == slow
        _post(client, headers, sql)
        assert len(sessions) == 3  # remembered again under the files as they are now
    finally:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_the_ledger_file_is_compared_by_device_and_inode_and_read_on_every_hit(client_for, analyst_key, served, sessions, monkeypatch):
    """(PERF7) A WAL checkpoint moves the ledger file's size and mtime: the entry holds (no trip to the release path,
    which took about 1.5 % of the cached requests under load; the memo's kept ledger, keyed by the files in full, is
    opened again and reads everything); a ledger file put in its place (another inode) misses."""
    from pimento.release import answer_memo

    _entry, _key, headers = analyst_key
    client = client_for()
    sql = _sql(11)
    slow = _memoized(client, headers, sql, sessions)
    path = Path(served.ledger_file)
    st = os.stat(path)
    try:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # as a checkpoint does
        assert _post(client, headers, sql) == slow and len(sessions) == 2  # (the kept ledger is opened again: files differ)
    finally:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    real = answer_memo.identities

    def replaced(*args):
        files = real(*args)
        ledger = files[3]
        return (*files[:3], (ledger[0], ledger[1] + 1, ledger[2], ledger[3]), files[4])

    monkeypatch.setattr("pimento.service.deployment.identities", replaced)
    assert _post(client, headers, sql) == slow and len(sessions) == 3, "a ledger file with another inode was answered from the memo"


def test_a_halted_deployment_refuses_a_memoized_answer_as_the_release_path_does(client_for, analyst_key, served, sessions):
    _entry, _key, headers = analyst_key
    client = client_for()
    sql = _sql(20)
    for _ in range(3):
        _post(client, headers, sql)
    assert len(sessions) == 2
    try:
        with served.ledger() as ledger:
            ledger.halt(served.location, {"error": "test halt"})
        r = client.post("/v1/sql", headers=headers, json={"sql": sql, "epsilon": "0.5", "accept_noise": True})
        assert r.status_code == 503 and r.json()["error"]["type"] == "DeploymentHaltedError"
    finally:
        with served.ledger() as ledger:
            ledger.resume(served.location, "test over")
    assert _post(client, headers, sql)["cached"] is True


def test_the_shared_state_queues_a_process_threads_on_its_lock_not_on_sqlites(tmp_path):
    """A second thread of the process waits for the first's transaction on the process lock: with SQLite's own
    lock it would poll (here, with no busy timeout, fail at once with "database is locked")."""
    from pimento.service.shared_limits import SqliteState

    store = SqliteState(tmp_path / "state.sqlite")
    inside, go = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def hold(query):
        inside.set()
        go.wait(10)
        return query("SELECT 1", ())

    def second():
        try:
            store._conn().execute("PRAGMA busy_timeout = 0")
            store.run(lambda query: query("SELECT 2", ()))
        except sqlite3.Error as exc:  # pragma: no cover - the failure this test guards against
            errors.append(exc)

    first = threading.Thread(target=store.run, args=(hold,))
    first.start()
    assert inside.wait(10)
    other = threading.Thread(target=second)
    other.start()
    other.join(0.2)
    go.set()
    first.join(10)
    other.join(10)
    assert errors == []
