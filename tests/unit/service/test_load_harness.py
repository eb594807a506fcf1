"""The load harness's ledger check fails on the violations it exists to catch (it is not a test that cannot fail)."""

from __future__ import annotations

import pytest

from benchmarks.service_load import Outcome, check_ledger, summarize, LoadResult
from service_support import TESTCLIENT_WARNING

pytestmark = pytest.mark.filterwarnings(TESTCLIENT_WARNING)


def test_check_ledger_accepts_a_clean_run_and_refuses_forged_outcomes(client_for, analyst_key, served):
    entry, _key, headers = analyst_key
    client = client_for()
    answers = [client.post("/v1/sql", headers=headers, json={"sql": f"SELECT COUNT(*) FROM Patient WHERE birth_year <> {n}", "epsilon": "0.1"}).json()
               for n in range(3)]
    outcomes = [Outcome("sql_uncached", 200, 0.01, a["charge_id"], a["cached"], a["epsilon"]) for a in answers]
    report = check_ledger(served.db, entry.analyst, outcomes)
    assert report["charges"] == 3 and report["fresh_answers"] == 3 and report["spent_epsilon"] == "0.3"
    with pytest.raises(AssertionError, match="same charge"):
        check_ledger(served.db, entry.analyst, outcomes + [outcomes[0]])
    with pytest.raises(AssertionError, match="has no charge"):
        check_ledger(served.db, entry.analyst, [Outcome("sql_uncached", 200, 0.01, 10**6, False, "0.1")])
    summary = summarize(LoadResult(outcomes, wall_seconds=1.0))
    assert summary["by_kind"]["sql_fresh"]["n"] == 3 and summary["answers_per_s"] == 3.0
