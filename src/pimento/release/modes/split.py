"""Mode ``split``: the *authorized part* exact and the *remainder* as a DP count.

For a counting query q, the authorized part counts the join results of q in which every tuple of a
private relation is *public* in the context (all its boundary cells authorized, by provenance; see
:mod:`pimento.policy.authorized_tuples`); the remainder counts the other join results (those that
use at least one unauthorized tuple), so authorized + remainder = q. The remainder is released with
noise calibrated to RS of q: on every add/remove neighbour whose edit does not change the
authorization of the tuples it does not touch, the remainder moves by at most what q moves
(brute-forced in tests/unit/sensitivity/test_contextual_bruteforce.py), so RS of q is a smooth upper
bound of the remainder's local sensitivity and the remainder is ``(eps, delta)``-DP for those
neighbours; on contextual neighbours (A_c fixed) the authorized part is constant, so the pair is CI
for the exact part plus ``(eps, delta)``-contextual DP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import sqlglot
from sqlglot import exp

from pimento.errors import DeploymentHaltedError
from pimento.mechanisms import GuardedAnswer
from pimento.release.modes.base import Mode
from pimento.release.modes.noisy import NoisyMode, Run
from pimento.sensitivity.neighbourhood import Neighbourhood
from pimento.sensitivity.rs import private_relations

if TYPE_CHECKING:
    from pimento.engines.base import Engine
    from pimento.schema import Catalog
    from pimento.sensitivity.contextual import AuthorizationView
    from pimento.sql import CountQuery

__all__ = ["REMAINDER", "SPLIT", "SplitMode", "authorized_part"]

#: The split mode's remainder, in words (shown with every split answer).
REMAINDER = ("join results that use at least one tuple of a private relation whose boundary cells "
             "are not all authorized in this context")


def authorized_part(engine: Engine, query: CountQuery, catalog: Catalog, view: AuthorizationView) -> int:
    """The split mode's exact part: join results of ``query`` whose private tuples are all public."""
    dialect = engine.dialect
    tree = cast(exp.Select, sqlglot.parse_one(query.to_sql(dialect), read=dialect))  # a CountQuery renders a SELECT
    for alias in private_relations(query, catalog):
        if alias in view.whole:
            continue
        pub = view.public.get(alias)
        tree = tree.where(f"COALESCE(({pub}), FALSE)" if pub else "FALSE", dialect=dialect)
    sql = (view.with_sql + "\n" if view.with_sql else "") + tree.sql(dialect=dialect)
    value = engine.execute(sql, list(view.params) if view.params else None).scalar()
    return int(value or 0)


class SplitMode(NoisyMode):
    """``--mode split``."""

    name: str = Mode.SPLIT
    needs_context = True
    guarantee = ("authorized part: contextual integrity (exact); remainder: (epsilon, delta)-DP for add/remove neighbours "
                 "that keep the other tuples' authorization, (epsilon, delta)-contextual DP for this context")

    def guarantee_kind(self, neighbours: Neighbourhood | None) -> str | None:
        """The guarantee (its text names the add/remove neighbours it holds for)."""
        return self.guarantee

    def count(self, run: Run) -> tuple[int, dict[str, Any]]:
        """The remainder: the count minus the authorized part (recorded for the custodian and for :meth:`finish`)."""
        true_value, _ = super().count(run)
        exact = authorized_part(run.engine, run.query, run.catalog, run.view())
        run.found["authorized_part"] = exact
        return true_value - exact, {"authorized_part": exact}

    def finish(self, run: Run, guarded: GuardedAnswer) -> dict[str, Any]:
        """The authorized part: the number the remainder was released against, never recomputed; read
        again only for a cached answer (:meth:`cached_part`)."""
        exact = run.found.get("authorized_part")
        if exact is None:
            exact = self.cached_part(run, guarded)
        return {"authorized_exact": exact, "remainder": REMAINDER}

    def cached_part(self, run: Run, guarded: GuardedAnswer) -> int:
        """A cached DP part: the authorized part (authorized cells only: a CI release), read again.

        It follows a charge, so a failure here halts the deployment like any failure after a charge
        (:meth:`pimento.mechanisms.ledger.Ledger.halt`, the reason in the custodian's audit log) and
        raises :class:`DeploymentHaltedError`, the fixed message every later release request reads
        until the custodian resumes.
        """
        private = run.private
        try:
            return authorized_part(run.engine, run.query, run.catalog, run.view())
        except Exception as exc:  # noqa: BLE001 - engine text may carry private values
            private.ledger.halt(private.location, {
                "analyst": run.job.analyst, "sql": run.query.to_sql(), "mode": self.name,
                "step": "authorized part of a cached answer", "charge_id": guarded.charge_id,
                "error": f"{type(exc).__name__}: {exc}",
            })
            raise DeploymentHaltedError() from None


SPLIT = SplitMode()
