"""The two caps an analyst spends under: their own and the database's, and which of them binds.

Every analyst spends under two caps at once (:meth:`pimento.mechanisms.ledger.Ledger.charge`): the
database-wide cap (``[ledger] epsilon_cap``, ``delta_cap``: all analysts and the synthetic copies
together) and their own (``[ledger] analyst_epsilon_cap``, or by default the share
``[ledger] analyst_share`` of the database's epsilon cap, :data:`pimento.config.DEFAULT_ANALYST_SHARE`,
so that one analyst cannot spend everyone's budget). Each analyst's delta cap is the database's.

What is left to an analyst is the smaller remainder (:meth:`Ledger.remaining`); :func:`binding`
says which cap that is. It is decided from what the analyst is shown anyway (their cap, what they
spent, what is left to them): no other analyst's spending is revealed by it (docs/budget.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pimento.mechanisms.budget import Budget, format_number, parse_number

if TYPE_CHECKING:
    from pimento.config import LedgerSettings

__all__ = ["Binds", "analyst_cap_of", "binding", "cap_statement"]

#: Which cap limits what an analyst has left: their own, or the database-wide one.
Binds = Literal["analyst", "database"]


def analyst_cap_of(settings: LedgerSettings) -> Budget:
    """The cap of each analyst: ``analyst_epsilon_cap`` when set, else ``analyst_share`` x ``epsilon_cap``
    (exact); the delta cap is the database's."""
    if settings.analyst_epsilon_cap is not None:
        return Budget.of(settings.analyst_epsilon_cap, settings.delta_cap)
    share = parse_number(settings.analyst_share, name="analyst_share")
    return Budget(parse_number(settings.epsilon_cap, name="epsilon_cap") * share, parse_number(settings.delta_cap, name="delta_cap"))


def binding(cap: Budget, spent: Budget, left: Budget) -> Binds:
    """``"database"`` when the database-wide cap leaves the analyst less epsilon than their own cap
    would (``left`` below ``cap - spent``), else ``"analyst"`` (a tie included: their own cap is met too).

    ``cap``, ``spent`` and ``left`` are the analyst's own, as their budget shows them: the answer is a
    function of those three figures, so it tells the analyst nothing they were not shown.
    """
    return "database" if left.epsilon < cap.minus(spent).epsilon else "analyst"


def cap_statement(settings: LedgerSettings) -> str:
    """The caps in force, in one line (``pimento serve`` and ``pimento budget`` print it)."""
    cap = analyst_cap_of(settings)
    database = f"database cap epsilon {format_number(parse_number(settings.epsilon_cap, name='epsilon_cap'))}, delta {settings.delta_cap}"
    if settings.analyst_epsilon_cap is not None:
        why = "[ledger] analyst_epsilon_cap"
    else:
        share = parse_number(settings.analyst_share, name="analyst_share")
        why = f"[ledger] analyst_share = {format_number(share)} of the database cap"
    return f"each analyst may spend epsilon {format_number(cap.epsilon)} ({why}); {database} for all analysts together"

