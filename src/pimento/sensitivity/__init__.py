"""Residual sensitivity (Dong & Yi 2021) of counting queries, pushed down to the engine.

``residual_sensitivity(engine, query, catalog, beta)`` computes every T_E in one SQL statement,
maximises the envelope exactly and attributes RS to relations with Shapley values.
``compute_te`` and ``rs_from_te`` split the two halves for callers that cache T_E.
Every function here takes beta; the one epsilon -> beta formula is the mechanism's
(:meth:`pimento.mechanisms.Mechanism.beta_float`). :class:`Neighbourhood` is the one home of the
neighbourhoods a guarantee holds for; CRS is in :mod:`pimento.sensitivity.contextual`.
See PROOF.md beside this file for why the bound is a beta-smooth upper bound.
"""

from __future__ import annotations

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
