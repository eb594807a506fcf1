"""The free preview of a SQL request: what its release would cost and how accurate it is predicted to be.

:func:`preview_sql` is the one home of the preview that ``pimento sql --preview``,
:meth:`Session.preview_sql <pimento.release.session.Session.preview_sql>`, ``POST /v1/sql/preview``
and the web page's SQL form show. Decided before anything is spent and computed on the synthetic
copy only (the private database is never opened; nothing is charged):

* the request admitted as its release would admit it (:func:`pimento.release.admission.admit`: the
  mode's requirements, the neighbourhood, the budget -> mechanism, the analyst), so a refusal here is
  the release's refusal;
* the SQL as it will be run (parsed against the public catalog: a counting query in every mode but
  ci, which answers any SELECT exactly on the authorized cells and spends nothing);
* its cost (the requested epsilon and delta, the whole of them: :meth:`Mechanism.privacy_cost`),
  the epsilon planner (:func:`pimento.release.interpretation.planner`: the noise's 95% half-width at
  the synthetic copy's residual sensitivity), the count on the synthetic copy and the predicted
  relative error with its warning (:class:`pimento.release.accuracy.Accuracy`), when the deployment
  has a copy charged to its ledger (:func:`pimento.release.synthetic.synthetic_guarantee`; a copy that
  is not is never read: it might not be synthetic);
* the budget left to the analyst.

Under the person unit (``[privacy] unit = "Patient"``) the planner is :func:`person_planner`: the person
mechanism the release would choose on the copy and its predicted 95% error there (truncation bias plus
noise, or R2T's bound), the choice stated in words; a grouped or summed query and a mode other than dp are
refused as the release refuses them. :func:`noise_check` is the check every spending path makes before the
charge (the "mostly noise" warning; the refusal when the request did not accept it).

As for a question's preview, the estimate is the synthetic copy's: the released interval comes from a
DP bound of the private residual sensitivity and is usually wider.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pimento.errors import ModeError, UserError
from pimento.mechanisms.budget import Budget, format_number
from pimento.release import ask as _ask
from pimento.numbers import json_number
from pimento.release.accuracy import Accuracy, refuse_mostly_noise
from pimento.release.admission import DEFAULT_ANALYST, Admitted, admit
from pimento.release.aggregate import plan
from pimento.release.interpretation import PLANNER_EPSILONS, Interpretation, planner
from pimento.release.noise_check_cache import PREVIEWS, aggregate_syntax, parsed_count
from pimento.release.person_release import PersonChoice, plan_person_release, predicted_half_width, refuse_aggregate
from pimento.release.request import Request
from pimento.release.synthetic import open_checked_copy
from pimento.sql import CountQuery

if TYPE_CHECKING:
    from pimento.config import Settings
    from pimento.engines.base import Engine
    from pimento.mechanisms import Ledger
    from pimento.release.modes.base import Private
    from pimento.schema import Catalog

__all__ = ["ESTIMATE_BASIS", "PERSON_ESTIMATE_BASIS", "noise_check", "person_planner", "preview_sql", "reading_planner"]

#: What the estimate is and is not, in words (shown with every estimate).
ESTIMATE_BASIS = ("the estimate is the synthetic copy's; the released interval comes from a DP bound of the private "
                  "residual sensitivity and is usually wider")
#: The same under the person unit ([privacy] unit = "Patient"), where the release truncates each person's results.
PERSON_ESTIMATE_BASIS = ("under the person unit the estimate is the person mechanism's (truncation or R2T, chosen on the "
                         "synthetic copy as the release chooses it): its truncation bias on the copy plus its noise's 95% "
                         "half-width; the copy's persons are not the private ones, so the released error may differ")


def preview_sql(request: Request, *, catalog: Catalog, settings: Settings, ledger: Ledger, location: str,
                analyst: str = DEFAULT_ANALYST, synthetic: str | Path | None = None, private: Private | None = None,
                epsilons: tuple[str, ...] = PLANNER_EPSILONS) -> dict[str, Any]:
    """The preview of the SQL ``request`` (module docs); spends nothing, never opens the private database.

    ``synthetic``: the copy's path (default: the request's ``search.synthetic``, else ``[synth] path``,
    else ``DB.synthetic.duckdb`` beside the database). Raises what the release would raise from public
    inputs (admission, the SQL outside the supported fragment); a missing or uncharged copy is not an
    error here: the preview then says why it has no estimate. ``private``: the deployment's database side
    (a :class:`~pimento.release.session.Session`), which a grouped query's plan reads public relations of.
    ``epsilons``: the planner's (the asked one is always priced; ``()``: only it, the quick check
    ``pimento sql`` makes before a charge).
    """
    if request.sql is None:
        raise UserError("a SQL preview needs SQL; a question has its own preview", hint="preview the question with --preview")
    job = admit(request, settings=settings, ledger=ledger, analyst=analyst)
    left = ledger.remaining(location, job.analyst)
    out: dict[str, Any] = {
        "sql": request.sql, "mode": str(request.mode), "context": request.context.to_dict() if request.context is not None else None,
        "budget_left": {"epsilon": format_number(left.epsilon), "delta": format_number(left.delta)},
        "spent": {"epsilon": "0", "delta": "0"},
    }
    if job.mechanism is None:  # an exact answer (ci): no budget, nothing to estimate
        return {**out, "cost": {"epsilon": "0", "delta": "0"}, "notes": [f"mode {job.mode.name} answers exactly on the cells your context may see; no budget"]}
    unit = settings.privacy.person_unit
    if unit is not None:  # refused as the release refuses it, before anything (docs/privacy-unit.md)
        _person_refusals(job, unit)
    if aggregate_syntax(request.sql):
        return {**out, **_grouped(job, private, epsilons)}
    query = parsed_count(request.sql, catalog, max_chars=settings.database.max_sql_chars)
    cost = job.mechanism.for_relations(len(query.relations)).privacy_cost()
    if unit is not None:  # pure epsilon; the public refusals of the person plan (the unit's chains, COUNT(DISTINCT))
        assert request.epsilon is not None  # admitted with a mechanism: an epsilon was given
        cost = plan_person_release(query, catalog=catalog, settings=settings, epsilon=Budget.spend(request.epsilon).epsilon, copy=None).cost
    estimate = _on_synthetic_copy(job, query, catalog, settings, ledger, location, synthetic, epsilons)
    rows = estimate.pop("planner", [])
    asked = next((row for row in rows if Fraction(str(row["epsilon"])) == Fraction(str(request.epsilon))), None)
    half = asked["estimated_half_width_95"] if asked else None
    on_copy = estimate.get("synthetic")
    accuracy = {}
    if half is not None:
        accuracy = Accuracy(Fraction(str(half)), on_copy["answer"] if on_copy else None, Fraction(settings.release.warn_relative_error),
                            tuple(rows)).to_dict()
    return {
        **out,
        "normalized_sql": query.to_sql(),
        "cost": {"epsilon": format_number(cost.epsilon), "delta": format_number(cost.delta)},
        "planner": rows,
        "estimated_half_width_95": half,
        **accuracy,
        **estimate,
    }


def _grouped(job: Admitted, private: Private | None, epsilons: tuple[str, ...] = PLANNER_EPSILONS) -> dict[str, Any]:
    """A grouped or summed query's preview: its plan (:func:`pimento.release.aggregate.plan`, public inputs and
    the synthetic copy only: the groups, the cost, the budget split, the rows the copy predicts are clipped);
    without the deployment's database at hand (its public relations may hold the groups), the cost asked."""
    assert job.request.epsilon is not None  # admitted with a mechanism: an epsilon was given
    if private is None:
        asked = Budget.spend(job.request.epsilon, job.request.delta)
        return {"cost": {"epsilon": format_number(asked.epsilon), "delta": format_number(asked.delta)},
                "notes": ["a grouped or summed query: at most this cost (one relation spends no delta); the groups and the "
                          "noise per group are stated with the answer"]}
    planned = plan(private, job)
    from pimento.release.aggregate_accuracy import estimate_on_copy  # the whole answer's predicted error (its one home)

    return {
        "normalized_sql": planned.sql,
        "cost": {"epsilon": format_number(planned.cost.epsilon), "delta": format_number(planned.cost.delta)},
        "groups": None if planned.keys is None else len(planned.keys),
        "domain": planned.domain,
        "budget_split": planned.budget_split,
        "clipped_on_copy": planned.clipped_on_copy,
        "bounds": None if planned.query.bounds is None else [format_number(b) for b in (planned.query.bounds.lower, planned.query.bounds.upper)],
        **estimate_on_copy(planned, private, synthetic=job.request.search.synthetic, job=job, epsilons=epsilons),
    }


