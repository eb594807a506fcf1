"""The predicted error of a whole grouped or summed answer, on the synthetic copy: one home for it.

A grouped COUNT, a SUM or an AVG (:mod:`pimento.release.aggregate`) is released as one noisy value
per group. Its accuracy before anything is spent is predicted here from the release's plan
(:class:`~pimento.release.aggregate.AggregatePlan`: the groups, the mechanism of every part, decided
on public inputs) and the synthetic copy only:

* each group's value on the copy (the plan's SQL, which clips in the engine, run on the copy);
* the noise's 95% half-width per group (90% for an AVG, as its answer states) at the copy's
  sensitivity: the residual sensitivity of the ungrouped count on the copy at the parts' beta
  (:func:`pimento.sensitivity.grouped.grouped_sensitivity`, the sensitivity the release computes
  on the private data), or the public global sensitivity for one relation, through the one formula
  :func:`pimento.release.predicted_error.estimated_half_width`; an AVG's from
  :func:`~pimento.release.aggregate_answer.avg_interval` at the copy's sum and count;
* under partition selection, the half-width of the selection's Laplace noise, the groups of the
  copy and how many of them are expected to be shown.

The *epsilon planner* of a grouped answer (:func:`planner`) plans the same release at each of the
preview's epsilons (:data:`pimento.release.interpretation.PLANNER_EPSILONS`) and the one asked,
and prices each plan as above: the row of each epsilon is the median 95% half-width over the
groups, so that the preview names the smallest epsilon predicted to give about +-10% of the median
group value on the copy (``epsilon_for_10_percent``), as a count's preview does.

The *predicted error of the whole answer* (:meth:`GroupedEstimate.accuracy`) is the median
half-width over the groups relative to the median group value on the copy (at least 1; an AVG's relative
to half its declared bounds' range, :attr:`GroupedEstimate.reference`), an
:class:`~pimento.release.accuracy.Accuracy` with the custodian's warning threshold: the same number
the question's search ranks formulations by and both previews show. It is an estimate: the
released interval comes from a DP bound of the private sensitivity and is usually wider, and the
copy's groups are not the private ones.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from statistics import median
from typing import TYPE_CHECKING, Any

from pimento.mechanisms.budget import Budget, format_number
from pimento.mechanisms.partition_selection import laplace_threshold, shown_probability
from pimento.mechanisms.smooth import GlobalLaplace
from pimento.errors import UserError
from pimento.numbers import json_number, parse_number
from pimento.release.accuracy import PLANNER_EPSILONS, Accuracy
from pimento.release.aggregate import plan
from pimento.release.aggregate_answer import avg_interval
from pimento.release.aggregate_domains import key_of
from pimento.sensitivity.grouped import grouped_sensitivity
from pimento.sql.ir import AggregateKind, AggregateQuery

if TYPE_CHECKING:
    from pathlib import Path

    from pimento.engines.base import Engine
    from pimento.release.admission import Admitted
    from pimento.release.aggregate import AggregatePlan
    from pimento.release.modes.base import Private
    from pimento.schema import Catalog

__all__ = ["GROUPED_ESTIMATE_BASIS", "GroupedEstimate", "estimate_on_copy", "planner", "predict"]

#: What the grouped estimate is and is not, in words (shown with it).
GROUPED_ESTIMATE_BASIS = ("the estimate is the synthetic copy's: the median over the groups of the noise's 95% half-width at the "
                          "copy's residual sensitivity, relative to the median group value on the copy (an average's: to half its "
                          "declared bounds' range); the released intervals "
                          "come from a DP bound of the private one and are usually wider")


@dataclass(frozen=True)
class GroupedEstimate:
    """The predicted error of one grouped or summed release (module docstring); every field from the copy and public inputs.

    ``values``: each group's value on the copy (None: an AVG over no row); ``half_widths``: each
    group's predicted half-width; ``synthetic_rs``: the copy's sensitivity of the ungrouped count
    (None for one relation: the public GS); ``expected_shown``: under partition selection, the
    expected number of the copy's groups shown.
    """

    values: tuple[Fraction | None, ...]
    half_widths: tuple[Fraction, ...]
    synthetic_rs: Fraction | None
    confidence: Fraction
    expected_shown: float | None = None
    #: an AVG's half bound range: its intervals are clamped to the bounds, so its relative error is the half-width
    #: over that range (a useless average of years would otherwise look like a few percent of ~2000); None: the values
    reference: Fraction | None = None

    @property
    def median_half_width(self) -> Fraction:
        return Fraction(median(self.half_widths)) if self.half_widths else Fraction(0)

    @property
    def median_value(self) -> Fraction | None:
        """The median of the groups' absolute values on the copy (None without a group with a value)."""
        known = [abs(v) for v in self.values if v is not None]
        return Fraction(median(known)) if known else None

    def accuracy(self, threshold: Fraction, planner: tuple[Any, ...] = ()) -> Accuracy:
        """The whole answer's predicted relative error (median half-width over median value) with its warning."""
        value = self.median_value
        if self.reference is not None:
            return Accuracy(self.median_half_width, None if value is None else json_number(value), threshold, planner,
                            reference=self.reference, reference_words="half the declared bounds' range,")
        return Accuracy(self.median_half_width, None if value is None else json_number(value), threshold, planner)

    def relative_error(self) -> Fraction:
        """What the search ranks formulations by: :meth:`accuracy`'s relative error (no value on the copy: no bound)."""
        relative = self.accuracy(Fraction(1)).relative_error
        return relative if relative is not None else Fraction(10**18)

    def to_dict(self) -> dict[str, Any]:
        """The analyst-facing summary (the copy's values are not listed group by group)."""
        value = self.median_value
        return {
            "groups_on_copy": len(self.values),
            "median_half_width": json_number(self.median_half_width),
            "median_value_on_copy": None if value is None else json_number(value),
            "interval_level": float(self.confidence),
            "synthetic_rs": None if self.synthetic_rs is None else json_number(self.synthetic_rs),
            **({"expected_groups_shown": round(self.expected_shown, 2)} if self.expected_shown is not None else {}),
        }


