"""Smooth-sensitivity release of a d-dimensional vector (a grouped count or sum): beta depends on d.

The scalar mechanisms of :mod:`.smooth` add noise ``scale * X`` to one count. A histogram of d
groups gets i.i.d. noise per coordinate, calibrated to a beta-smooth upper bound ``S`` of the
vector's **L1** local sensitivity (:mod:`pimento.sensitivity.grouped`). The noise scale per
coordinate is the scalar one (``2 S / eps`` for Laplace, ``10 S / eps`` for the quartic law), but
the dilation property of a product density costs d times as much, so beta shrinks with d
(PROOF.md, section 10):

* :class:`VectorSmoothLaplace`, (eps, delta)-DP:
  ``beta = R / (1 + R)`` with ``R = eps / (4 (d ln 2 + ln(1/delta) + eps / 2))``;
* :class:`VectorSmoothQuartic`, pure eps-DP: ``beta = eps / (10 d)``;

with eps the noise's share of epsilon, beta rounded down as the scalar one is (and with the same
margin). The interval of every coordinate comes from the DP upper bound of ``S`` that the scalar
mechanisms draw (one bound, paid once, for the whole vector): each coordinate's interval covers
its true value with probability at least 95% (per coordinate, not simultaneously).

    >>> import random
    >>> mech = VectorSmoothLaplace.of(epsilon="1", delta="1e-6", dimension=5)
    >>> float(mech.beta()) < float(mech.scalar_beta())
    True
    >>> out = mech.release_vector((10, 0, 3, 7, 1), rs=2, rng=random.Random(0))
    >>> len(out.values), out.private.scale
    (5, Fraction(40, 9))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pimento.errors import InternalError, PrivacyParameterError
from pimento.mechanisms.budget import Budget, NumberLike, parse_number
from pimento.mechanisms.samplers import RandomSource, default_rng
from pimento.mechanisms.smooth import (
    _BETA_MARGIN,
    _SCALE_DIGITS,
    PrivateDetails,
    SmoothLaplace,
    SmoothQuartic,
    exact_sensitivity,
    laplace_beta,
    ln_upper,
    quartic_beta,
    round_up_significant,
    rs_bound_share,
    _round_down,
)

__all__ = [
    "MAX_DIMENSION",
    "VectorOutcome",
    "VectorSmoothLaplace",
    "VectorSmoothQuartic",
    "vector_laplace_beta",
    "vector_quartic_beta",
]

#: The most coordinates one release draws (a custodian's cap on groups is the release layer's).
MAX_DIMENSION = 1 << 20


# proof: vector-laplace-beta
def vector_laplace_beta(epsilon: Fraction, delta: Fraction, dimension: int) -> Fraction:
    """beta for i.i.d. Laplace noise on d coordinates, (eps, delta)-DP: R/(1+R), R as in the module doc.

    ln 2 and ln(1/delta) are rounded up (R only shrinks), beta then rounded down with the
    scalar margin. Guarantees beta e^beta <= R and beta <= eps / (2 d) (PROOF.md, section 10).
    """
    d = _dimension(dimension)
    if not 0 < delta < 1:
        raise PrivacyParameterError("delta must be in (0, 1) for the Laplace mechanism", hint="omit delta for pure epsilon-DP")
    r = epsilon / (4 * (d * ln_upper(Fraction(2)) + ln_upper(1 / delta) + epsilon / 2))
    beta = _round_down(_BETA_MARGIN * r / (1 + r))
    assert beta <= epsilon / (2 * d), "d ln 2 > d / 2 makes R < eps / (2 d)"
    return beta


# proof: vector-quartic-beta
def vector_quartic_beta(epsilon: Fraction, dimension: int) -> Fraction:
    """beta for i.i.d. quartic noise on d coordinates, pure eps-DP: eps / (10 d), rounded down with the margin."""
    return _round_down(_BETA_MARGIN * epsilon / (10 * _dimension(dimension)))


def _dimension(dimension: int) -> int:
    if isinstance(dimension, bool) or not isinstance(dimension, int) or not 1 <= dimension <= MAX_DIMENSION:
        raise InternalError(f"a vector release has 1 to {MAX_DIMENSION} coordinates, got {dimension!r}")
    return dimension


@dataclass(frozen=True)
class VectorOutcome:
    """A released vector: noisy values, one interval per coordinate, and the custodian-only details."""

    values: tuple[Fraction, ...]
    intervals: tuple[tuple[Fraction, Fraction], ...]
    noise_scale_upper: Fraction
    beta: Fraction
    private: PrivateDetails

    def to_dict(self) -> dict[str, Any]:
        """The analyst's part (never ``private``)."""
        return {
            "values": [str(v) for v in self.values],
            "intervals": [[str(lo), str(hi)] for lo, hi in self.intervals],
            "noise_scale_upper": str(self.noise_scale_upper),
            "beta": str(self.beta),
        }


