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

As for a question's preview, the estimate is the synthetic copy's: the released interval comes from a
DP bound of the private residual sensitivity and is usually wider.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pimento.errors import UserError
from pimento.mechanisms.budget import Budget, format_number
from pimento.release import ask as _ask
from pimento.release.accuracy import Accuracy
from pimento.release.admission import DEFAULT_ANALYST, Admitted, admit
from pimento.release.aggregate import looks_aggregate, plan
from pimento.release.interpretation import PLANNER_EPSILONS, planner
from pimento.release.request import Request
from pimento.release.synthetic import synthetic_guarantee
from pimento.sql import CountQuery, parse_count_query

if TYPE_CHECKING:
    from pimento.config import Settings
    from pimento.mechanisms import Ledger
    from pimento.release.modes.base import Private
    from pimento.schema import Catalog

__all__ = ["ESTIMATE_BASIS", "preview_sql"]

#: What the estimate is and is not, in words (shown with every estimate).
ESTIMATE_BASIS = ("the estimate is the synthetic copy's; the released interval comes from a DP bound of the private "
                  "residual sensitivity and is usually wider")


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
    if looks_aggregate(request.sql):
        return {**out, **_grouped(job, private)}
    query = parse_count_query(request.sql, catalog, max_chars=settings.database.max_sql_chars)
    cost = job.mechanism.for_relations(len(query.relations)).privacy_cost()
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


def _grouped(job: Admitted, private: Private | None) -> dict[str, Any]:
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
    return {
        "normalized_sql": planned.sql,
        "cost": {"epsilon": format_number(planned.cost.epsilon), "delta": format_number(planned.cost.delta)},
        "groups": None if planned.keys is None else len(planned.keys),
        "domain": planned.domain,
        "budget_split": planned.budget_split,
        "clipped_on_copy": planned.clipped_on_copy,
        "notes": ["a grouped or summed query: no accuracy estimate on the synthetic copy yet; the noise per group is "
                  "stated with the answer"],
    }


def _on_synthetic_copy(job: Admitted, query: CountQuery, catalog: Catalog, settings: Settings, ledger: Ledger, location: str,
                       synthetic: str | Path | None, epsilons: tuple[str, ...]) -> dict[str, Any]:
    """The planner and the count on the synthetic copy; without a usable copy, the reason."""
    request = job.request
    try:
        path = _ask.resolve_synthetic(synthetic or request.search.synthetic, location, settings)
        budget, _inputs = synthetic_guarantee(ledger, location, path)
        engine = _ask.open_synthetic(path)
    except UserError as exc:
        return {"synthetic": None, "notes": [f"no estimate: {exc.one_line()}"]}
    try:
        rows = planner(query, engine, catalog, epsilon=str(request.epsilon), delta=None if request.delta is None else str(request.delta),
                       share=settings.release.rs_bound_share, epsilons=epsilons)
        answer = engine.execute(query.to_sql(engine.dialect)).scalar()
    finally:
        engine.close()
    return {
        "planner": rows,
        "synthetic": {"answer": answer, "epsilon": format_number(budget.epsilon), "delta": format_number(budget.delta)},
        "notes": [ESTIMATE_BASIS],
    }
