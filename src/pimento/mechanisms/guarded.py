"""The release protocol: charge, then read the private data, then noise, then cache and audit, then return.

:func:`guarded_release` is the only path by which a noisy answer leaves this package:

1. :meth:`Ledger.charge_release`: the answer cache is consulted and, if no identical earlier
   request stored an answer, the mechanism's stated cost is charged (one durable
   transaction). A refusal raises BudgetError: it depends on the budget only, never on the
   data, and spends nothing. A cached answer is returned as stored, free.
2. ``measure()``: the true count and the smooth bound of its sensitivity are computed on the
   private data, *after* the charge;
3. the noise is drawn (never before step 1 has committed);
4. the answer is stored in the cache with its audit row (one transaction);
5. the answer is returned.

Any failure after the charge, anywhere in steps 2 to 5 (a statement timeout, a memory limit,
an engine error, an overflow, a ledger that cannot store the answer, a bug) halts the
deployment (:meth:`Ledger.halt`): in one transaction the pending charge is closed with a failure
row in the custodian's audit log holding the real error text (the charge stays), a ``halt`` row
is appended, and the database is marked halted in the ledger. Then
:class:`DeploymentHaltedError` is raised, whose message is fixed and is what every later release
request of every analyst reads, before anything is charged, until the custodian resumes the
deployment (``pimento audit resume``). A failure that depends on the private data is an exact bit
that no charge pays for (on D the release fails with probability 1, on a neighbour it answers);
halting turns it into at most one bit per custodian resume, seen by every analyst alike, and no
identical retry waits for a stranded pending charge or pays twice.

What the analyst receives (the stored answer, :class:`GuardedAnswer`) is built from
:class:`Release` only; the exact RS, scale and the other private quantities of
:class:`PrivateDetails` (and whatever ``measure`` reports for the custodian) go to the audit
row alone.

A process killed at any point never leaves an answer that was returned but not charged:
nothing is returned before step 1 has committed. For the kill -9 test, the environment
variable ``PIMENTO_TEST_PAUSE`` (``"stage:seconds,..."`` or ``"*:seconds"``, stages
``before_charge``, ``after_charge``, ``after_noise``, ``after_store``) makes the process
sleep at the named stages; it is read only when set and has no other effect.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pimento.errors import DeploymentHaltedError, InternalError
from pimento.mechanisms.budget import Budget, format_number
from pimento.mechanisms.ledger import Charge, Ledger, request_key
from pimento.mechanisms.ledger_files import now
from pimento.mechanisms.smooth import Mechanism, Release

__all__ = ["GuardedAnswer", "GuardedVector", "Measured", "STAGES", "answer_key", "guarded_release", "guarded_vector_release", "pause"]

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
class Measured:
    """What ``measure()`` read from the private data: the true count, its smooth bound, custodian details."""

    true_value: int
    rs: Any
    custodian: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GuardedAnswer:
    """A released answer with its bookkeeping: analyst-facing only (no private quantity)."""

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


def answer_key(mechanism: Mechanism, *, analyst: str, database: str, sql: str, mode: str) -> str:
    """The answer cache's key of a count released by :func:`guarded_release` (its one home: a caller that must know
    before the release whether the answer is cached asks this)."""
    cost = mechanism.privacy_cost()
    return request_key(database=database, analyst=analyst, sql=sql, mode=mode, epsilon=cost.epsilon, delta=cost.delta if cost.delta else None)


# proof: guarded-release
def guarded_release(
    ledger: Ledger,
    mechanism: Mechanism,
    *,
    analyst: str,
    database: str,
    sql: str,
    measure: Callable[[], Measured] | None = None,
    true_value: int | None = None,
    rs: Any = None,
    mode: str = "dp",
    question: str | None = None,
) -> GuardedAnswer:
    """Release through ``mechanism``, charging ``ledger`` first (see module docs).

    The private inputs come from ``measure()``, called only after the charge committed; a
    caller that already holds them (tests, benchmarks on public data) may pass ``true_value``
    and ``rs`` instead.
    """
    if measure is None:
        if true_value is None or rs is None:
            raise InternalError("guarded_release needs measure, or true_value and rs")
        given = Measured(true_value, rs)
        measure = lambda: given  # noqa: E731
    cost = mechanism.privacy_cost()
    key = answer_key(mechanism, analyst=analyst, database=database, sql=sql, mode=mode)

    def produce() -> tuple[dict[str, Any], dict[str, Any]]:
        # proof: guarded-measure
        measured = measure()
        # proof: guarded-noise
        release, private = mechanism.release(measured.true_value, measured.rs)  # noise: the mechanism's own source
        pause("after_noise")
        audit_row = {
            "mechanism": release.mechanism,
            "epsilon_rs_bound": format_number(release.epsilon_rs_bound),
            "scale": format_number(private.scale),
            "value": format_number(release.value),
            "interval": [format_number(release.interval[0]), format_number(release.interval[1])],
            "private": {**private.to_dict(), **dict(measured.custodian)},
        }
        return release.to_dict(), audit_row

    stored, cached, charge_id, left = _charge_then_release(
        ledger, cost, key, produce, analyst=analyst, database=database, sql=sql, mode=mode, question=question,
        audit={"noise": mechanism.noise},
    )
    return GuardedAnswer(Release.from_dict(stored), cached, charge_id, key, left)


@dataclass(frozen=True)
class GuardedVector:
    """A released vector answer (a grouped or summed query) with its bookkeeping: analyst-facing only.

    ``stored`` is the dict the release function returned (or the cached one): the release layer reads
    it back; the custodian-only details went to the audit row alone.
    """

    stored: Mapping[str, Any]
    cached: bool
    charge_id: int | None
    request_key: str
    budget_left: Budget


def guarded_vector_release(
    ledger: Ledger,
    cost: Budget,
    release: Callable[[], tuple[dict[str, Any], dict[str, Any]]],
    *,
    analyst: str,
    database: str,
    sql: str,
    mode: str,
    question: str | None = None,
) -> GuardedVector:
    """The protocol of :func:`guarded_release` for an answer of several noisy values, charged once.

    ``cost`` is the whole answer's (epsilon, delta), known and checked before the call (every
    mechanism the release will use was admitted on public inputs). ``release()`` runs only after the
    charge committed: it reads the private data, draws the noise and returns the analyst's answer
    (JSON-ready) and the custodian's audit details; any failure in it halts the deployment. The
    cache key is the request's (database, analyst, SQL, ``mode``, epsilon, delta): ``mode`` must name
    every public input that changes the answer's shape (the group domain, the bounds).
    """
    key = request_key(database=database, analyst=analyst, sql=sql, mode=mode, epsilon=cost.epsilon,
                      delta=cost.delta if cost.delta else None)
    stored, cached, charge_id, left = _charge_then_release(
        ledger, cost, key, release, analyst=analyst, database=database, sql=sql, mode=mode, question=question, audit={},
    )
    return GuardedVector(stored, cached, charge_id, key, left)


def _charge_then_release(
    ledger: Ledger,
    cost: Budget,
    key: str,
    produce: Callable[[], tuple[dict[str, Any], dict[str, Any]]],
    *,
    analyst: str,
    database: str,
    sql: str,
    mode: str,
    question: str | None,
    audit: Mapping[str, Any],
) -> tuple[dict[str, Any], bool, int | None, Budget]:
    """Steps 1 to 5 of the module docs: the stored answer, whether it came from the cache, its charge id, the budget left."""
    pause("before_charge")
    # proof: guarded-charge
    charged = ledger.charge_release(analyst, database, cost, key)
    if not isinstance(charged, Charge):
        return charged, True, charged.get("charge_id"), ledger.remaining(database, analyst)
    charge = charged
    base: dict[str, Any] = {"analyst": analyst, "database": charge.database, "question": question, "sql": sql, "mode": mode}
    try:  # from here on, whatever fails halts the deployment (module docs)
        pause("after_charge")
        base = {
            "time": now(),
            **base,
            "epsilon": format_number(cost.epsilon),
            "delta": format_number(cost.delta),
            **audit,
        }
        answer, details = produce()
        answer = {**answer, "charge_id": charge.id}
        # proof: guarded-store
        stored = ledger.record_release(key, charge, answer, {**base, **details})
        pause("after_store")
        return stored, stored.get("charge_id") != charge.id, stored.get("charge_id"), ledger.remaining(database, analyst)
    except Exception as exc:  # noqa: BLE001 - every failure after the charge halts the deployment, then one fixed message
        ledger.halt(database, {**base, "scale": None, "value": None, "error": f"{type(exc).__name__}: {exc}"}, charge=charge)
        raise DeploymentHaltedError() from None