def predict(planned: AggregatePlan, synthetic: Engine, catalog: Catalog) -> GroupedEstimate:
    """The predicted error of the release ``planned`` (module docstring), computed on the open synthetic copy only."""
    query = planned.query
    width = len(query.group_by)
    rows = synthetic.execute(planned.query.to_sql(synthetic.dialect)).rows
    found = {tuple(key_of(v) for v in row[:width]): list(row[width:]) for row in rows}
    found = {k: v for k, v in found.items() if None not in k}
    if planned.selection is not None:
        return _selection(planned, found)
    keys = [tuple(key_of(v) for v in k) for k in planned.keys or ()]
    outputs = [found.get(k, [0, 0]) for k in keys]
    rs = _copy_rs(planned, synthetic, catalog)
    halves = {p.name: _half_width(p, rs, Fraction(1) if p.name == "count" else planned.grid) for p in planned.parts}
    confidence = Fraction(95, 100)
    if query.kind is AggregateKind.AVG:
        assert query.bounds is not None
        bounds = (query.bounds.lower, query.bounds.upper)
        values: list[Fraction | None] = []
        widths = []
        for out in outputs:
            total, count = _number(out[0]), _number(out[1] if len(out) > 1 else 0)
            values.append(None if count < 1 else min(max(total / count, bounds[0]), bounds[1]))
            lo, hi = avg_interval((total - halves["sum"], total + halves["sum"]), (count - halves["count"], count + halves["count"]), bounds)
            widths.append((hi - lo) / 2)
        return GroupedEstimate(tuple(values), tuple(widths), rs, Fraction(90, 100), reference=(bounds[1] - bounds[0]) / 2 or None)
    half = halves["count" if query.kind is AggregateKind.COUNT else "sum"]
    return GroupedEstimate(tuple(_number(out[0]) for out in outputs), tuple(half for _ in outputs), rs, confidence)


