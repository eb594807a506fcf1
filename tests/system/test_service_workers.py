"""`pimento serve --workers 2` under load, with workers killed by SIGKILL: one ledger, no overspend.

Clients race for ONE analyst's small budget (25 releases at epsilon 0.01) against two worker
processes while a charge's window is stretched (``PIMENTO_TEST_PAUSE``); one worker is killed with
SIGKILL mid-load (uvicorn's supervisor starts another), then the whole process group is killed and
the service restarted. Afterwards the ledger's own verification (``verify_audit``, as ``pimento audit
verify``) passes, the analyst and the database spent at most their caps, every answer a client
received has exactly one charge and one ``released`` audit row, no charge carries two answers, and
every charge has exactly one audit row (nothing lost, nothing doubled). On SQLite, and on
PostgreSQL when ``PIMENTO_PG_DSN`` is set.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from benchmarks.service_load import LoadResult, ServerProcess, check_ledger, run_load, summarize
from ledger_pg_support import LEDGER_BACKENDS, ledger_backend

ANALYST = "loadtest"
ARGS = ("--rate", "100000", "--burst", "100000", "--rollouts", "1", "--workers", "2")
CAPS = 'epsilon_cap = "100"\nanalyst_epsilon_cap = "0.25"\ndelta_cap = "0.01"'


@pytest.fixture(params=LEDGER_BACKENDS)
def deployment(request, tmp_path, standin_synthetic):
    from db_support import demo_with_copy

    from pimento.service.deployment import Deployment

    with ledger_backend(request.param) as url:
        ledger = CAPS + (f'\nurl = "{url}"' if url else "")
        db = demo_with_copy(tmp_path / "dep", standin_synthetic, patients=150, ledger=ledger)
        _entry, key = Deployment(db).add_key(ANALYST)
        yield db, key


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_sigkill_of_workers_under_load_keeps_one_ledger_whole(deployment):
    db, key = deployment
    server = ServerProcess(db, args=ARGS, env={"PIMENTO_TEST_PAUSE": "after_charge:0.05"}).start(timeout=120)
    result = LoadResult()
    try:
        assert _wait_for(lambda: len(server.worker_pids()) == 2, 60), server.output()[-2000:]
        stop = threading.Event()
        loader = threading.Thread(target=run_load, args=(server.url, key), kwargs={
            "clients": 8, "seconds": 9.0, "kinds": ("sql_cached", "sql_uncached"), "weights": (1, 3), "result": result, "stop": stop})
        loader.start()
        time.sleep(2.0)
        victim = server.worker_pids()[0]
        os.kill(victim, signal.SIGKILL)  # one worker, mid-load: the other goes on serving
        assert _wait_for(lambda: len(server.worker_pids()) == 2 and victim not in server.worker_pids(), 60), "no worker replaced the killed one"
        time.sleep(1.0)
        server.kill()  # every process of the service at once
        result.kills += 2
        server.start(timeout=120)
        loader.join(timeout=200)
        stop.set()
        after = run_load(server.url, key, clients=2, seconds=0.5, kinds=("sql_cached",))
    finally:
        server.stop()
    assert after.outcomes and all(o.status in (200, 409) for o in after.outcomes), summarize(after)["statuses"]
    statuses = summarize(result)["statuses"]
    assert not [s for s in statuses if ":5" in s], statuses  # refused connections while down, never a 5xx
    report = check_ledger(db, ANALYST, result.outcomes + after.outcomes)
    assert report["fresh_answers"] >= 1 and report["charges"] >= report["fresh_answers"], report
    assert float(report["spent_epsilon"]) <= 0.25, report
    # and the custodian's command says the same
    code = "import sys; from pimento.cli.app import main; sys.argv[0] = 'pimento'; main()"
    verify = subprocess.run([sys.executable, "-c", code, "audit", "verify", "--db", str(db)], capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout + verify.stderr
