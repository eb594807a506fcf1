"""Residual sensitivity (Dong & Yi 2021) of counting queries, pushed down to the engine.

``residual_sensitivity(engine, query, catalog, beta)`` computes every T_E in one SQL statement,
maximises the envelope exactly and attributes RS to relations with Shapley values.
``compute_te`` and ``rs_from_te`` split the two halves for callers that cache T_E.
Every function here takes beta; the one epsilon -> beta formula is the mechanism's
(:meth:`pimento.mechanisms.Mechanism.beta_float`). :class:`Neighbourhood` is the one home of the
neighbourhoods a guarantee holds for; CRS is in :mod:`pimento.sensitivity.contextual`.
See PROOF.md beside this file for why the bound is a beta-smooth upper bound.

The names load on first use (module ``__getattr__``), so that importing
:mod:`pimento.sensitivity.neighbourhood` does not load sqlglot and NumPy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pimento._lazy import lazy_face as _lazy_face

if TYPE_CHECKING:
    from pimento.sensitivity.attribution import Attribution, attribute, value_function
    from pimento.sensitivity.envelope import Envelope, check_beta, maximize_envelope
    from pimento.sensitivity.neighbourhood import Neighbourhood
    from pimento.sensitivity.residual import ResidualCounts, compute_te, needed_subsets, te_key
    from pimento.sensitivity.rs import ResidualSensitivity, private_relations, residual_sensitivity, rs_from_te

__all__ = [
    "Attribution",
    "Envelope",
    "Neighbourhood",
    "ResidualCounts",
    "ResidualSensitivity",
    "attribute",
    "check_beta",
    "compute_te",
    "maximize_envelope",
    "needed_subsets",
    "private_relations",
    "residual_sensitivity",
    "rs_from_te",
    "te_key",
    "value_function",
]

#: The module each exported name lives in (one entry per name of ``__all__``).
_HOMES = {
    "Attribution": "attribution",
    "Envelope": "envelope",
    "Neighbourhood": "neighbourhood",
    "ResidualCounts": "residual",
    "ResidualSensitivity": "rs",
    "attribute": "attribution",
    "check_beta": "envelope",
    "compute_te": "residual",
    "maximize_envelope": "envelope",
    "needed_subsets": "residual",
    "private_relations": "rs",
    "residual_sensitivity": "rs",
    "rs_from_te": "rs",
    "te_key": "residual",
    "value_function": "attribution",
}


__getattr__, __dir__ = _lazy_face(__name__, _HOMES, globals(), __all__)
