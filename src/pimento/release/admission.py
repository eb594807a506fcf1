"""Admission: everything about a request that public inputs decide, before anything is read or charged.

:func:`admit` takes a :class:`~pimento.release.request.Request` and the custodian's settings and
ledger, and returns an :class:`Admitted` job, or raises a :class:`~pimento.errors.UserError`
having read nothing and spent nothing. In order (the order the tests pin):

1. the mode's requirements: a policy and a context for every mode but dp (ModeError);
2. the neighbourhood: the custodian's ``[release] neighbours`` unless the analyst asks for a
   stricter one, and one the mode covers (ModeError);
3. for a noisy release or a question: the budget -> mechanism under ``[release] rs_bound_share``
   (PrivacyParameterError);
4. the analyst's narrowed clipping bounds (:func:`admitted_bounds`): each within the custodian's
   ``[bounds]`` of its column, for a noisy SUM or AVG only (PrivacyParameterError);
5. the analyst is known to the ledger (BudgetError).

What is left for the release itself (the SQL on the public schema, whether this engine runs it)
is checked by the mode, still before the charge.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pimento.config import declared_bounds
from pimento.errors import ModeError, PrivacyParameterError
from pimento.numbers import format_number
from pimento.mechanisms import Ledger, mechanism_for
from pimento.mechanisms.smooth import Mechanism
from pimento.release.modes import ReleaseMode, check_neighbourhood, check_requirements, release_mode
from pimento.release.request import Context, Request, resolve_neighbourhood
from pimento.sensitivity.neighbourhood import Neighbourhood

if TYPE_CHECKING:
    from pimento.config import Settings
    from pimento.release.interpretation import Interpretation

__all__ = ["DEFAULT_ANALYST", "Admitted", "admit", "admitted_bounds", "configured_policy"]

DEFAULT_ANALYST = "default"


@dataclass(frozen=True)
class Admitted:
    """A request admitted under the custodian's settings: what its release will be, decided on public inputs.

    ``mechanism`` is None for an exact SQL answer (no budget, no search). ``neighbours`` is None for
    a mode without neighbourhood (ci). ``sql`` is what is answered: the request's SQL, or the
    interpretation's chosen SQL once the question was read on the synthetic copy (``seconds``: how
    long admission and reading took, before any private read).
    """

    request: Request
    mode: ReleaseMode
    analyst: str
    policy: str | None
    neighbours: Neighbourhood | None
    mechanism: Mechanism | None
    sql: str = ""
    interpretation: Interpretation | None = None
    seconds: float = 0.0

    @property
    def context(self) -> Context | None:
        return self.request.context

    @property
    def question(self) -> str | None:
        return self.request.question

    def reading(self, interpretation: Interpretation, seconds: float) -> Admitted:
        """The job with the question's interpretation: its chosen SQL is what is answered."""
        return replace(self, sql=interpretation.sql, interpretation=interpretation, seconds=seconds)


def configured_policy(settings: Settings) -> str | None:
    """The custodian's compiled policy (``[policy] compiled`` beside the database), or None.

    The policy is a custodian setting like the caps and the private relations: a policy of the
    caller's choosing could authorize anything, so no analyst-facing call takes one.
    """
    compiled = settings.policy.compiled
    return settings.resolve(compiled) if compiled else None


def admitted_bounds(request: Request, settings: Settings, *, spends: bool = True) -> None:
    """Refuse, before anything is read, narrowed bounds the analyst may not give (``Request.bounds``).

    The custodian declares each summed column's clipping interval (``[bounds]``); the analyst may only
    narrow it: every narrowed column must have declared bounds, and ``declared lower <= lower <= upper
    <= declared upper``. Bounds clip a noisy SUM or AVG only: a mode that spends nothing (ci) or SQL that
    sums nothing (a COUNT, by its syntax) is refused. Whether the SQL sums the named column is checked
    with the query's plan (:func:`pimento.release.aggregate.plan`), still before the charge.
    """
    if not request.bounds:
        return
    if not spends:
        raise ModeError("--bounds clip a noisy SUM or AVG; this mode answers exactly and clips nothing", hint="leave --bounds out, or use --mode dp")
    if request.sql is not None:
        from pimento.release.aggregate import looks_aggregate  # the SQL layer, imported only when bounds are given

        if not looks_aggregate(request.sql):
            raise PrivacyParameterError("--bounds clip the column of a SUM or AVG, and this query has none",
                                        hint="leave --bounds out for a COUNT")
    for narrowed in request.bounds:
        table, _, column = narrowed.column.partition(".")
        declared = declared_bounds(settings, table, column)
        if declared is None:
            raise PrivacyParameterError(
                f"--bounds {narrowed.column}: this column has no declared [bounds], and only the custodian declares them",
                hint=f'narrow a column listed under [bounds] (pimento catalog shows them), or the custodian adds "{narrowed.column}" = '
                     "[LOWER, UPPER] under [bounds] in pimento.toml",
            )
        lo, hi = declared
        if narrowed.lower < lo or narrowed.upper > hi:
            raise PrivacyParameterError(
                f"--bounds {narrowed.to_text()} widen the custodian's [bounds] of {narrowed.column}, "
                f"[{format_number(lo)}, {format_number(hi)}]: an analyst may only narrow them",
                hint=f"give {format_number(lo)} <= LOWER <= UPPER <= {format_number(hi)}",
            )


def admit(request: Request, *, settings: Settings, ledger: Ledger, analyst: str = DEFAULT_ANALYST) -> Admitted:
    """``request`` admitted (module docstring); ``analyst``: who asks when the request names nobody."""
    mode = release_mode(request.mode)
    policy = configured_policy(settings)
    check_requirements(mode, request.context is not None, policy)
    chosen = resolve_neighbourhood(request.neighbours, settings.release.neighbours)
    neighbours = check_neighbourhood(mode, chosen, explicit=request.neighbours is not None)
    who = request.analyst or analyst
    mechanism = None
    if mode.spends or request.question is not None:
        if request.epsilon is None:
            if request.question is not None:
                raise ModeError("a question needs --epsilon: it sets the search's beta and the release's cost")
            raise ModeError(f"--mode {mode.name} spends budget: give --epsilon")
        mechanism = mechanism_for(request.epsilon, request.delta, share=settings.release.rs_bound_share)
    admitted_bounds(request, settings, spends=mode.spends)
    ledger.analyst_cap(who)  # unknown analyst -> BudgetError, nothing read
    return Admitted(request, mode, who, policy, neighbours, mechanism, sql=request.sql or "")
