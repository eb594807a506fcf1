"""kill -9 at random points of releases never leaves a returned answer without a charge."""

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
from pathlib import Path

import pytest

WORKER = Path(__file__).parent / "_release_worker.py"


def run_and_kill(tmp_path: Path, trial: int, rnd: random.Random) -> tuple[list[dict], Path]:
    ledger_file = tmp_path / f"crash{trial}.ledger.sqlite"
    db = str(tmp_path / "crash.duckdb")
    env = {**os.environ, "PIMENTO_TEST_PAUSE": f"*:{rnd.choice([0.001, 0.005, 0.02])}"}
    proc = subprocess.Popen([sys.executable, str(WORKER), str(ledger_file), db, "100000"], stdout=subprocess.PIPE, env=env, text=True)
    lines: list[str] = []
    ready = threading.Event()

    def reader() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            ready.set()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    assert ready.wait(60), "worker did not start"
    time.sleep(rnd.uniform(0.05, 0.6))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    thread.join(10)
    assert proc.stdout is not None
    proc.stdout.close()
    answers = [json.loads(line) for line in lines if line.endswith("\n")]
    return [a for a in answers if "charge_id" in a], ledger_file


@pytest.mark.slow
def test_every_returned_answer_was_charged(tmp_path):
    rnd = random.Random(1234)
    total_answers = 0
    for trial in range(5):
        answers, ledger_file = run_and_kill(tmp_path, trial, rnd)
        total_answers += len(answers)
        conn = sqlite3.connect(ledger_file)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        charges = {cid: key for cid, key in conn.execute("SELECT id, request_key FROM charges")}
        for answer in answers:
            assert charges.get(answer["charge_id"]) == answer["request_key"], f"answer {answer} was returned without a charge"
        # every stored (cached) answer also has its charge
        for cid, key in conn.execute("SELECT charge_id, request_key FROM answers"):
            assert charges.get(cid) == key
        assert len(charges) >= len(answers)
        conn.close()
    assert total_answers > 0  # the processes did get answers out before being killed
