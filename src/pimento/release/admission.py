"""Admission: everything about a request that public inputs decide, before anything is read or charged.

:func:`admit` takes a :class:`~pimento.release.request.Request` and the custodian's settings and
ledger, and returns an :class:`Admitted` job, or raises a :class:`~pimento.errors.UserError`
having read nothing and spent nothing. In order (the order the tests pin):

1. the mode's requirements: a policy and a context for every mode but dp (ModeError);
2. the neighbourhood: the custodian's ``[release] neighbours`` unless the analyst asks for a
   stricter one, and one the mode covers (ModeError);
3. for a noisy release or a question: the budget -> mechanism under ``[release] rs_bound_share``
   (PrivacyParameterError);
4. the analyst is known to the ledger (BudgetError).

What is left for the release itself (the SQL on the public schema, whether this engine runs it)
is checked by the mode, still before the charge.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pimento.errors import ModeError
from pimento.mechanisms import Ledger, mechanism_for
from pimento.mechanisms.smooth import Mechanism
from pimento.release.modes import ReleaseMode, check_neighbourhood, check_requirements, release_mode
from pimento.release.request import Context, Request, resolve_neighbourhood
from pimento.sensitivity.neighbourhood import Neighbourhood

if TYPE_CHECKING:
    from pimento.config import Settings
    from pimento.release.interpretation import Interpretation

__all__ = ["DEFAULT_ANALYST", "Admitted", "admit", "configured_policy"]

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
    ledger.analyst_cap(who)  # unknown analyst -> BudgetError, nothing read
    return Admitted(request, mode, who, policy, neighbours, mechanism, sql=request.sql or "")
