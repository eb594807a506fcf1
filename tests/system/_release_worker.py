"""Helpers run in child processes by the ledger concurrency and crash tests.

Run as a script (``python _release_worker.py LEDGER DB N [SQL_PREFIX]``) it performs N guarded
releases and prints each returned answer as one JSON line, flushed, as a real caller would hand
it out; PIMENTO_TEST_PAUSE makes it sleep at the protocol's stages.
"""

from __future__ import annotations

import json
import sys

from pimento.config import LedgerSettings
from pimento.errors import BudgetError
from pimento.mechanisms import Ledger, guarded_release, mechanism_for
from pimento.mechanisms.budget import format_number


def answer_line(answer) -> dict:  # noqa: ANN001 - GuardedAnswer
    return {
        "charge_id": answer.charge_id,
        "request_key": answer.request_key,
        "value": format_number(answer.release.value),
        "cached": answer.cached,
    }


def race(ledger_file: str, db: str, worker: int, attempts: int, cap: str, eps: str) -> tuple[int, int]:
    """Try ``attempts`` distinct releases; return (successes, refusals). Each analyst may spend the whole cap
    (``analyst_share = 1``): the race is for the database cap."""
    ledger = Ledger(ledger_file, LedgerSettings(epsilon_cap=cap, analyst_share="1", answer_cache=True))
    ok = refused = 0
    for i in range(attempts):
        try:
            guarded_release(ledger, mechanism_for(eps), analyst=f"w{worker % 3}", database=db, sql=f"SELECT COUNT(*) FROM t WHERE w = {worker} AND i = {i}", true_value=100, rs=1)
            ok += 1
        except BudgetError:
            refused += 1
    ledger.close()
    return ok, refused


def race_mixed(ledger_file: str, db: str, worker: int, requests: list[int], cap: str, eps: str) -> list[dict]:
    """Release the queries ``requests`` (query ``q`` is the same SQL in every worker, so workers
    that share a ``q`` send identical requests); return one dict per answer or refusal."""
    ledger = Ledger(ledger_file, LedgerSettings(epsilon_cap=cap, analyst_share="1", answer_cache=True))
    out = []
    for q in requests:
        try:
            answer = guarded_release(ledger, mechanism_for(eps), analyst="ann", database=db, sql=f"SELECT COUNT(*) FROM t WHERE q = {q}", true_value=1000 + q, rs=1)
            out.append({"q": q, **answer_line(answer)})
        except BudgetError as exc:
            out.append({"q": q, "refused": str(exc)})
    ledger.close()
    return out


def main() -> None:
    ledger_file, db, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    prefix = sys.argv[4] if len(sys.argv) > 4 else "i"
    ledger = Ledger(ledger_file, LedgerSettings(epsilon_cap="1000000"))
    mechanism_for("0.01").privacy_cost()  # warm up (imports, the mechanism's admission): the kills land in releases
    print(json.dumps({"ready": True}), flush=True)
    for i in range(n):
        answer = guarded_release(ledger, mechanism_for("0.01"), analyst="ann", database=db, sql=f"SELECT COUNT(*) FROM t WHERE {prefix} = {i}", true_value=i, rs=1)
        print(json.dumps(answer_line(answer)), flush=True)


if __name__ == "__main__":
    main()
