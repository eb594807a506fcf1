"""Mode ``dp``: a noisy count calibrated to residual sensitivity (RS), ``(epsilon, delta)``-DP.

The count of a counting query, with noise calibrated to a smooth upper bound of its local
sensitivity, the residual sensitivity at the mechanism's beta (:mod:`pimento.sensitivity`), or
plain Laplace at global sensitivity 1 for a single relation. The guarantee holds for add/remove
neighbours; its answer states it by its epsilon and delta (no ``guarantee_kind``).
"""

from __future__ import annotations

from pimento.release.modes.base import Mode
from pimento.release.modes.noisy import NoisyMode
from pimento.sensitivity.neighbourhood import Neighbourhood

__all__ = ["DP", "DpMode"]


class DpMode(NoisyMode):
    """``--mode dp`` (the default)."""

    name: str = Mode.DP
    guarantee = "(epsilon, delta)-DP"
    aggregates = True

    def guarantee_kind(self, neighbours: Neighbourhood | None) -> str | None:
        """None: a dp answer's guarantee is its epsilon and delta (for add/remove neighbours)."""
        return None


DP = DpMode()