class _VectorMixin:
    """release_vector for a smooth mechanism whose beta was set for ``dimension`` coordinates."""

    dimension: int

    # proof: vector-release
    def release_vector(self, values: Sequence[int | Fraction], rs: Any, *, rng: RandomSource | None = None) -> VectorOutcome:
        """Each value plus independent noise of the scalar scale for the smooth L1 bound ``rs``.

        ``values`` must lie on the grid (integer counts; sums of clipped values on a grid the
        release layer chose), so that the output is a post-processing of the ideal mechanism.
        """
        mech: Any = self
        if len(values) != self.dimension:
            raise InternalError(f"this mechanism was calibrated for {self.dimension} coordinates, got {len(values)}")
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (int, Fraction)) or (Fraction(v) / mech.grid).denominator != 1:
                raise InternalError(f"value {v!r} is not on the grid {mech.grid}")
        mech.admit()
        rng = rng if rng is not None else default_rng()
        sensitivity = exact_sensitivity(rs)
        scale = mech.scale(sensitivity)
        noisy = tuple(Fraction(v) + mech._sample(scale, rng) * mech.grid for v in values)
        upper, steps = mech.rs_upper(sensitivity, rng)
        scale_upper = round_up_significant(mech._factor * upper / mech.epsilon_noise, _SCALE_DIGITS)
        half = mech.half_width(scale_upper, mech._q_bound)
        return VectorOutcome(
            values=noisy,
            intervals=tuple((v - half, v + half) for v in noisy),
            noise_scale_upper=scale_upper,
            beta=mech.beta(),
            private=PrivateDetails(sensitivity, scale, upper, steps),
        )


class VectorSmoothLaplace(_VectorMixin, SmoothLaplace):
    """(eps, delta)-DP release of d coordinates: Laplace(2 S / eps_noise) each, beta of :func:`vector_laplace_beta`."""

    name = "vector_smooth_laplace"

    def __init__(self, budget: Budget, *, dimension: int, grid: Fraction = Fraction(1), share: Fraction | None = None) -> None:
        super().__init__(budget, grid=grid, share=rs_bound_share(share))
        self.dimension = _dimension(dimension)
        self._beta = vector_laplace_beta(self.epsilon_noise, self.delta, self.dimension)

    @classmethod
    def of(  # type: ignore[override]
        cls, epsilon: NumberLike, delta: NumberLike, *, dimension: int, grid: NumberLike = 1, share: NumberLike | None = None
    ) -> VectorSmoothLaplace:
        return cls(Budget.spend(epsilon, delta), dimension=dimension, grid=parse_number(grid, name="grid"), share=rs_bound_share(share))

    def scalar_beta(self) -> Fraction:
        """The scalar mechanism's beta at the same budget (for comparison only)."""
        return laplace_beta(self.epsilon_noise, self.delta)


class VectorSmoothQuartic(_VectorMixin, SmoothQuartic):
    """Pure eps-DP release of d coordinates: (10 S / eps_noise) Z each, beta = eps_noise / (10 d)."""

    name = "vector_smooth_quartic"

    def __init__(self, budget: Budget, *, dimension: int, grid: Fraction = Fraction(1), share: Fraction | None = None) -> None:
        super().__init__(budget, grid=grid, share=rs_bound_share(share))
        self.dimension = _dimension(dimension)

    @classmethod
    def of(  # type: ignore[override]
        cls, epsilon: NumberLike, *, dimension: int, grid: NumberLike = 1, share: NumberLike | None = None
    ) -> VectorSmoothQuartic:
        return cls(Budget.spend(epsilon), dimension=dimension, grid=parse_number(grid, name="grid"), share=rs_bound_share(share))

    def beta(self) -> Fraction:
        return vector_quartic_beta(self.epsilon_noise, self.dimension)

    def scalar_beta(self) -> Fraction:
        return quartic_beta(self.epsilon_noise)
