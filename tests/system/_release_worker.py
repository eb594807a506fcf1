"""Helpers run in child processes by the ledger concurrency and crash tests.

Run as a script (``python _release_worker.py LEDGER DB N``) it performs N guarded
releases and prints each returned answer as one JSON line, flushed, as a real caller
would hand it out; PIMENTO_TEST_PAUSE makes it sleep at the protocol's stages.
"""

from __future__ import annotations

import json
import sys

from pimento.config import LedgerSettings
from pimento.errors import BudgetError
from pimento.mechanisms import Ledger, guarded_release, mechanism_for


def race(ledger_file: str, db: str, worker: int, attempts: int, cap: str, eps: str) -> tuple[int, int]:
    """Try ``attempts`` distinct releases; return (successes, refusals)."""
    ledger = Ledger(ledger_file, LedgerSettings(epsilon_cap=cap, answer_cache=True))
    ok = refused = 0
    for i in range(attempts):
        try:
            guarded_release(ledger, mechanism_for(eps), analyst=f"w{worker % 3}", database=db, sql=f"SELECT COUNT(*) FROM t WHERE w = {worker} AND i = {i}", true_value=100, rs=1)
            ok += 1
        except BudgetError:
            refused += 1
    ledger.close()
    return ok, refused


def main() -> None:
    ledger_file, db, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ledger = Ledger(ledger_file, LedgerSettings(epsilon_cap="1000000"))
    print(json.dumps({"ready": True}), flush=True)
    for i in range(n):
        answer = guarded_release(ledger, mechanism_for("0.01"), analyst="ann", database=db, sql=f"SELECT COUNT(*) FROM t WHERE i = {i}", true_value=i, rs=1)
        print(json.dumps({"charge_id": answer.charge_id, "request_key": answer.request_key, "value": str(answer.release.value)}), flush=True)


if __name__ == "__main__":
    main()
