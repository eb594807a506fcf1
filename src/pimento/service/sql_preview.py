"""The free preview of a SQL request (``POST /v1/sql/preview``, the SQL form of the web page).

What ``POST /v1/sql`` with the same fields would release, decided before anything is spent and
computed on the synthetic copy only (the private database is not opened; nothing is charged):

* the request the key makes (:meth:`Deployment.request`: the mode, the context, the analyst), refused
  here exactly as the release would refuse it from public inputs;
* the SQL as it will be run (parsed against the public catalog: a counting query in every mode but
  ci, which answers any SELECT exactly on the authorized cells and spends nothing);
* its cost (the requested epsilon and delta, the whole of them: :meth:`Mechanism.privacy_cost`),
  the epsilon planner (:func:`pimento.release.planner`: the noise's 95% half-width at the synthetic
  copy's residual sensitivity) and the count on the synthetic copy, when the deployment has a copy
  charged to its ledger (:func:`pimento.release.synthetic.synthetic_guarantee`; a copy that is not
  is never read: it might not be synthetic);
* the budget left to the analyst.

As for a question's preview, the estimate is the synthetic copy's: the released interval comes from a
DP bound of the private residual sensitivity and is usually wider.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pimento.errors import ModeError, UserError
from pimento.mechanisms.budget import Budget, format_number
from pimento.release import Mode, planner
from pimento.release.ask import open_synthetic, resolve_synthetic
from pimento.release.synthetic import synthetic_guarantee
from pimento.sql import CountQuery, parse_count_query

if TYPE_CHECKING:
    from pimento.service.deployment import Deployment
    from pimento.service.keys import ApiKey

__all__ = ["sql_preview"]


def sql_preview(deployment: Deployment, key: ApiKey, sql: str, epsilon: str | None, delta: str | None, *, mode: str = Mode.DP,
                sender: str | None = None, purpose: str | None = None) -> dict[str, Any]:
    """The preview of ``sql`` in ``mode`` for ``key`` (module docs); spends nothing, never opens the private database."""
    request = deployment.request(key, sql=sql, epsilon=epsilon, delta=delta, mode=mode, sender=sender, purpose=purpose)
    with deployment.ledger() as ledger:
        left = ledger.remaining(deployment.location, key.analyst)
    out: dict[str, Any] = {
        "sql": sql, "mode": str(request.mode), "context": request.context.to_dict() if request.context is not None else None,
        "budget_left": {"epsilon": format_number(left.epsilon), "delta": format_number(left.delta)},
        "spent": {"epsilon": "0", "delta": "0"},
    }
    if request.mode is Mode.CI:
        return {**out, "cost": {"epsilon": "0", "delta": "0"}, "notes": ["mode ci answers exactly on the cells your context may see; no budget"]}
    if epsilon is None:
        raise ModeError(f"mode {request.mode} spends budget: give epsilon", hint="e.g. epsilon 0.5")
    cost = Budget.of(epsilon, delta).as_spend()  # the whole requested budget (the release's privacy_cost), checked as the release checks it
    query = parse_count_query(sql, deployment.catalog, max_chars=deployment.settings.database.max_sql_chars)
    estimate = _on_synthetic_copy(deployment, query, epsilon, delta)
    rows = estimate.pop("planner", [])
    asked = next((row for row in rows if row["epsilon"] == format_number(cost.epsilon)), None)
    return {
        **out,
        "normalized_sql": query.to_sql(),
        "cost": {"epsilon": format_number(cost.epsilon), "delta": format_number(cost.delta)},
        "planner": rows,
        "estimated_half_width_95": asked["estimated_half_width_95"] if asked else None,
        **estimate,
    }


def _on_synthetic_copy(deployment: Deployment, query: CountQuery, epsilon: str, delta: str | None) -> dict[str, Any]:
    """The planner and the count on the deployment's synthetic copy; without a usable copy, the reason."""
    deployment.refresh_copy()  # a copy another process made since is read, as by the question's preview
    with deployment.synth_jobs.swap.shared():
        try:
            path = resolve_synthetic(deployment.search.synthetic, deployment.location, deployment.settings)
            with deployment.ledger() as ledger:
                budget, _inputs = synthetic_guarantee(ledger, deployment.location, path)
            engine = open_synthetic(path)
        except UserError as exc:
            return {"synthetic": None, "notes": [f"no estimate: {exc.one_line()}"]}
        try:
            rows = planner(query, engine, deployment.catalog, epsilon=epsilon, delta=delta, share=deployment.settings.release.rs_bound_share)
            answer = engine.execute(query.to_sql(engine.dialect)).scalar()
        finally:
            engine.close()
    return {
        "planner": rows,
        "synthetic": {"answer": answer, "epsilon": format_number(budget.epsilon), "delta": format_number(budget.delta)},
        "notes": ["the estimate is the synthetic copy's; the released interval comes from a DP bound of the private "
                  "residual sensitivity and is usually wider"],
    }
