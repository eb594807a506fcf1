"""DP partition selection: which private group keys a grouped count may show, by a noisy threshold.

When the group keys are private (no public domain to enumerate), the set of keys present is
itself data. Each present key's count gets Laplace noise of scale ``l1 / eps`` and the key is
shown, with that noisy count, only when the noisy count reaches the threshold

    tau = per_group + grid / 2 + (l1 / eps) (ln(groups / (2 delta)) + eps)

(:func:`laplace_threshold`, rounded up). ``l1``, ``groups`` and ``per_group`` are public bounds of
what one neighbour (one tuple of a private relation) can do: the L1 change of the count vector,
the number of keys it can create, and the count of a key it creates (:class:`Contribution`;
1, 1, 1 for a grouped count over one relation; over joins they must come from declared
multiplicity caps, not from the data). The release is (eps, delta)-DP (PROOF.md, section 11).

This is the Laplace thresholding of Korolova, Kenthapadi, Mishra and Ntoulas ("Releasing search
queries and clicks privately", WWW 2009) as used for GROUP BY by Google's DP SQL (Wilson, Zhang,
Lam, Desfontaines, Simmons-Marengo, Gipson, "Differentially private SQL with bounded user
contribution", PoPETs 2020), with two conservative terms added: ``+ eps`` inside the log (so the
bound holds in both directions of the neighbour relation without turning delta into
e^eps delta) and ``+ grid / 2`` (the noise is rounded to the grid by the exact sampler).

    >>> import random
    >>> one = Contribution(l1=Fraction(1), groups=1, per_group=Fraction(1))
    >>> tau = laplace_threshold(Fraction(1), Fraction(1, 10**6), one)
    >>> 15 < tau < 16
    True
    >>> shown_probability(100, Fraction(1), one, tau) > 0.999999
    True
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from pimento.errors import InternalError, PrivacyParameterError
from pimento.mechanisms.samplers import RandomSource, default_rng, rounded_laplace
from pimento.mechanisms.smooth import ln_upper

__all__ = ["Contribution", "laplace_threshold", "select_partitions", "shown_probability"]


@dataclass(frozen=True)
class Contribution:
    """Public bounds of one neighbour's effect on the count vector (module doc)."""

    l1: Fraction
    groups: int
    per_group: Fraction

    def __post_init__(self) -> None:
        if self.l1 <= 0 or self.per_group <= 0 or self.per_group > self.l1:
            raise InternalError(f"contribution bounds must satisfy 0 < per_group <= l1, got {self}")
        if isinstance(self.groups, bool) or not isinstance(self.groups, int) or self.groups < 1:
            raise InternalError(f"groups must be a positive integer, got {self.groups!r}")


# proof: partition-threshold
def laplace_threshold(epsilon: Fraction, delta: Fraction, contribution: Contribution, *, grid: Fraction = Fraction(1)) -> Fraction:
    """tau of the module doc, exact and rounded up (ln rounded up): a larger tau only shows fewer keys."""
    if epsilon <= 0:
        raise PrivacyParameterError("partition selection needs epsilon > 0")
    if not 0 < delta < Fraction(1, 2):
        raise PrivacyParameterError(
            "partition selection over private group keys needs delta in (0, 1/2)",
            hint="pass a delta (e.g. 1e-6), or declare the group domain public",
        )
    c = contribution
    scale = c.l1 / epsilon
    return c.per_group + Fraction(grid) / 2 + scale * (ln_upper(Fraction(c.groups) / (2 * delta)) + epsilon)


def shown_probability(count: int | Fraction, epsilon: Fraction, contribution: Contribution, threshold: Fraction, *, grid: Fraction = Fraction(1)) -> float:
    """P(a key with this true count is shown): P(count + m grid >= tau), m the rounded Laplace draw.

    m >= j = ceil((tau - count) / grid) iff (l1 / eps) X >= (j - 1/2) grid for X ~ Laplace(1) (ties
    have probability 0). A public function of the count: what the answer says about recall.
    """
    scale = contribution.l1 / epsilon
    j = math.ceil((threshold - Fraction(count)) / grid)
    y = float((j - Fraction(1, 2)) * grid / scale)
    return 0.5 * math.exp(-y) if y >= 0 else 1 - 0.5 * math.exp(y)


# proof: partition-release
def select_partitions(
    counts: Mapping[Hashable, int | Fraction],
    epsilon: Fraction,
    delta: Fraction,
    contribution: Contribution,
    *,
    grid: Fraction = Fraction(1),
    rng: RandomSource | None = None,
) -> dict[Hashable, Fraction]:
    """The shown keys and their noisy counts, in an order that depends on the shown keys only.

    ``counts`` holds the keys present in the data (a key with count 0 may be included: its law
    does not depend on the data). Counts must lie on the grid. One draw per key, from the
    OS CSPRNG unless a test fixes the source.
    """
    tau = laplace_threshold(epsilon, delta, contribution, grid=grid)
    scale = contribution.l1 / epsilon
    rng = rng if rng is not None else default_rng()
    shown: dict[Hashable, Fraction] = {}
    for key in sorted(counts, key=repr):  # the draw order must not follow the engine's row order
        value = Fraction(counts[key])
        if (value / grid).denominator != 1:
            raise InternalError(f"count {value} of a group is not on the grid {grid}")
        noisy = value + rounded_laplace(scale, grid, rng) * grid
        if noisy >= tau:
            shown[key] = noisy
    return shown
