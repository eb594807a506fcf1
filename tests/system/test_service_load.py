"""Load and SIGKILL tests of `pimento serve` (light versions of `python -m benchmarks.service_load`).

Concurrent clients on loopback against ONE analyst's small budget, until it is refused (or for a
few seconds under SIGKILL; every loop is bounded and stops by itself): no overspend, every answer
received has exactly one charge and one 'released' audit row, every charge one audit row, the
chain verifies -- also while the server is killed with SIGKILL and restarted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from benchmarks.service_load import LoadResult, Outcome, ServerProcess, check_ledger, run_load, run_with_kills, summarize

ANALYST = "loadtest"
FAST = ("--rate", "100000", "--burst", "100000", "--rollouts", "1")
#: A bound on a load run that only a hung server reaches: the runs stop on an event, not a clock.
HANG_S = 300.0


def load_until(done: Callable[[list[Outcome]], bool], url: str, key: str, **load) -> LoadResult:
    """Clients (``run_load``'s ``load``) send requests until ``done(outcomes so far)`` holds.

    A fixed duration would be the wrong test: how many releases fit in 4 s depends on the load on
    the machine, and "the budget was used up" must hold whatever the load.
    """
    result, stop = LoadResult(), threading.Event()
    loader = threading.Thread(target=run_load, args=(url, key), kwargs={**load, "seconds": HANG_S, "result": result, "stop": stop})
    loader.start()
    try:
        while loader.is_alive() and not done(list(result.outcomes)):
            time.sleep(0.05)
    finally:
        stop.set()
        loader.join()
    return result


@pytest.fixture
def deployment(tmp_path, standin_synthetic):
    from pimento.demo.hospital import create_demo
    from pimento.service.deployment import Deployment

    db = tmp_path / "hospital.duckdb"
    create_demo(db, patients=150, seed=5)
    with open(tmp_path / "pimento.toml", "a", encoding="utf-8") as fh:
        # 25 fresh releases at epsilon 0.01 exhaust the analyst: the clients race for the last ones.
        fh.write('\n[ledger]\nepsilon_cap = "100"\nanalyst_epsilon_cap = "0.25"\ndelta_cap = "0.01"\n')
    (tmp_path / "made").mkdir()
    standin_synthetic(tmp_path / "made" / "hospital.duckdb", patients=150, seed=6, for_database=db).rename(tmp_path / "hospital.synthetic.duckdb")
    _entry, key = Deployment(db).add_key(ANALYST)
    return db, key


@pytest.mark.slow
def test_concurrent_clients_never_overspend_and_every_answer_is_charged_and_audited_once(deployment):
    db, key = deployment
    with ServerProcess(db, args=FAST) as server:
        # until the budget is refused (409 BudgetError): then it was used up, whatever the machine's load
        result = load_until(lambda outcomes: any(o.error_type == "BudgetError" for o in outcomes), server.url, key, clients=16,
                            kinds=("sql_cached", "sql_uncached", "ask_cached"), weights=(2, 6, 1))
    summary = summarize(result)
    ledger = check_ledger(db, ANALYST, result.outcomes)
    statuses = summary["statuses"]
    assert ledger["spent_epsilon"] == "0.25", ledger  # the budget was used up exactly, not exceeded
    assert any(k.endswith(":409/BudgetError") for k in statuses), statuses  # and then refused
    assert ledger["fresh_answers"] == ledger["charges"], ledger  # nothing failed: one answer per charge
    assert not [k for k in statuses if ":5" in k or k.endswith(":0")], statuses  # no 5xx, no dropped connection


@pytest.mark.slow
def test_sigkill_and_restart_under_load_keeps_the_ledger_whole(deployment):
    db, key = deployment
    server = ServerProcess(db, args=FAST, env={"PIMENTO_TEST_PAUSE": "after_charge:0.05"}).start()
    try:
        result = run_with_kills(server, key, clients=8, seconds=6.0, kills=3, seed=1, kinds=("sql_cached", "sql_uncached"), weights=(1, 3))
        assert result.kills == 3
        # After the last restart the service still answers (and reaps what the killed ones left pending).
        after = load_until(lambda outcomes: len(outcomes) >= 2, server.url, key, clients=2, kinds=("sql_cached",))
    finally:
        server.stop()
    # It answers (200, or 409 once the small budget is spent), never a 5xx.
    assert after.outcomes and all(o.status in (200, 409) for o in after.outcomes), summarize(after)["statuses"]
    ledger = check_ledger(db, ANALYST, result.outcomes + after.outcomes)
    assert ledger["fresh_answers"] >= 1, ledger
    assert sum(1 for o in result.outcomes if o.status == 0) >= 1  # the kills were felt by the clients
