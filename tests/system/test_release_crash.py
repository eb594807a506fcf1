"""kill -9 during releases: no answer is returned without a charge, and the log accounts for every charge.

After each kill the abandoned pending charges are closed (``Ledger.close_abandoned``, which
``pimento audit verify`` runs first); then verify passes: every charge has exactly one audit
row (released, or "aborted, nothing released"), and every printed answer has its charge and a
``released`` row with the printed value.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pimento.config import LedgerSettings
from pimento.mechanisms import Ledger
from pimento.mechanisms.guarded import STAGES

WORKER = Path(__file__).parent / "_release_worker.py"


#: How long a worker may take to start or to print the answers a test waits for. Generous: on a
#: loaded machine a release takes longer, which is slow, not wrong; nothing here measures speed.
DEADLINE_S = 180.0


def reached(ledger_file: Path, stage: str) -> Callable[[], bool] | None:
    """What the ledger shows once a release paused at ``stage`` got there: its charge (after_charge,
    after_noise) or its stored answer (after_store). None for before_charge: a kill anywhere before
    the charge leaves no charge, so there is nothing to wait for."""
    table = {"after_charge": "charges", "after_noise": "charges", "after_store": "answers"}.get(stage)
    if table is None:
        return None

    def seen() -> bool:
        try:
            conn = sqlite3.connect(ledger_file.resolve().as_uri() + "?mode=ro", uri=True, timeout=1)
            try:
                return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] > 0
            finally:
                conn.close()
        except sqlite3.Error:  # not created yet, or busy: not seen yet
            return False

    return seen


def run_and_kill(
    ledger_file: Path,
    db: str,
    pause: str,
    wait_s: float,
    prefix: str = "i",
    *,
    after_answers: int = 0,
    until: Callable[[], bool] | None = None,
) -> list[dict]:
    """Start a worker; once it is ready, has printed ``after_answers`` answers and ``until()`` holds,
    let it run ``wait_s`` more seconds, kill -9 it; return the answers it printed.

    The waits are on events (or polls of ``until``), with :data:`DEADLINE_S` as a limit that only a
    hung worker reaches: a test that needs answers, or a release at a given stage, asks for them
    here instead of hoping that a fixed time is enough to get there.
    """
    env = {**os.environ, "PIMENTO_TEST_PAUSE": pause}
    proc = subprocess.Popen([sys.executable, str(WORKER), str(ledger_file), db, "100000", prefix], stdout=subprocess.PIPE, env=env, text=True)
    lines: list[str] = []
    ready = threading.Event()
    printed = threading.Condition()
    answered = [0]
    ended = threading.Event()

    def reader() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            ready.set()
            if line.endswith("\n") and '"charge_id"' in line:
                with printed:
                    answered[0] += 1
                    printed.notify_all()
        ended.set()
        with printed:
            printed.notify_all()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    try:
        assert ready.wait(DEADLINE_S), f"worker did not start in {DEADLINE_S} s"
        with printed:
            printed.wait_for(lambda: answered[0] >= after_answers or ended.is_set(), DEADLINE_S)
        assert answered[0] >= after_answers, (
            f"worker printed {answered[0]} of the {after_answers} answer(s) waited for "
            f"({'it exited' if ended.is_set() else f'none came in {DEADLINE_S} s'})"
        )
        limit = time.monotonic() + DEADLINE_S
        while until is not None and not until():
            assert not ended.is_set() and time.monotonic() < limit, "the worker's release never reached the stage waited for"
            time.sleep(0.02)
        time.sleep(wait_s)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        thread.join(10)
    assert proc.stdout is not None
    proc.stdout.close()
    answers = [json.loads(line) for line in lines if line.endswith("\n")]
    return [a for a in answers if "charge_id" in a]


def check_accounts(ledger_file: Path, answers: list[dict]) -> tuple[int, int]:
    """Close abandoned charges, verify, and check every printed answer; returns (charges, aborted)."""
    conn = sqlite3.connect(ledger_file)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with Ledger(ledger_file, LedgerSettings(epsilon_cap="1000000")) as ledger:
        ledger.close_abandoned()
        report = ledger.verify_audit()
        assert report.ok and report.pending == 0, report.problems
        charges = {c.id: c.request_key for c in ledger.charges()}
        rows = {r["charge_id"]: r for r in ledger.audit_rows() if r.get("charge_id") is not None}
        assert set(rows) == set(charges)  # one audit row per charge
        for answer in answers:
            assert charges.get(answer["charge_id"]) == answer["request_key"], f"answer {answer} was returned without a charge"
            row = rows[answer["charge_id"]]
            assert row["outcome"] == "released" and row["value"] == answer["value"], (answer, row)
        aborted = [r for r in rows.values() if r["outcome"] == "aborted"]
        assert all("nothing released" in r["detail"] for r in aborted)
        assert not {a["charge_id"] for a in answers} & {r["charge_id"] for r in aborted}
        conn = sqlite3.connect(ledger_file)
        for cid, key in conn.execute("SELECT charge_id, request_key FROM answers"):  # every cached answer has its charge
            assert charges.get(cid) == key and rows[cid]["outcome"] == "released"
        conn.close()
        return len(charges), len(aborted)


@pytest.mark.slow
@pytest.mark.parametrize("stage", STAGES)
def test_kill_at_each_stage_leaves_every_charge_accounted_for(tmp_path, stage):
    """The first release pauses 30 s at ``stage`` and is killed there; then an identical request is released."""
    ledger_file = tmp_path / f"{stage}.ledger.sqlite"
    db = str(tmp_path / "crash.duckdb")
    # killed while it sleeps at the stage (the ledger shows it got there; 30 s is far more than the
    # 0.5 s it runs on after that), or, for before_charge, 2 s after it started: no charge either way
    answers = run_and_kill(ledger_file, db, f"{stage}:30", 2.0 if stage == "before_charge" else 0.5, until=reached(ledger_file, stage))
    assert answers == []  # killed inside its first release
    if not ledger_file.exists():
        assert stage == "before_charge"
        return
    charges, aborted = check_accounts(ledger_file, answers)
    expected = {"before_charge": (0, 0), "after_charge": (1, 1), "after_noise": (1, 1), "after_store": (1, 0)}[stage]
    assert (charges, aborted) == expected
    with Ledger(ledger_file, LedgerSettings(epsilon_cap="1000000")) as ledger:
        killed = [c.request_key for c in ledger.charges()]
    # the same request again: served from the cache after after_store, charged anew after an abort
    # (killed once its first answer is out, and a while later: the kill lands in a later release)
    again = run_and_kill(ledger_file, db, "after_store:0", 1.0, after_answers=1)
    assert again[0]["cached"] == (stage == "after_store")
    assert killed in ([], [again[0]["request_key"]])  # the killed release was this request
    check_accounts(ledger_file, again)


@pytest.mark.slow
def test_every_returned_answer_was_charged_and_audited(tmp_path):
    rnd = random.Random(1234)
    total_answers = total_aborted = 0
    db = str(tmp_path / "crash.duckdb")
    for trial in range(5):
        ledger_file = tmp_path / f"crash{trial}.ledger.sqlite"
        # even trials are killed at a random time after start (maybe inside the first release); odd
        # ones at a random time after their first answer, so answers are out whatever the load
        answers = run_and_kill(
            ledger_file, db, f"*:{rnd.choice([0.001, 0.005, 0.02])}", rnd.uniform(0.05, 0.6), after_answers=trial % 2
        )
        assert len(answers) >= trial % 2
        total_answers += len(answers)
        charges, aborted = check_accounts(ledger_file, answers)
        assert charges >= len(answers)
        total_aborted += aborted
    assert total_answers > 0  # the processes did get answers out before being killed


@pytest.mark.slow
def test_racing_kills_on_one_ledger(tmp_path):
    """Three workers share a ledger and the same requests; each is killed at a random time, twice over."""
    rnd = random.Random(99)
    ledger_file = tmp_path / "shared.ledger.sqlite"
    db = str(tmp_path / "crash.duckdb")
    printed: list[dict] = []
    for _round in range(2):
        threads, results = [], []
        for _w in range(3):
            def go() -> None:
                results.append(run_and_kill(ledger_file, db, "*:0.01", rnd.uniform(0.2, 0.8)))

            threads.append(threading.Thread(target=go))
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        printed += [a for r in results for a in r]
        check_accounts(ledger_file, printed)
    by_key: dict[str, set] = {}
    for a in printed:
        by_key.setdefault(a["request_key"], set()).add((a["charge_id"], a["value"]))
    assert all(len(v) == 1 for v in by_key.values())  # identical requests got one answer
