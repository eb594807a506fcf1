"""Before an analyst's spend on the service: refused when the answer is predicted to be mostly noise and not accepted.

``POST /v1/sql``, ``POST /v1/ask`` and the web page's two confirmations call :func:`check_sql` or
:func:`check_question` before the release; both make the key's request as the release makes it
(:meth:`Deployment.request`) and hand its preview to the one decision,
:func:`pimento.release.sql_preview.noise_check` (which calls
:func:`pimento.release.accuracy.refuse_mostly_noise`): a :class:`~pimento.release.accuracy.MostlyNoiseError`
(HTTP 409) when the predicted relative error on the synthetic copy exceeds the custodian's ``[release]
warn_relative_error`` and the request did not say ``accept_noise``. The preview reads the synthetic copy
and public inputs only; a request that accepts the noise skips it. No copy, or a preview that fails
(the release then refuses with its own words, before any charge): no refusal here.

The check is cheap when it can be (:mod:`pimento.release.noise_check_cache`): a SQL request whose answer
the ledger already holds (the release returns it and spends nothing: a count in any noisy mode, under the
tuple or the person unit, :meth:`Deployment.answered`; a grouped or summed query, under its plan's key) is
not checked at all, and a question whose reading's answer it holds is not refused, so a cached answer is never
refused; a preview already made in this process for the same request, analyst and synthetic copy is
reused, and the decision made again on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pimento.errors import UserError
from pimento.release import Mode
from pimento.release.noise_check_cache import aggregate_key, aggregate_syntax
from pimento.release.interpretation import PLANNER_EPSILONS
from pimento.release.accuracy import refuse_mostly_noise
from pimento.release.sql_preview import noise_check, preview_sql

if TYPE_CHECKING:
    from pimento.release.request import Request
    from pimento.service.deployment import Deployment
    from pimento.service.keys import ApiKey

__all__ = ["check_question", "check_sql"]


def check_sql(deployment: Deployment, key: ApiKey, sql: str, epsilon: str | None, delta: str | None, *, mode: str = Mode.DP,
              sender: str | None = None, purpose: str | None = None, accept_noise: bool = False, bounds: Any = None) -> None:
    """Refuse ``sql``'s release before the charge when it is predicted to be mostly noise (module docs). ``bounds``: the
    request's narrowed clipping bounds, previewed as the release will use them (given only when the body has them)."""
    if accept_noise or epsilon is None or mode == Mode.CI:  # accepted, or nothing noisy asked (ci: exact; no epsilon: refused)
        return
    narrowing = {} if bounds is None else {"bounds": bounds}
    request = deployment.request(key, sql=sql, epsilon=epsilon, delta=delta, mode=mode, sender=sender, purpose=purpose, **narrowing)
    deployment.refresh_copy()
    if _answered(deployment, key, request):  # the release returns the stored answer and spends nothing: no warning owed
        return
    noise_check(lambda: _sql_preview(deployment, key, request, ()), full=lambda: _sql_preview(deployment, key, request, None),
                accept_noise=False, memo=("sql", deployment.location, key.analyst, repr(request), deployment.copy_identity))


def check_question(deployment: Deployment, key: ApiKey, question: str, epsilon: str, delta: str | None, *, mode: str = Mode.DP,
                   sender: str | None = None, purpose: str | None = None, expect_sql: str | None = None,
                   accept_noise: bool = False, bounds: object = None) -> None:
    """Refuse a question's release before the charge when it is predicted to be mostly noise (module docs): its
    preview (:meth:`Deployment.preview`, the planner included) is the one the analyst would see. A reading that is
    not the ``expect_sql`` confirmed is left to the release, which refuses it (nothing spent) in its own words."""
    if accept_noise or mode == Mode.CI:  # accepted, or an exact answer (ci: no noise to warn about)
        return

    def preview() -> dict[str, Any]:
        shown = deployment.preview(key, question, epsilon, delta, mode=mode, sender=sender, purpose=purpose, bounds=bounds)
        if expect_sql is not None and " ".join(expect_sql.split()) != " ".join(str(shown.get("chosen_sql", "")).split()):
            return {}  # another reading than the one confirmed: the release refuses it
        return shown

    try:
        request = deployment.request(key, question=question, epsilon=epsilon, delta=delta, mode=mode, sender=sender,
                                     purpose=purpose, expect_sql=expect_sql, bounds=bounds)
    except UserError:
        return  # the release refuses it in the same words, before any charge
    deployment.refresh_copy()
    memo = ("question", deployment.location, key.analyst, repr(request), deployment.copy_identity)
    shown = noise_check(preview, accept_noise=True, memo=memo)  # the preview (made once), not yet the decision
    if shown is None or (shown.get("noise_warning") and _reading_answered(deployment, key, request, shown)):
        return
    refuse_mostly_noise(shown, accept_noise=False)


def _reading_answered(deployment: Deployment, key: ApiKey, request: Request, shown: Mapping[str, Any]) -> bool:
    """Whether the ledger holds the answer to the question's reading ``shown["chosen_sql"]`` (a plain dp count: a
    question's release is stored under its reading's SQL, as that SQL's would be): then it is answered free."""
    chosen = shown.get("chosen_sql")
    if not chosen:
        return False
    as_sql = replace(request, question=None, sql=str(chosen), expect_sql=None)
    return _answered(deployment, key, as_sql)


def _answered(deployment: Deployment, key: ApiKey, request: Request) -> bool:
    """Whether the ledger holds the answer the release of the SQL ``request`` would return free: a count's under
    :meth:`Deployment.answered`, a grouped or summed query's under its plan's key
    (:func:`~pimento.release.noise_check_cache.aggregate_key`, planned in a session as the release plans it). False
    when unsure (a request the release refuses: it refuses it in its own words, before any charge)."""
    assert request.sql is not None
    if not aggregate_syntax(request.sql):
        return deployment.answered(key, request)
    try:
        with deployment.synth_jobs.swap.shared(), deployment.session(key.analyst) as session:
            found = aggregate_key(request, session)
            return found is not None and session.ledger.cached_answer(found) is not None
    except UserError:
        return False


def _sql_preview(deployment: Deployment, key: ApiKey, request: Request, epsilons: tuple[str, ...] | None) -> dict[str, Any]:
    """The preview of ``request`` (:func:`pimento.service.sql_preview.sql_preview`'s reading), priced at ``epsilons``
    (None: the planner's; ``()``: the asked epsilon only)."""
    assert request.sql is not None
    if aggregate_syntax(request.sql):  # its plan reads the public relations that may hold the groups
        with deployment.synth_jobs.swap.shared(), deployment.session(key.analyst) as session:
            return session.preview_sql(request, epsilons=epsilons)
    with deployment.synth_jobs.swap.shared(), deployment.ledger() as ledger:
        return preview_sql(request, catalog=deployment.catalog, settings=deployment.settings, ledger=ledger,
                           location=deployment.location, analyst=key.analyst, synthetic=deployment.search.synthetic,
                           epsilons=PLANNER_EPSILONS if epsilons is None else epsilons)
