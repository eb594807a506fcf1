"""The predicted error of a formulation, on the synthetic copy: what the search chooses a formulation by.

For each formulation of a question the search (:class:`pimento.search.SensitivitySearch`) compares
the error of the answer the release would give, predicted on the SYNTHETIC copy at the request's
epsilon and delta (never on the private data), through an
:class:`~pimento.search.evaluate.ErrorModel` built here (the search takes it as a parameter: it
does not import the release layer):

* tuple unit (the paper's): the 95% half-width of the noise of the mechanism
  :meth:`Mechanism.for_relations <pimento.mechanisms.smooth.Mechanism.for_relations>` picks for the
  formulation, exactly as the release will (:func:`estimated_half_width`): the global Laplace
  mechanism at GS 1 for one relation, the smooth-sensitivity mechanism at the copy's RS otherwise.
  A one-relation formulation can thus win against a join of lower RS;
* person unit (``[privacy] unit = "Patient"``): the 95% error of the person-level release
  (:func:`pimento.release.person_release.plan_person_release` on the copy, then
  :func:`~pimento.release.person_release.predicted_half_width`: the copy's truncation bias plus the
  noise's half-width). RS plays no part in that release, so a formulation of lower RS can lose.

Pruning needs a lower bound on the error of every formulation a prefix grows into (like with
like). Tuple unit: a prefix the search considers pruning has two relations at least, so its
extensions are released by the smooth mechanism at an RS that is not lower (containment), whose
half-width grows with RS: the half-width at the prefix's RS is such a bound. Person unit: no sound
bound is known (truncation bias and R2T's thresholds do not move monotonically with the join), so
nothing is pruned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from pimento.mechanisms import GlobalLaplace
from pimento.mechanisms.smooth import Mechanism
from pimento.release.person_release import plan_person_release, predicted_half_width
from pimento.search.evaluate import ErrorModel

if TYPE_CHECKING:
    from pimento.config import Settings
    from pimento.engines.base import Engine
    from pimento.schema import Catalog
    from pimento.sql import CountQuery

__all__ = ["PersonUnitError", "TupleUnitError", "error_model", "estimated_half_width"]


def estimated_half_width(mechanism: Mechanism, rs: Fraction | float | int | None) -> Fraction:
    """The 95% half-width of ``mechanism``'s noise at sensitivity ``rs`` (its GS for the global mechanism).

    The accuracy estimate of a preview, of the epsilon planner and of the search's choice: ``rs``
    is computed on the synthetic copy, never on the private database.
    """
    if isinstance(mechanism, GlobalLaplace):
        return Fraction(mechanism.half_width(mechanism.scale(mechanism.gs)))
    if not rs or float(rs) <= 0:
        return Fraction(0)
    return Fraction(mechanism.half_width(mechanism.scale(rs)))


@dataclass(frozen=True)
class TupleUnitError:
    """Tuple unit: the 95% half-width of the release's noise at the copy's RS (module docstring)."""

    mechanism: Mechanism
    basis: str = "95% half-width of the release's noise on the synthetic copy (global Laplace for one relation, else smooth at RS)"

    def error(self, query: CountQuery, rs: float) -> float:
        return float(estimated_half_width(self.mechanism.for_relations(len(query.relations)), rs))

    def floor(self, query: CountQuery, rs: float) -> float | None:
        """The smooth mechanism's half-width at the prefix's RS: every extension has two relations or more."""
        if len(query.relations) < 2:
            return None  # a one-relation prefix grows into joins: its global-sensitivity value bounds nothing
        return float(estimated_half_width(self.mechanism.for_relations(len(query.relations)), rs))


@dataclass(frozen=True)
class PersonUnitError:
    """Person unit: the person-level release's 95% error predicted on the copy (module docstring); no pruning."""

    catalog: Catalog
    settings: Settings
    epsilon: Fraction
    copy: Engine
    basis: str = "95% error of the person-level release on the synthetic copy (truncation bias plus noise)"

    def error(self, query: CountQuery, rs: float) -> float:
        planned = plan_person_release(query, catalog=self.catalog, settings=self.settings, epsilon=self.epsilon, copy=self.copy)
        half = predicted_half_width(planned, self.copy, self.catalog)
        return math.inf if half is None else float(half)

    def floor(self, query: CountQuery, rs: float) -> float | None:
        return None


def error_model(mechanism: Mechanism, copy: Engine, catalog: Catalog, settings: Settings | None) -> ErrorModel:
    """The :class:`~pimento.search.evaluate.ErrorModel` of a release at ``mechanism``'s budget under the custodian's unit.

    ``copy``: the synthetic copy the search reads (the only data either model reads);
    ``settings``: the custodian's (its ``[privacy] unit``); None means the tuple unit.
    """
    unit = settings.privacy.person_unit if settings is not None else None
    if unit is None or settings is None:
        return TupleUnitError(mechanism)
    return PersonUnitError(catalog, settings, mechanism.privacy_cost().epsilon, copy)
