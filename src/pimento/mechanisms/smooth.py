"""Smooth-sensitivity mechanisms of Nissim, Raskhodnikova and Smith (2007), as used by Dong & Yi.

Given a beta-smooth upper bound ``S`` of the local sensitivity of a count (residual
sensitivity, computed for the beta this mechanism states *before* it runs):

* :class:`SmoothLaplace`, (epsilon, delta)-DP: beta = epsilon / (2 ln(2/delta)), noise
  Laplace with scale 2 S / epsilon.
* :class:`SmoothQuartic`, pure epsilon-DP: beta = epsilon / 10, noise (10 S / epsilon) Z
  with Z of density proportional to 1 / (1 + z^4).

Every quantity that decides the noise is exact: epsilon, delta, S and the scale are
Fractions, beta is rounded *down* (a smaller beta only makes the caller's S larger, see
PROOF.md), and the noise is drawn by the exact samplers of :mod:`.samplers`, rounded to a
fixed grid (1 for counts). The 95% interval uses the noise law's quantile rounded outward.

    >>> import random
    >>> mech = SmoothLaplace.of(epsilon="1", delta="1e-6")
    >>> mech.privacy_cost()
    Budget(epsilon=Fraction(1, 1), delta=Fraction(1, 1000000))
    >>> r = mech.release(120, rs=3, rng=random.Random(0))
    >>> r.scale, r.noise
    (Fraction(6, 1), 'laplace')
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from pimento.errors import InternalError, PrivacyParameterError
from pimento.mechanisms.budget import Budget, NumberLike, format_number, parse_number
from pimento.mechanisms.samplers import RandomSource, default_rng, rounded_laplace, rounded_quartic

__all__ = [
    "CONFIDENCE",
    "Mechanism",
    "Release",
    "SmoothLaplace",
    "SmoothQuartic",
    "mechanism_for",
    "exact_sensitivity",
    "float_down",
]

#: Coverage of the interval every release reports.
CONFIDENCE = Fraction(95, 100)

#: Upper bounds of the 0.95 quantile of |X| for the two noise laws (rounded outward).
#: Laplace(1): |X| ~ Exp(1), quantile ln(20) = 2.99573227355399...
_Q95_LAPLACE = Fraction(2995733, 1000000)
#: Density (sqrt 2 / pi) / (1 + z^4): quantile 1.79336157677476... (scipy brentq on the
#: closed-form CDF, see tests/unit/mechanisms/test_smooth.py which re-checks the bound).
_Q95_QUARTIC = Fraction(1793362, 1000000)

_BETA_BITS = 64
#: beta is reported at most (1 - 2^-40) times its exact value, leaving room for a sensitivity
#: implementation that rounds RS up by a relative factor up to 1 + beta * 2^-41 (PROOF.md, section 4).
_BETA_MARGIN = 1 - Fraction(1, 1 << 40)


@dataclass(frozen=True)
class Release:
    """One released answer: never contains the true value."""

    value: Fraction
    interval: tuple[Fraction, Fraction]
    noise: str
    scale: Fraction
    sensitivity: Fraction
    beta: Fraction
    epsilon: Fraction
    delta: Fraction
    grid: Fraction
    confidence: Fraction = CONFIDENCE

    @property
    def noise_std(self) -> float:
        """Standard deviation of the continuous noise law (display only; rounding adds at most grid/sqrt(12))."""
        factor = math.sqrt(2) if self.noise == "laplace" else 1.0  # E[Z^2] = 1 for 1/(1+z^4)
        return float(self.scale) * factor

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": _plain(self.value),
            "interval": [_plain(self.interval[0]), _plain(self.interval[1])],
            "value_exact": format_number(self.value),
            "interval_exact": [format_number(self.interval[0]), format_number(self.interval[1])],
            "confidence": float(self.confidence),
            "noise": self.noise,
            "scale": float(self.scale),
            "scale_exact": format_number(self.scale),
            "noise_std": self.noise_std,
            "rs": float(self.sensitivity),
            "rs_exact": format_number(self.sensitivity),
            "beta": format_number(self.beta),
            "epsilon": format_number(self.epsilon),
            "delta": format_number(self.delta),
            "grid": format_number(self.grid),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Release:
        def f(x: Any) -> Fraction:
            return parse_number(str(x), name="stored value")

        return cls(
            value=f(data["value_exact"]),
            interval=(f(data["interval_exact"][0]), f(data["interval_exact"][1])),
            noise=data["noise"],
            scale=f(data["scale_exact"]),
            sensitivity=f(data["rs_exact"]),
            beta=f(data["beta"]),
            epsilon=f(data["epsilon"]),
            delta=f(data["delta"]),
            grid=f(data["grid"]),
            confidence=Fraction(str(data.get("confidence", "0.95"))),
        )


def _plain(x: Fraction) -> int | float | str:
    """JSON form of an exact value: an int when integral, else its float."""
    return x.numerator if x.denominator == 1 else float(x)


def exact_sensitivity(rs: Any) -> Fraction:
    """A sensitivity as an exact Fraction; floats are taken at their exact binary value (never rounded down)."""
    if isinstance(rs, bool):
        raise InternalError(f"sensitivity must be a number, got {rs!r}")
    if isinstance(rs, float):
        if not math.isfinite(rs):
            raise PrivacyParameterError(f"sensitivity must be finite, got {rs!r}")
        value = Fraction(rs)  # exact binary value of the float
    elif isinstance(rs, (int, Fraction)):
        value = Fraction(rs)
    elif isinstance(rs, str):
        value = parse_number(rs, name="sensitivity")
    else:
        raise InternalError(f"sensitivity must be int or Fraction, got {type(rs).__name__}")
    if value < 0:
        raise InternalError(f"sensitivity must be >= 0, got {value}")
    return value


class Mechanism(Protocol):
    noise: str

    def privacy_cost(self) -> Budget: ...

    def beta(self) -> Fraction: ...

    def scale(self, rs: Any) -> Fraction: ...

    def release(self, true_value: int, rs: Any, *, rng: RandomSource | None = None) -> Release: ...


class _SmoothBase:
    noise = ""
    _q95 = Fraction(0)

    def __init__(self, budget: Budget, *, grid: Fraction = Fraction(1)) -> None:
        if grid <= 0 or grid.numerator != 1:
            # 1/grid must be an integer so that every integer count lies on the grid (PROOF.md, section 2).
            raise PrivacyParameterError(f"grid must be 1/k for a positive integer k, got {format_number(Fraction(grid))}")
        self._budget = budget
        self.grid = Fraction(grid)

    def privacy_cost(self) -> Budget:
        """What one release costs, known before it runs."""
        return self._budget

    @property
    def epsilon(self) -> Fraction:
        return self._budget.epsilon

    @property
    def delta(self) -> Fraction:
        return self._budget.delta

    def beta(self) -> Fraction:  # pragma: no cover - abstract
        raise NotImplementedError

    def beta_float(self) -> float:
        """:meth:`beta` as the largest float not above it (for float-based sensitivity code)."""
        return float_down(self.beta())

    def scale(self, rs: Any) -> Fraction:  # pragma: no cover - abstract
        raise NotImplementedError

    def _sample(self, scale: Fraction, rng: RandomSource) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def half_width(self, scale: Fraction) -> Fraction:
        """K * grid with P(|noise| <= K * grid) >= 95%: K = ceil(q95 * scale / grid - 1/2)."""
        k = math.ceil(self._q95 * scale / self.grid - Fraction(1, 2))
        return max(0, k) * self.grid

    def release(self, true_value: int, rs: Any, *, rng: RandomSource | None = None) -> Release:
        """Noisy ``true_value`` calibrated to the smooth bound ``rs`` (computed at :meth:`beta`)."""
        if isinstance(true_value, bool) or not isinstance(true_value, int):
            raise InternalError(f"release expects an integer count, got {type(true_value).__name__}")
        sensitivity = exact_sensitivity(rs)
        scale = self.scale(sensitivity)
        m = self._sample(scale, rng if rng is not None else default_rng())
        value = true_value + m * self.grid
        half = self.half_width(scale)
        return Release(
            value=Fraction(value),
            interval=(value - half, value + half),
            noise=self.noise,
            scale=scale,
            sensitivity=sensitivity,
            beta=self.beta(),
            epsilon=self.epsilon,
            delta=self.delta,
            grid=self.grid,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "noise": self.noise,
            "epsilon": format_number(self.epsilon),
            "delta": format_number(self.delta),
            "beta": format_number(self.beta()),
            "grid": format_number(self.grid),
        }


class SmoothLaplace(_SmoothBase):
    """(epsilon, delta)-DP: beta = eps / (2 ln(2/delta)), Laplace noise of scale 2 S / eps."""

    noise = "laplace"
    _q95 = _Q95_LAPLACE

    def __init__(self, budget: Budget, *, grid: Fraction = Fraction(1)) -> None:
        budget = budget.as_spend()
        if budget.delta <= 0:
            raise PrivacyParameterError(
                "delta must be in (0, 1) for the Laplace mechanism", hint="omit delta for pure epsilon-DP"
            )
        super().__init__(budget, grid=grid)
        self._beta = _round_down(_BETA_MARGIN * budget.epsilon / (2 * ln_upper(2 / budget.delta)))

    @classmethod
    def of(cls, epsilon: NumberLike, delta: NumberLike, *, grid: NumberLike = 1) -> SmoothLaplace:
        return cls(Budget.spend(epsilon, delta), grid=parse_number(grid, name="grid"))

    def beta(self) -> Fraction:
        return self._beta

    def scale(self, rs: Any) -> Fraction:
        return 2 * exact_sensitivity(rs) / self.epsilon

    def _sample(self, scale: Fraction, rng: RandomSource) -> int:
        return rounded_laplace(scale, self.grid, rng)


class SmoothQuartic(_SmoothBase):
    """Pure epsilon-DP: beta = eps / 10, noise (10 S / eps) Z with density of Z proportional to 1/(1+z^4)."""

    noise = "quartic"
    _q95 = _Q95_QUARTIC

    def __init__(self, budget: Budget, *, grid: Fraction = Fraction(1)) -> None:
        budget = budget.as_spend()
        if budget.delta != 0:
            raise InternalError("SmoothQuartic is pure epsilon-DP: its budget must have delta = 0")
        super().__init__(budget, grid=grid)

    @classmethod
    def of(cls, epsilon: NumberLike, *, grid: NumberLike = 1) -> SmoothQuartic:
        return cls(Budget.spend(epsilon), grid=parse_number(grid, name="grid"))

    def beta(self) -> Fraction:
        return _round_down(_BETA_MARGIN * self.epsilon / 10)

    def scale(self, rs: Any) -> Fraction:
        return 10 * exact_sensitivity(rs) / self.epsilon

    def _sample(self, scale: Fraction, rng: RandomSource) -> int:
        return rounded_quartic(scale, self.grid, rng)


class GlobalLaplace(_SmoothBase):
    """Pure epsilon-DP Laplace mechanism calibrated to a known global sensitivity: scale GS / eps.

    Used only when GS is known from the query's structure alone, never from the data: a count
    over a single relation has GS = 1 (adding or removing one tuple changes it by at most 1).
    Then Laplace(GS / eps) is eps-DP (Dwork et al. 2006) and its noise is half that of the
    smooth-sensitivity Laplace mechanism (2 RS / eps with RS = 1) with no delta spent.
    The sensitivity passed to :meth:`release` must be that GS.
    """

    noise = "laplace"
    _q95 = _Q95_LAPLACE

    def __init__(self, budget: Budget, *, gs: int = 1, grid: Fraction = Fraction(1)) -> None:
        budget = budget.as_spend()
        if budget.delta != 0:
            raise InternalError("GlobalLaplace is pure epsilon-DP: its budget must have delta = 0")
        if isinstance(gs, bool) or not isinstance(gs, int) or gs <= 0:
            raise InternalError(f"global sensitivity must be a positive integer, got {gs!r}")
        super().__init__(budget, grid=grid)
        self.gs = gs

    @classmethod
    def of(cls, epsilon: NumberLike, *, gs: int = 1, grid: NumberLike = 1) -> GlobalLaplace:
        return cls(Budget.spend(epsilon), gs=gs, grid=parse_number(grid, name="grid"))

    def beta(self) -> Fraction:
        return Fraction(0)

    def scale(self, rs: Any) -> Fraction:
        sensitivity = exact_sensitivity(rs)
        if sensitivity != self.gs:
            raise InternalError(f"GlobalLaplace releases with its GS {self.gs}, not {format_number(sensitivity)}")
        return sensitivity / self.epsilon

    def _sample(self, scale: Fraction, rng: RandomSource) -> int:
        return rounded_laplace(scale, self.grid, rng)


def mechanism_for_query(
    epsilon: NumberLike, delta: NumberLike | None, *, relations: int, grid: NumberLike = 1
) -> SmoothLaplace | SmoothQuartic | GlobalLaplace:
    """The mechanism for a counting query over ``relations`` relations (a structural fact, not data).

    A single-relation count has global sensitivity 1, so the plain Laplace mechanism at scale
    1/eps is used (pure eps-DP, costing (eps, 0) whatever delta was offered); joins use the
    smooth-sensitivity mechanisms of :func:`mechanism_for`. Parameters are validated first.
    """
    requested = mechanism_for(epsilon, delta, grid=grid)  # validates epsilon and delta
    if relations == 1:
        return GlobalLaplace(Budget.spend(requested.epsilon), gs=1, grid=requested.grid)
    return requested


def mechanism_for(epsilon: NumberLike, delta: NumberLike | None = None, *, grid: NumberLike = 1) -> SmoothLaplace | SmoothQuartic:
    """The (epsilon, delta) Laplace mechanism if delta is given, else the pure-epsilon one.

    Parameters are validated here, before anything is read or spent.
    """
    if delta is None:
        return SmoothQuartic.of(epsilon, grid=grid)
    return SmoothLaplace.of(epsilon, delta, grid=grid)


# --------------------------------------------------------------------------------------
# Exact rounding helpers
# --------------------------------------------------------------------------------------


def float_down(x: Fraction) -> float:
    """The largest float that is <= x (x >= 0)."""
    f = float(x)
    if Fraction(f) > x:
        f = math.nextafter(f, 0.0)
    return f


def _round_down(x: Fraction, bits: int = _BETA_BITS) -> Fraction:
    """Largest multiple of 2^-bits not above x (or x itself when that would be 0)."""
    down = Fraction(math.floor(x * (1 << bits)), 1 << bits)
    return down if down > 0 else x


def ln_upper(x: Fraction) -> Fraction:
    """A Fraction L >= ln(x) for x > 1, within about 1e-9 relative; certified by exact arithmetic.

    The float estimate is padded and then *checked*: a lower bound of exp(L) from its Taylor
    series (positive terms, each rounded down in fixed point) must reach x.
    """
    if x <= 1:
        raise InternalError(f"ln_upper expects x > 1, got {x}")
    estimate = math.log(x.numerator) - math.log(x.denominator)
    margin = 1e-9 * (1 + abs(math.log(x.numerator)) + abs(math.log(x.denominator)))
    for _ in range(20):
        candidate = Fraction(math.ceil((estimate + margin) * (1 << 48)), 1 << 48)
        if _exp_lower(candidate) >= x:
            return candidate
        margin *= 10
    raise InternalError(f"ln_upper could not certify a bound for {x}")  # pragma: no cover


def _exp_lower(y: Fraction, bits: int = 160) -> Fraction:
    """A lower bound of exp(y) for y >= 0: partial Taylor sum with terms rounded down."""
    one = 1 << bits
    term = one
    total = one
    i = 1
    while True:
        term = term * y.numerator // (y.denominator * i)
        if term == 0:
            break
        total += term
        i += 1
        if i > 100_000:  # pragma: no cover - y is at most a few thousand
            break
    return Fraction(total, one)
