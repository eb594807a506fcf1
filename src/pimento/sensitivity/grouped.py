"""Sensitivity of grouped COUNT, SUM and AVG: the ungrouped count's residual sensitivity, scaled.

A grouped query outputs a vector (one coordinate per group). Its L1 local sensitivity is bounded
by the local sensitivity of one ungrouped count (PROOF.md beside this file, section 5):

* **Theorem (add/remove).** For an :class:`~pimento.sql.ir.AggregateQuery` over distinct
  relations (no self-join) and neighbours I, I' that differ by one tuple t of one relation,
  the join results of I' are those of I plus (or minus) the results D_t that use t, all
  on the same side. Hence, for ``COUNT(*)``/``COUNT(col)`` per group,
  ``||h(I) - h(I')||_1 = |D_t| = |q(I) - q(I')|`` with q the ungrouped count
  (:attr:`~pimento.sql.ir.AggregateQuery.count_query`): the histogram's L1 local sensitivity
  *equals* the count's, at every database, so at every distance k too, and any beta-smooth
  upper bound of the count's (residual sensitivity) is one of the histogram's.
  ``COUNT(DISTINCT col)`` per group: at most |D_t| (the plain count's change, which is what
  residual sensitivity bounds for a distinct count), not the ungrouped distinct count's change.
  A clipped SUM per group: ``<= B |D_t|`` with B = max(|lo|, |hi|) and D_t the results with
  the column not NULL.
* **Change neighbours** (t replaced by t'): the change goes through I - t, so the L1 change is at
  most |D_t(I)| + |D_t'(I - t)| <= 2 LS_hat^(0)(I): twice the bound, and since a change is two
  add/remove steps, residual sensitivity must be computed at beta / 2 to be beta-smooth for it.

Self-joins are refused (a tuple could then appear twice in one join result, on both sides of a
change: the one-direction argument fails). The release layer calls :func:`grouped_sensitivity`;
it takes beta, never derives it (the mechanism's formula is the one home of beta).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from pimento.engines.base import Engine
from pimento.errors import InternalError, UnsupportedQuery
from pimento.schema import Catalog
from pimento.sensitivity.neighbourhood import Neighbourhood
from pimento.sensitivity.rs import ResidualSensitivity, residual_sensitivity
from pimento.sql.ir import AggregateKind, AggregateQuery

__all__ = ["GroupedSensitivity", "grouped_sensitivity", "l1_factor", "rs_beta"]


def check_no_self_join(query: AggregateQuery) -> None:
    """Refuse a query that reads a table twice (the IR refuses it too; this says why it matters here)."""
    tables = [r.table.lower() for r in query.body.relations]
    if len(set(tables)) != len(tables):
        raise UnsupportedQuery(
            "self_join",
            "a grouped or summed query over a self-join has no residual-sensitivity bound here",
            hint="read each table once",
        )


# proof: grouped-factor
def l1_factor(query: AggregateQuery, neighbourhood: Neighbourhood, *, part: AggregateKind | None = None) -> Fraction:
    """c such that c * (a smooth bound of LS of ``query.count_query``) bounds the output vector's L1 LS.

    ``part`` picks one output of an AVG (``SUM`` for the clipped sums, ``COUNT`` for the counts
    of non-NULL values); by default the query's own aggregate. 1 (add/remove) or 2 (change,
    both), times the clipping bound B for a SUM part. A SUM part needs the custodian's bounds.
    """
    check_no_self_join(query)
    kind = query.kind if part is None else part
    if query.kind is AggregateKind.COUNT and kind is not AggregateKind.COUNT:
        raise InternalError("a COUNT query has no SUM part")
    if query.kind is AggregateKind.SUM and kind is not AggregateKind.SUM:
        raise InternalError("a SUM query has only its SUM part")
    if kind is AggregateKind.AVG:
        raise InternalError("an AVG is released as a SUM part and a COUNT part: pass part=")
    base = Fraction(1) if Neighbourhood(neighbourhood) is Neighbourhood.ADD_REMOVE else Fraction(2)
    if kind is AggregateKind.COUNT:
        return base
    if query.bounds is None:
        raise UnsupportedQuery(
            "unbounded_sum",
            f"{query.kind.value.upper()}({query.column}) needs clipping bounds declared for the column",
            hint="the custodian declares them under [bounds] in pimento.toml",
        )
    return base * query.bounds.bound


# proof: grouped-beta
def rs_beta(beta: Fraction, neighbourhood: Neighbourhood) -> Fraction:
    """The beta at which the count's RS is computed so that the scaled bound is beta-smooth.

    A change is two add/remove steps, so RS at beta/2 changes by at most e^beta across it.
    """
    if Neighbourhood(neighbourhood) is Neighbourhood.ADD_REMOVE:
        return Fraction(beta)
    return Fraction(beta) / 2


@dataclass(frozen=True)
class GroupedSensitivity:
    """A beta-smooth upper bound ``smooth`` of the L1 local sensitivity of one output part (private)."""

    smooth: Fraction
    factor: Fraction
    count: ResidualSensitivity
    neighbourhood: Neighbourhood


def grouped_sensitivity(
    engine: Engine,
    query: AggregateQuery,
    catalog: Catalog | None,
    beta: float,
    neighbourhood: Neighbourhood = Neighbourhood.ADD_REMOVE,
    *,
    part: AggregateKind | None = None,
    private: tuple[str, ...] | list[str] | None = None,
    timeout_s: float | None = None,
) -> GroupedSensitivity:
    """RS of ``query.count_query`` at :func:`rs_beta`, times :func:`l1_factor`: beta-smooth for ``neighbourhood``.

    ``beta`` is the mechanism's (a float rounded down by the caller, as for a scalar count).
    ``private`` overrides the private aliases (default: the catalog's). Everything that can refuse
    (self-join, missing bounds) is decided from the query alone, before the engine is read.
    """
    factor = l1_factor(query, neighbourhood, part=part)
    beta_rs = float(rs_beta(Fraction(beta), neighbourhood))
    count = residual_sensitivity(
        engine, query.count_query, catalog, beta_rs, private=private, attribution=False, timeout_s=timeout_s
    )
    return GroupedSensitivity(count.rs * factor, factor, count, Neighbourhood(neighbourhood))
