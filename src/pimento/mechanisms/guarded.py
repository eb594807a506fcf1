"""The release protocol: charge, then noise, then cache and audit, then return.

:func:`guarded_release` is the only path by which a noisy answer leaves this package:

1. the answer cache is consulted (an identical earlier request returns its answer, free);
2. the ledger charges the mechanism's stated cost (one durable transaction; a refusal
   raises BudgetError and spends nothing);
3. the noise is drawn;
4. the answer is stored in the cache and the audit log (one transaction);
5. the answer is returned.

A process killed at any point never leaves an answer that was returned but not charged:
nothing is returned before step 2 has committed. For the kill -9 test, the environment
variable ``PIMENTO_TEST_PAUSE`` (``"stage:seconds,..."`` or ``"*:seconds"``, stages
``before_charge``, ``after_charge``, ``after_noise``, ``after_store``) makes the process
sleep at the named stages; it is read only when set and has no other effect.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pimento.mechanisms.budget import Budget, format_number
from pimento.mechanisms.ledger import Ledger, database_key, request_key
from pimento.mechanisms.samplers import RandomSource
from pimento.mechanisms.smooth import Mechanism, Release

__all__ = ["GuardedAnswer", "STAGES", "cached_release", "guarded_release", "pause"]

STAGES = ("before_charge", "after_charge", "after_noise", "after_store")


def pause(stage: str) -> None:
    """Sleep at ``stage`` if PIMENTO_TEST_PAUSE asks for it (test hook for crash tests)."""
    spec = os.environ.get("PIMENTO_TEST_PAUSE")
    if not spec:
        return
    for item in spec.split(","):
        name, _, seconds = item.partition(":")
        if name.strip() in (stage, "*"):
            time.sleep(float(seconds or "0"))
            return


@dataclass(frozen=True)
class GuardedAnswer:
    """A released answer with its bookkeeping."""

    release: Release
    cached: bool
    charge_id: int | None
    request_key: str
    budget_left: Budget

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.release.to_dict(),
            "cached": self.cached,
            "charge_id": self.charge_id,
            "budget_left": {"epsilon": format_number(self.budget_left.epsilon), "delta": format_number(self.budget_left.delta)},
        }


def _key(mechanism: Mechanism, *, analyst: str, database: str, sql: str, mode: str) -> str:
    cost = mechanism.privacy_cost()
    return request_key(database=database, analyst=analyst, sql=sql, mode=mode, epsilon=cost.epsilon, delta=cost.delta if cost.delta else None)


def cached_release(ledger: Ledger, mechanism: Mechanism, *, analyst: str, database: str, sql: str, mode: str = "dp") -> GuardedAnswer | None:
    """The stored answer of an identical earlier request (free), or None."""
    key = _key(mechanism, analyst=analyst, database=database, sql=sql, mode=mode)
    cached = ledger.cached_answer(key)
    if cached is None:
        return None
    return GuardedAnswer(Release.from_dict(cached), True, cached.get("charge_id"), key, ledger.remaining(database, analyst))


def guarded_release(
    ledger: Ledger,
    mechanism: Mechanism,
    *,
    analyst: str,
    database: str,
    sql: str,
    true_value: int,
    rs: Any,
    mode: str = "dp",
    question: str | None = None,
    rng: RandomSource | None = None,
) -> GuardedAnswer:
    """Release ``true_value`` through ``mechanism``, charging ``ledger`` first (see module docs)."""
    cost = mechanism.privacy_cost()
    key = _key(mechanism, analyst=analyst, database=database, sql=sql, mode=mode)
    hit = cached_release(ledger, mechanism, analyst=analyst, database=database, sql=sql, mode=mode)
    if hit is not None:
        return hit
    pause("before_charge")
    charge = ledger.charge(analyst, database, cost, key)
    pause("after_charge")
    release = mechanism.release(true_value, rs, rng=rng)
    pause("after_noise")
    answer = {**release.to_dict(), "charge_id": charge.id}
    audit_row = {
        "time": datetime.now(timezone.utc).isoformat(timespec="microseconds"),
        "analyst": analyst,
        "database": database_key(database),
        "question": question,
        "sql": sql,
        "mode": mode,
        "epsilon": format_number(release.epsilon),
        "delta": format_number(release.delta),
        "noise": release.noise,
        "scale": format_number(release.scale),
        "value": format_number(release.value),
        "interval": [format_number(release.interval[0]), format_number(release.interval[1])],
    }
    stored = ledger.record_release(key, charge, answer, audit_row)
    pause("after_store")
    return GuardedAnswer(
        Release.from_dict(stored), stored.get("charge_id") != charge.id, stored.get("charge_id"), key, ledger.remaining(database, analyst)
    )