def _person_refusals(job: Admitted, unit: str) -> None:
    """What the release refuses under the person unit before anything is spent: another mode than dp, a grouped or
    summed query (:func:`pimento.release.person_release.refuse_aggregate`)."""
    if job.mode.name != "dp":
        raise ModeError(f"--mode {job.mode.name} is not available under [privacy] unit = {unit!r}",
                        hint="use --mode dp (the custodian chose the person unit; docs/privacy-unit.md)")
    refuse_aggregate(job.request.sql, unit)


def person_planner(query: CountQuery, copy: Engine, catalog: Catalog, settings: Settings, *, epsilon: Any,
                   epsilons: tuple[str, ...] = PLANNER_EPSILONS) -> tuple[list[dict[str, Any]], PersonChoice]:
    """The epsilon planner under the person unit: at each of ``epsilons`` and the asked ``epsilon``, the person mechanism
    the release would choose on the synthetic ``copy`` (:func:`~pimento.release.person_release.plan_person_release`) and
    its predicted 95% error there (:func:`~pimento.release.person_release.predicted_half_width`); with the choice at
    the asked epsilon (its mechanism and why, in words). The copy only: nothing is spent."""
    asked = Budget.spend(epsilon).epsilon
    rows, chosen = [], None
    for eps in sorted({Fraction(e) for e in epsilons} | {asked}):
        planned = plan_person_release(query, catalog=catalog, settings=settings, epsilon=eps, copy=copy)
        half = predicted_half_width(planned, copy, catalog)
        if half is not None:  # None: the copy does not fit this query (no estimate at this epsilon)
            rows.append({"epsilon": format_number(eps), "estimated_half_width_95": json_number(half), "mechanism": planned.choice.mechanism})
        if eps == asked:
            chosen = planned.choice
    assert chosen is not None  # the asked epsilon is always priced
    return rows, chosen