def planner(job: Admitted, private: Private, synthetic: Engine, catalog: Catalog, *, asked: GroupedEstimate | None = None,
            epsilons: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """What each epsilon buys for the grouped or summed release ``job`` (module docstring): the release planned at each of
    ``epsilons`` (default: the preview's planner epsilons) and the one asked, against ``private`` (the deployment, or the
    copy in its place), each plan priced by :func:`predict` on the open ``synthetic`` copy. ``asked``: the estimate at the
    asked epsilon, already computed. An epsilon whose plan the release would refuse has no row; a mode that answers exactly
    (ci) has none. Spends nothing."""
    if epsilons is None:
        epsilons = PLANNER_EPSILONS
    if job.request.epsilon is None or not job.mode.spends:  # an exact answer (ci): nothing to price
        return []
    mine = parse_number(job.request.epsilon, name="epsilon")
    rows = []
    for eps in sorted({parse_number(e, name="epsilon") for e in epsilons} | {mine}):
        text = format_number(eps)
        estimate = asked if eps == mine else None
        if estimate is None:
            try:
                estimate = predict(plan(private, replace(job, request=replace(job.request, epsilon=text))), synthetic, catalog)
            except UserError:
                continue
        rows.append({"epsilon": text, "estimated_half_width_95": json_number(estimate.median_half_width)})
    return rows


def estimate_on_copy(planned: AggregatePlan, private: Private, *, synthetic: str | Path | None = None,
                     job: Admitted | None = None, epsilons: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The preview fields of ``planned``'s predicted error (:func:`predict`) on the deployment's synthetic copy, with the
    custodian's warning; without a copy charged to this ledger (one that is not may not be synthetic), the reason.
    With the admitted ``job`` of ``planned``, the epsilon planner too (:func:`planner`: ``planner`` and
    ``epsilon_for_10_percent``) at ``epsilons`` (default the planner's; ``()``: the asked one only, the quick check)."""
    from pimento.errors import UserError
    from pimento.release.ask import open_synthetic, resolve_synthetic
    from pimento.release.synthetic import synthetic_guarantee

    settings = private.database.settings
    try:
        path = resolve_synthetic(synthetic, private.location, settings)
        budget, _inputs = synthetic_guarantee(private.ledger, private.location, path)
        engine = open_synthetic(path)
    except UserError as exc:
        return {"synthetic": None, "notes": [f"no estimate: {exc.one_line()}"]}
    try:
        estimate = predict(planned, engine, private.database.catalog)
        rows = [] if job is None else planner(job, private, engine, private.database.catalog, asked=estimate, epsilons=epsilons)
    finally:
        engine.close()
    value = estimate.median_value
    return {
        "estimated_half_width_95": json_number(estimate.median_half_width),
        **estimate.accuracy(Fraction(settings.release.warn_relative_error), tuple(rows)).to_dict(),
        **({"planner": rows} if job is not None else {}),
        "predicted_error": estimate.to_dict(),
        "synthetic": {"answer": None if value is None else json_number(value), "answer_is": "the median group value on the copy",
                      "epsilon": format_number(budget.epsilon), "delta": format_number(budget.delta)},
        "notes": [GROUPED_ESTIMATE_BASIS],
    }


def _number(value: Any) -> Fraction:
    try:
        return Fraction(value if value is not None else 0)
    except (TypeError, ValueError, OverflowError, ArithmeticError):
        return Fraction(0)


def _copy_rs(planned: AggregatePlan, synthetic: Engine, catalog: Catalog) -> Fraction | None:
    """The copy's smooth sensitivity of the ungrouped count at the parts' beta (as the release computes it privately); None: GS."""
    first = planned.parts[0].mechanism
    if isinstance(first, GlobalLaplace):
        return None
    count_query = AggregateQuery(planned.query.body.with_count(planned.query.count_query.count))
    found = grouped_sensitivity(synthetic, count_query, catalog, first.beta_float(), planned.neighbours)
    return Fraction(found.count.rs)


def _half_width(part: Any, rs: Fraction | None, grid: Fraction) -> Fraction:
    """One part's 95% half-width in the answer's units (its mechanism works in grid units)."""
    from pimento.release.predicted_error import estimated_half_width  # the one formula

    return estimated_half_width(part.mechanism, None if rs is None else rs * part.factor) * grid


def _selection(planned: AggregatePlan, found: dict[tuple[Any, ...], list[Any]]) -> GroupedEstimate:
    """Partition selection: the copy's groups, the selection noise's half-width, the groups expected to be shown."""
    assert planned.selection is not None
    eps, delta = planned.cost.epsilon, planned.cost.delta
    scale = planned.selection.l1 / eps
    half = GlobalLaplace(Budget.spend(eps)).half_width(scale)
    tau = laplace_threshold(eps, delta, planned.selection)
    counts = [_number(v[0]) for v in found.values()]
    shown = sum(shown_probability(int(c), eps, planned.selection, tau) for c in counts)
    return GroupedEstimate(tuple(counts), tuple(half for _ in counts), None, Fraction(95, 100), expected_shown=float(shown))
