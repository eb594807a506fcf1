"""Mode ``contextual``: one noisy count calibrated to contextual residual sensitivity (CRS).

The whole query is released with noise calibrated to CRS (:mod:`pimento.sensitivity.contextual`,
the tight variant: authorization at every distance, CONTEXTUAL.md section 6) at the mechanism's
beta, charged like a dp release: ``(epsilon, delta)``-contextual DP for the context (authorized
cells held fixed), and end to end with the synthetic copy ``(eps_syn + eps_rel, delta_syn +
delta_rel)``. The only built-in mode whose bound covers the change and both neighbourhoods.

For a question, the reading is the chosen cluster's formulation with the lowest CRS on the
synthetic copy, the context's authorization evaluated there (:meth:`ContextualMode.reading_on_copy`):
what the preview shows is what a confirmed ask releases.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from pimento.policy.authorized_tuples import authorization_view
from pimento.release.enforcement import enforcer_for
from pimento.release.modes.base import Mode
from pimento.release.modes.noisy import NoisyMode, Run
from pimento.sensitivity.contextual import contextual_sensitivity
from pimento.sensitivity.neighbourhood import Neighbourhood
from pimento.sql import parse_count_query

if TYPE_CHECKING:
    from pimento.engines.base import Engine
    from pimento.release.admission import Admitted
    from pimento.release.ask import SearchOutcome
    from pimento.schema import Catalog

__all__ = ["CONTEXTUAL", "ContextualMode"]


class ContextualMode(NoisyMode):
    """``--mode contextual``."""

    name: str = Mode.CONTEXTUAL
    needs_context = True
    neighbourhoods: tuple[Neighbourhood, ...] = (Neighbourhood.ADD_REMOVE, Neighbourhood.CHANGE, Neighbourhood.BOTH)
    guarantee = "(epsilon, delta)-contextual DP for this context (authorized cells held fixed)"
    end_to_end_kind = "contextual DP for this context"

    def bound(self, run: Run) -> tuple[Fraction, Mapping[str, Any]]:
        """CRS, tight variant (authorization at every distance; under change and both the paper's rules, sound there, apply)."""
        crs = contextual_sensitivity(run.engine, run.query, run.catalog, run.mechanism.beta_float(), run.view(), variant="tight",
                                     neighbourhood=run.job.neighbours or Neighbourhood.ADD_REMOVE)
        return crs.crs, {"crs": crs.custodian_dict()}

    def reading_on_copy(self, job: Admitted, outcome: SearchOutcome, synthetic: Engine, catalog: Catalog) -> tuple[str, float] | None:
        """Among the formulations of the chosen cluster, the one with the lowest CRS (tight variant) on the
        synthetic copy, the context's authorization evaluated there; ties keep the search's choice.
        Reads the synthetic copy only; None when no formulation joins relations."""
        assert job.policy is not None and job.context is not None and job.mechanism is not None  # admitted
        beta = job.mechanism.beta_float()
        result = outcome.result
        cluster = next((a.cluster for a in result.alternatives if a.sql == result.sql), None)
        candidates = [result.sql] + [a.sql for a in result.alternatives if cluster is not None and a.cluster == cluster and a.sql != result.sql]
        enforcer, context = enforcer_for(job.policy, job.context, synthetic, catalog)
        best: tuple[Fraction, str] | None = None
        for sql in candidates:
            query = parse_count_query(sql, catalog)
            if len(query.relations) < 2:
                continue
            crs = contextual_sensitivity(synthetic, query, catalog, beta, authorization_view(enforcer, context, query), variant="tight",
                                         neighbourhood=job.neighbours or Neighbourhood.ADD_REMOVE).crs
            if best is None or crs < best[0]:
                best = (crs, sql)
        return None if best is None else (best[1], float(best[0]))


CONTEXTUAL = ContextualMode()