def reading_planner(seen: Interpretation, copy: Engine, catalog: Catalog, settings: Settings, *, epsilon: Any,
                    delta: Any) -> list[dict[str, Any]]:
    """The epsilon planner of a question's reading ``seen`` on the synthetic ``copy``: the person mechanism's
    (:func:`person_planner`) under the deployment's person unit, the residual-sensitivity planner
    (:func:`~pimento.release.interpretation.planner`) otherwise; a grouped reading's own (priced when it was read:
    the whole table's predicted error, :mod:`pimento.release.aggregate_accuracy`). The copy only: nothing is spent."""
    if seen.grouped is not None:
        return list(seen.grouped.planner)
    if settings.privacy.person_unit is not None:
        return person_planner(seen.query, copy, catalog, settings, epsilon=epsilon)[0]
    return planner(seen.query, copy, catalog, epsilon=epsilon, delta=delta, share=settings.release.rs_bound_share)


def noise_check(quick: Callable[[], Mapping[str, Any]], *, accept_noise: bool,
                full: Callable[[], Mapping[str, Any]] | None = None, memo: Hashable | None = None) -> Mapping[str, Any] | None:
    """Before a release's charge: its preview, and the refusal (:func:`pimento.release.accuracy.refuse_mostly_noise`)
    when it is predicted to be mostly noise and the request did not ``accept_noise``.

    ``quick()``: the request's preview (a SQL request's at the asked epsilon only); when it warns, ``full()`` (the
    planner's epsilons too) names the epsilon predicted to give +-10%. Every path that spends calls this (``POST
    /v1/sql``, ``POST /v1/ask``, the web page's confirmations, ``pimento sql``). Returns the preview, or None when
    none could be made (the release then refuses with its own words before any charge, or has no estimate: no
    refusal). Public inputs and the synthetic copy only: the refusal depends on nothing private.

    ``memo``: a key naming everything the preview reads (:mod:`pimento.release.noise_check_cache`): a preview
    already made under it in this process is reused (the decision is still made on it); a new one is kept.
    """
    shown = None if memo is None else PREVIEWS.get(memo)
    if shown is None:
        try:
            shown = quick()
            if shown.get("noise_warning") and full is not None:
                shown = full()
        except UserError:
            return None
        if memo is not None:
            PREVIEWS.put(memo, shown)
    refuse_mostly_noise(shown, accept_noise=accept_noise)
    return shown


def _on_synthetic_copy(job: Admitted, query: CountQuery, catalog: Catalog, settings: Settings, ledger: Ledger, location: str,
                       synthetic: str | Path | None, epsilons: tuple[str, ...]) -> dict[str, Any]:
    """The planner and the count on the synthetic copy; without a usable copy, the reason."""
    request = job.request
    try:
        path = _ask.resolve_synthetic(synthetic or request.search.synthetic, location, settings)
        budget, engine = open_checked_copy(ledger, location, path)  # the check kept while the files stay the same
    except UserError as exc:
        return {"synthetic": None, "notes": [f"no estimate: {exc.one_line()}"]}
    person: dict[str, Any] = {}
    try:
        if settings.privacy.person_unit is None:
            rows = planner(query, engine, catalog, epsilon=str(request.epsilon), delta=None if request.delta is None else str(request.delta),
                           share=settings.release.rs_bound_share, epsilons=epsilons)
        else:
            rows, choice = person_planner(query, engine, catalog, settings, epsilon=request.epsilon, epsilons=epsilons)
            person = {"unit": choice.unit, "person_release": choice.to_dict()}
        answer = engine.execute(query.to_sql(engine.dialect)).scalar()
    finally:
        engine.close()
    basis = ESTIMATE_BASIS if not person else f"{PERSON_ESTIMATE_BASIS}; at this epsilon: {person['person_release']['mechanism']}, {person['person_release']['reason']}"
    return {
        "planner": rows,
        "synthetic": {"answer": answer, "epsilon": format_number(budget.epsilon), "delta": format_number(budget.delta)},
        **person,
        "notes": [basis],
    }
