"""Smooth-sensitivity mechanisms of Nissim, Raskhodnikova and Smith (2007), as used by Dong & Yi.

Given a beta-smooth upper bound ``S`` of the local sensitivity of a count (residual
sensitivity, computed for the beta this mechanism states *before* it runs), a release at
(epsilon, delta) splits epsilon in two (PROOF.md, section 8):

* ``epsilon_noise = (1 - share) epsilon`` for the noisy count:
  :class:`SmoothLaplace`, (epsilon, delta)-DP: beta = epsilon_noise / (2 ln(2/delta)), noise
  Laplace with scale 2 S / epsilon_noise; :class:`SmoothQuartic`, pure epsilon-DP:
  beta = epsilon_noise / 10, noise (10 S / epsilon_noise) Z with Z of density proportional to
  1 / (1 + z^4);
* ``epsilon_rs_bound = share * epsilon`` for a DP upper bound ``U`` of ``S`` (ln S is
  beta-smooth, so it is released with Laplace noise and shifted up), from which the 95%
  interval is computed. ``S`` itself, the exact noise scale and anything else computed from
  ``S`` are never part of what the analyst receives: they go to :class:`PrivateDetails`,
  which the release protocol writes to the custodian's audit log only.

:class:`GlobalLaplace` (a single-relation count, global sensitivity 1 by structure) needs no
bound: its whole epsilon goes to the noise and its interval comes from the public GS.

Every quantity that decides the noise is exact: epsilon, delta, S and the scale are
Fractions, beta is rounded *down* (a smaller beta only makes the caller's S larger, see
PROOF.md), and the noise is drawn by the exact samplers of :mod:`.samplers`, rounded to a
fixed grid (1 for counts).

    >>> import random
    >>> mech = SmoothLaplace.of(epsilon="1", delta="1e-6")
    >>> mech.privacy_cost()
    Budget(epsilon=Fraction(1, 1), delta=Fraction(1, 1000000))
    >>> mech.epsilon_noise, mech.epsilon_rs_bound
    (Fraction(9, 10), Fraction(1, 10))
    >>> release, private = mech.release(120, rs=3, rng=random.Random(0))
    >>> private.scale, str(release.noise), "rs" in release.to_dict()
    (Fraction(20, 3), 'laplace', False)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, NamedTuple, Protocol

import numpy as np

from pimento._compat import Self, StrEnum
from pimento.errors import InternalError, PrivacyParameterError, UnsupportedQuery
from pimento.mechanisms.budget import Budget, NumberLike, format_number, parse_number
from pimento.numbers import display_float, json_number
from pimento.mechanisms.samplers import RandomSource, default_rng, rounded_laplace, rounded_quartic

__all__ = [
    "BOUND_SCALE_MAX",
    "Noise",
    "CONFIDENCE",
    "DEFAULT_RS_BOUND_SHARE",
    "GlobalLaplace",
    "MAX_RELATIONS",
    "MIN_BETA",
    "Mechanism",
    "Outcome",
    "PrivateDetails",
    "Release",
    "SmoothLaplace",
    "SmoothQuartic",
    "mechanism_for",
    "mechanism_for_query",
    "exact_sensitivity",
    "float_down",
]


class Noise(StrEnum):
    """The noise laws of the mechanisms: Laplace, and the quartic law of density proportional to 1/(1+z^4)."""

    LAPLACE = "laplace"
    QUARTIC = "quartic"

#: Coverage of the interval every release reports.
CONFIDENCE = Fraction(95, 100)
#: The DP bound U of RS falls below RS with probability at most RS_BOUND_MISS: this is what
#: ``noise_scale_upper`` states (PROOF.md, section 8). The interval does NOT split its 5% by a
#: union bound: its quantile is computed over the public law of U / RS (:func:`interval_quantile`).
# proof: rs-bound-miss
RS_BOUND_MISS = Fraction(1, 100)
#: Share of epsilon spent on the DP bound of RS when the custodian sets none ([release] rs_bound_share).
DEFAULT_RS_BOUND_SHARE = Fraction(1, 10)

#: Upper bounds of the 0.95 quantiles of |X| for the two noise laws (rounded outward).
#: Laplace(1): |X| ~ Exp(1), 0.95 quantile ln(20) = 2.99573227355399...
# proof: q95-laplace
_Q95_LAPLACE = Fraction(2995733, 1000000)
#: Density (sqrt 2 / pi) / (1 + z^4): 0.95 quantile 1.79336157677476...
#: (scipy brentq on the closed-form CDF, see tests/unit/mechanisms/test_smooth.py which re-checks the bounds).
# proof: q95-quartic
_Q95_QUARTIC = Fraction(1793362, 1000000)

_BETA_BITS = 64
#: beta is reported at most (1 - 2^-40) times its exact value, leaving room for a sensitivity
#: implementation that rounds RS up by a relative factor up to 1 + beta * 2^-41 (PROOF.md, section 4).
_BETA_MARGIN = 1 - Fraction(1, 1 << 40)

#: The DP bound of RS works with log2 RS on the grid 2^-_LOG2_BITS (PROOF.md, section 8).
_LOG2_BITS = 10
_LOG2_GRID = Fraction(1, 1 << _LOG2_BITS)
#: RS below 2^-64 is treated as 2^-64 by the bound (clamping keeps the log 1-Lipschitz).
_LOG2_FLOOR_STEPS = -64 << _LOG2_BITS
#: An upper bound of log2(e) = 1/ln 2 = 1.44269504088896340735992468100189214...
#: (re-checked at 100 digits by tests/unit/mechanisms/test_smooth_bound.py).
# proof: log2-e-upper
_LOG2_E_UPPER = Fraction(14426950408889634074, 10**19)
#: Significant decimal digits of the released noise-scale bound (rounded up).
_SCALE_DIGITS = 6

# The arithmetic range of a smooth release, checked before anything is charged
# (:meth:`_SmoothBase.admit`; PROOF.md, section 8, "Range").
#: The smallest beta a smooth release takes: the floor of the residual-sensitivity search
#: (``pimento.sensitivity.envelope.MIN_BETA``, the same number: a sibling layer, so not imported;
#: tests/unit/mechanisms/test_smooth_range.py checks they agree).
MIN_BETA = Fraction(1, 1 << 50)
#: The widest DP bound of RS a release may draw: its Laplace scale b, in bits. Beyond it the
#: interval is astronomically wide anyway, and U, its quantile and the texts would outgrow
#: binary64 and any sensible size (epsilon 1e-5 with share 0.1 needs b = 977).
BOUND_SCALE_MAX = Fraction(128)
#: The most relations a smooth release counts over (the residual sensitivity needs 2^d counts well before).
MAX_RELATIONS = 32
#: log2 of a public upper bound of RS for at most MAX_RELATIONS relations: every relation holds
#: fewer than 2^64 tuples, so T_E < 2^(64 |E|), and the maximiser of the envelope has every s_j
#: <= 1/beta + 1 < 2^51; RS < 2^(d-1) 2^(64 (d-1)) (1 + 1e-55) < 2^2016 (PROOF.md, section 8).
_RS_MAX_BITS = 2048
_RS_CAP = Fraction(1 << _RS_MAX_BITS)


@dataclass(frozen=True)
class Release:
    """What the analyst receives from one release: the noisy value, what is derived from it and public inputs.

    ``noise_scale_upper`` is, for the smooth mechanisms, a differentially private upper bound
    of the noise scale (derived from the DP bound of RS, itself paid from ``epsilon_rs_bound``;
    it is below the true scale with probability at most 1%), and the public ``GS / epsilon``
    for :class:`GlobalLaplace`. Neither the exact RS nor the exact scale is here.
    """

    value: Fraction
    interval: tuple[Fraction, Fraction]
    mechanism: str
    noise: Noise
    epsilon: Fraction
    delta: Fraction
    epsilon_noise: Fraction
    epsilon_rs_bound: Fraction
    beta: Fraction
    grid: Fraction
    noise_scale_upper: Fraction
    interval_basis: str
    confidence: Fraction = CONFIDENCE

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": json_number(self.value),
            "value_exact": format_number(self.value),
            "interval": [json_number(self.interval[0]), json_number(self.interval[1])],
            "interval_exact": [format_number(self.interval[0]), format_number(self.interval[1])],
            "confidence": float(self.confidence),
            "interval_basis": self.interval_basis,
            "noise_scale_upper": display_float(self.noise_scale_upper),
            "noise_scale_upper_exact": format_number(self.noise_scale_upper),
            "mechanism": self.mechanism,
            "noise": self.noise,
            "epsilon": format_number(self.epsilon),
            "delta": format_number(self.delta),
            "epsilon_noise": format_number(self.epsilon_noise),
            "epsilon_rs_bound": format_number(self.epsilon_rs_bound),
            "beta": format_number(self.beta),
            "grid": format_number(self.grid),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Release:
        """Read a stored answer back; only the analyst-facing fields are read, whatever else it holds."""

        def f(x: Any) -> Fraction:
            return _parse_stored(x)

        epsilon = f(data["epsilon"])
        return cls(
            value=f(data["value_exact"]),
            interval=(f(data["interval_exact"][0]), f(data["interval_exact"][1])),
            mechanism=str(data.get("mechanism", "")),
            noise=Noise(data["noise"]),
            epsilon=epsilon,
            delta=f(data["delta"]),
            epsilon_noise=f(data.get("epsilon_noise", data["epsilon"])),
            epsilon_rs_bound=f(data.get("epsilon_rs_bound", "0")),
            beta=f(data["beta"]),
            grid=f(data["grid"]),
            noise_scale_upper=f(data.get("noise_scale_upper_exact", "0")),
            interval_basis=str(data.get("interval_basis", "")),
            confidence=Fraction(str(data.get("confidence", "0.95"))),
        )


@dataclass(frozen=True)
class PrivateDetails:
    """What one release computed from the private data besides the value: for the custodian's audit log only.

    ``rs`` is the exact smooth bound, ``scale`` the exact noise scale, ``rs_upper`` the DP bound
    drawn for the interval (None for GlobalLaplace), ``log2_rs_steps`` the grid point
    ``ceil(log2 RS * 2^10)`` the bound was drawn around.
    """

    rs: Fraction
    scale: Fraction
    rs_upper: Fraction | None
    log2_rs_steps: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rs": format_number(self.rs),
            "scale": format_number(self.scale),
            "rs_upper": format_number(self.rs_upper) if self.rs_upper is not None else None,
            "log2_rs_steps": self.log2_rs_steps,
        }


class Outcome(NamedTuple):
    """A mechanism's output: the analyst's :class:`Release` and the custodian's :class:`PrivateDetails`."""

    release: Release
    private: PrivateDetails


def _parse_stored(x: Any) -> Fraction:
    """A stored exact text (``format_number``'s) read back; through Decimal, which has no digit limit."""
    text = str(x).strip()
    if "/" in text:
        num, den = text.split("/")
        return Fraction(Decimal(num)) / Fraction(Decimal(den))
    return Fraction(Decimal(text))


# proof: exact-sensitivity
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


def rs_bound_share(value: NumberLike | None) -> Fraction:
    """The custodian's share of epsilon for the RS bound, validated: a number strictly between 0 and 1."""
    if value is None:
        return DEFAULT_RS_BOUND_SHARE
    share = parse_number(value, name="[release] rs_bound_share")
    if not 0 < share < 1:
        raise PrivacyParameterError(
            f"[release] rs_bound_share must be strictly between 0 and 1, got {format_number(share)}",
            hint="the custodian sets it in pimento.toml; 0.1 is the default",
        )
    return share


class Mechanism(Protocol):
    noise: Noise
    name: str

    def privacy_cost(self) -> Budget: ...

    def beta(self) -> Fraction: ...

    def beta_float(self) -> float: ...

    def for_relations(self, relations: int) -> Mechanism: ...

    def scale(self, rs: Any) -> Fraction: ...

    def half_width(self, scale: Fraction, quantile: Fraction | None = None) -> Fraction: ...

    def release(self, true_value: int, rs: Any, *, rng: RandomSource | None = None) -> Outcome: ...

    def describe(self) -> dict[str, Any]: ...


class _SmoothBase:
    noise: Noise
    name = ""
    _q95 = Fraction(0)
    #: scale = _factor * S / epsilon_noise.
    _factor = Fraction(0)

    def __init__(self, budget: Budget, *, grid: Fraction = Fraction(1), share: Fraction = DEFAULT_RS_BOUND_SHARE) -> None:
        # proof: smooth-grid
        if grid <= 0 or grid.numerator != 1:
            # 1/grid must be an integer so that every integer count lies on the grid (PROOF.md, section 2).
            raise PrivacyParameterError(f"grid must be 1/k for a positive integer k, got {format_number(Fraction(grid))}")
        self._budget = budget
        self.grid = Fraction(grid)
        # proof: smooth-share
        self.share = rs_bound_share(share)
        self.epsilon_rs_bound = self.share * budget.epsilon
        self.epsilon_noise = budget.epsilon - self.epsilon_rs_bound
        self._admitted = False

    def privacy_cost(self) -> Budget:
        """What one release costs, known before it runs: the whole requested (epsilon, delta).

        A smooth mechanism checks its arithmetic range here (:meth:`admit`): the release protocol
        asks for the cost before it charges, so a parameter it could not complete with is refused
        while nothing is spent.
        """
        self.admit()
        return self._budget

    @property
    def epsilon(self) -> Fraction:
        return self._budget.epsilon

    @property
    def delta(self) -> Fraction:
        return self._budget.delta

    def beta(self) -> Fraction:  # pragma: no cover - abstract
        raise NotImplementedError

    # proof: beta-float
    def beta_float(self) -> float:
        """:meth:`beta` as the largest float not above it (for float-based sensitivity code)."""
        return float_down(self.beta())

    def for_relations(self, relations: int) -> Self | GlobalLaplace:
        """The mechanism for a count over ``relations`` relations (a structural fact, not data).

        A single-relation count has global sensitivity 1: the plain Laplace mechanism at scale
        1/epsilon, pure epsilon-DP, costing (epsilon, 0) whatever delta was offered.
        """
        if relations == 1:
            return GlobalLaplace(Budget.spend(self.epsilon), gs=1, grid=self.grid)
        if relations > MAX_RELATIONS:
            raise UnsupportedQuery(
                "too_many_relations",
                f"a DP count over {relations} relations is beyond the {MAX_RELATIONS} a release supports",
                hint="count over fewer relations",
            )
        return self.admit()

    # proof: smooth-admit
    def admit(self) -> Self:
        """This mechanism, checked to complete every release from public inputs alone (before any charge).

        beta at least MIN_BETA (the residual-sensitivity search's floor) and the DP bound of RS at
        most BOUND_SCALE_MAX bits wide; the interval's quantile is computed here (it depends on
        epsilon, delta and the share only). After this, :meth:`release` cannot fail for any count
        and RS (PROOF.md, section 8, "Range"). Raises PrivacyParameterError, nothing spent.
        """
        if self._admitted:
            return self
        beta = self.beta()
        if beta < MIN_BETA:
            raise PrivacyParameterError(f"beta = {float(beta):.3g} is below 2^-50, the smallest a smooth release supports", hint=self._smallest_epsilon())
        b, _ = self._bound_law()
        if b > BOUND_SCALE_MAX:
            raise PrivacyParameterError(
                f"epsilon {format_number(self.epsilon)} with [release] rs_bound_share {format_number(self.share)} is out of range "
                f"for a count over several relations: the DP bound of RS would be {float(b):.4g} bits wide, at most {BOUND_SCALE_MAX} are supported",
                hint=self._smallest_epsilon(),
            )
        self._q_bound  # noqa: B018 - computed (and cached) now: public, and it must not fail after the charge
        self._admitted = True
        return self

    def _smallest_epsilon(self) -> str:
        """A hint: about the smallest epsilon :meth:`admit` takes at this delta and share, or to raise the share."""
        per_epsilon = self.beta() / self.epsilon  # beta is about proportional to epsilon
        room = self.share * BOUND_SCALE_MAX - per_epsilon * _LOG2_E_UPPER
        if room <= 0:
            return "the custodian's [release] rs_bound_share is too small for any epsilon: 0.1 is the default"
        return f"use an epsilon of at least about {float(_LOG2_GRID / room) * 1.01:.2g}, or a larger [release] rs_bound_share"

    # proof: smooth-scale
    def scale(self, rs: Any) -> Fraction:
        """The exact noise scale for sensitivity ``rs`` (private when rs is: never released)."""
        return self._factor * exact_sensitivity(rs) / self.epsilon_noise

    def _sample(self, scale: Fraction, rng: RandomSource) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    # proof: half-width
    def half_width(self, scale: Fraction, quantile: Fraction | None = None) -> Fraction:
        """K * grid with P(|noise| <= K * grid) >= the quantile's level: K = ceil(q * scale / grid - 1/2)."""
        q = self._q95 if quantile is None else quantile
        k = math.ceil(q * scale / self.grid - Fraction(1, 2))
        return max(0, k) * self.grid

    # proof: bound-law
    def _bound_law(self) -> tuple[Fraction, int]:
        """Public constants of the DP bound of RS: the Laplace scale b (in log2 units) and the shift t' / h.

        b = (beta log2(e) + h) / epsilon_rs_bound; t' = h ceil(t / h) with t = h/2 + b ln(1/(2 RS_BOUND_MISS)).
        """
        h = _LOG2_GRID
        # proof: bound-scale
        b = (self.beta() * _LOG2_E_UPPER + h) / self.epsilon_rs_bound
        # proof: bound-shift
        shift = h / 2 + b * ln_upper(1 / (2 * RS_BOUND_MISS))
        return b, math.ceil(shift / h)

    # proof: rs-upper
    def rs_upper(self, rs: Fraction, rng: RandomSource) -> tuple[Fraction, int]:
        """A DP upper bound U of ``rs`` with P(U < rs) <= RS_BOUND_MISS, and the grid point it was drawn around.

        log2 rs is rounded up to the grid h = 2^-10 (exactly, by integer comparisons), Laplace
        noise of scale b = (beta log2(e) + h) / epsilon_rs_bound is added on the same grid
        (:func:`rounded_laplace`), the result is shifted up by t >= h/2 + b ln(1/(2 RS_BOUND_MISS))
        and U = 2^(that) rounded up. PROOF.md, section 8.

        Range: rs is taken at most 2^_RS_MAX_BITS (above any RS) and the exponent is clamped
        to [2^-64, the public top :meth:`_top_steps`]: raising U is safe, and the top is reached only
        when the Laplace draw lies beyond 40, where the interval's quantile already counts a miss.
        """
        b, shift_steps = self._bound_law()
        # proof: rs-cap
        steps = log2_steps_up(min(rs, _RS_CAP))
        # proof: rs-bound-draw
        m = rounded_laplace(b, _LOG2_GRID, rng)
        # proof: rs-upper-exponent
        k = min(max(steps + m + shift_steps, _LOG2_FLOOR_STEPS), self._top_steps())
        return pow2_steps_upper(k), steps

    # proof: top-steps
    def _top_steps(self) -> int:
        """The public top of U's exponent (grid steps): above log2 of any RS plus t' plus 40 b, plus one step."""
        b, shift_steps = self._bound_law()
        return (_RS_MAX_BITS << _LOG2_BITS) + shift_steps + math.ceil(_Y_SPAN * b / _LOG2_GRID) + 1

    # proof: q-bound
    @property
    def _q_bound(self) -> Fraction:
        """The interval's quantile at ``noise_scale_upper``: public, from (noise law, b, t') only (:func:`interval_quantile`).

        The interval ``value +- half_width(noise_scale_upper, _q_bound)`` covers with probability
        at least CONFIDENCE over both the value's noise and the bound's (PROOF.md, section 8).
        """
        b, shift_steps = self._bound_law()
        return interval_quantile(self.noise, b, shift_steps)

    # proof: smooth-release
    def release(self, true_value: int, rs: Any, *, rng: RandomSource | None = None) -> Outcome:
        """Noisy ``true_value`` calibrated to the smooth bound ``rs`` (computed at :meth:`beta`), with its interval."""
        if isinstance(true_value, bool) or not isinstance(true_value, int):
            raise InternalError(f"release expects an integer count, got {type(true_value).__name__}")
        self.admit()
        rng = rng if rng is not None else default_rng()
        sensitivity = exact_sensitivity(rs)
        scale = self.scale(sensitivity)
        m = self._sample(scale, rng)
        # proof: smooth-value-on-grid
        value = Fraction(true_value + m * self.grid)
        upper, steps = self.rs_upper(sensitivity, rng)
        # proof: noise-scale-upper
        scale_upper = round_up_significant(self._factor * upper / self.epsilon_noise, _SCALE_DIGITS)
        # proof: smooth-interval
        half = self.half_width(scale_upper, self._q_bound)
        release = Release(
            value=value,
            interval=(value - half, value + half),
            mechanism=self.name,
            noise=self.noise,
            epsilon=self.epsilon,
            delta=self.delta,
            epsilon_noise=self.epsilon_noise,
            epsilon_rs_bound=self.epsilon_rs_bound,
            beta=self.beta(),
            grid=self.grid,
            noise_scale_upper=scale_upper,
            interval_basis="dp_rs_upper_bound",
        )
        return Outcome(release, PrivateDetails(sensitivity, scale, upper, steps))

    def describe(self) -> dict[str, Any]:
        return {
            "mechanism": self.name,
            "noise": self.noise,
            "epsilon": format_number(self.epsilon),
            "delta": format_number(self.delta),
            "epsilon_noise": format_number(self.epsilon_noise),
            "epsilon_rs_bound": format_number(self.epsilon_rs_bound),
            "beta": format_number(self.beta()),
            "grid": format_number(self.grid),
        }


# proof: smooth-laplace
class SmoothLaplace(_SmoothBase):
    """(epsilon, delta)-DP: beta = eps_noise / (2 ln(2/delta)), Laplace noise of scale 2 S / eps_noise."""

    noise = Noise.LAPLACE
    name = "smooth_laplace"
    _q95 = _Q95_LAPLACE
    _factor = Fraction(2)

    def __init__(self, budget: Budget, *, grid: Fraction = Fraction(1), share: Fraction = DEFAULT_RS_BOUND_SHARE) -> None:
        budget = budget.as_spend()
        if budget.delta <= 0:
            raise PrivacyParameterError(
                "delta must be in (0, 1) for the Laplace mechanism", hint="omit delta for pure epsilon-DP"
            )
        super().__init__(budget, grid=grid, share=share)
        self._beta = laplace_beta(self.epsilon_noise, budget.delta)

    @classmethod
    def of(cls, epsilon: NumberLike, delta: NumberLike, *, grid: NumberLike = 1, share: NumberLike | None = None) -> SmoothLaplace:
        return cls(Budget.spend(epsilon, delta), grid=parse_number(grid, name="grid"), share=rs_bound_share(share))

    def beta(self) -> Fraction:
        return self._beta

    def _sample(self, scale: Fraction, rng: RandomSource) -> int:
        return rounded_laplace(scale, self.grid, rng)


class SmoothQuartic(_SmoothBase):
    """Pure epsilon-DP: beta = eps_noise / 10, noise (10 S / eps_noise) Z with density of Z proportional to 1/(1+z^4)."""

    noise = Noise.QUARTIC
    name = "smooth_quartic"
    _q95 = _Q95_QUARTIC
    _factor = Fraction(10)

    def __init__(self, budget: Budget, *, grid: Fraction = Fraction(1), share: Fraction = DEFAULT_RS_BOUND_SHARE) -> None:
        budget = budget.as_spend()
        if budget.delta != 0:
            raise InternalError("SmoothQuartic is pure epsilon-DP: its budget must have delta = 0")
        super().__init__(budget, grid=grid, share=share)

    @classmethod
    def of(cls, epsilon: NumberLike, *, grid: NumberLike = 1, share: NumberLike | None = None) -> SmoothQuartic:
        return cls(Budget.spend(epsilon), grid=parse_number(grid, name="grid"), share=rs_bound_share(share))

    def beta(self) -> Fraction:
        return quartic_beta(self.epsilon_noise)

    def _sample(self, scale: Fraction, rng: RandomSource) -> int:
        return rounded_quartic(scale, self.grid, rng)


# proof: global-laplace
class GlobalLaplace(_SmoothBase):
    """Pure epsilon-DP Laplace mechanism calibrated to a known global sensitivity: scale GS / eps.

    Used only when GS is known from the query's structure alone, never from the data: a count
    over a single relation has GS = 1 (adding or removing one tuple changes it by at most 1).
    Then Laplace(GS / eps) is eps-DP (Dwork et al. 2006) and its noise is half that of the
    smooth-sensitivity Laplace mechanism (2 RS / eps with RS = 1) with no delta spent. GS is
    public, so the interval needs no DP bound and the whole epsilon goes to the noise.
    The sensitivity passed to :meth:`release` must be that GS.
    """

    noise = Noise.LAPLACE
    name = "global_laplace"
    _q95 = _Q95_LAPLACE
    _factor = Fraction(1)

    def __init__(self, budget: Budget, *, gs: int = 1, grid: Fraction = Fraction(1)) -> None:
        budget = budget.as_spend()
        if budget.delta != 0:
            raise InternalError("GlobalLaplace is pure epsilon-DP: its budget must have delta = 0")
        if isinstance(gs, bool) or not isinstance(gs, int) or gs <= 0:
            raise InternalError(f"global sensitivity must be a positive integer, got {gs!r}")
        self._budget = budget
        if grid <= 0 or Fraction(grid).numerator != 1:
            raise PrivacyParameterError(f"grid must be 1/k for a positive integer k, got {format_number(Fraction(grid))}")
        self.grid = Fraction(grid)
        self.share = Fraction(0)
        self.epsilon_rs_bound = Fraction(0)
        self.epsilon_noise = budget.epsilon
        self.gs = gs

    @classmethod
    def of(cls, epsilon: NumberLike, *, gs: int = 1, grid: NumberLike = 1) -> GlobalLaplace:
        return cls(Budget.spend(epsilon), gs=gs, grid=parse_number(grid, name="grid"))

    def beta(self) -> Fraction:
        return Fraction(0)

    def for_relations(self, relations: int) -> GlobalLaplace:
        return self

    def admit(self) -> Self:
        """Nothing to check beyond the spend: the scale GS / epsilon is public and at most GS 10^6 (budget.py)."""
        return self

    def scale(self, rs: Any) -> Fraction:
        sensitivity = exact_sensitivity(rs)
        if sensitivity != self.gs:
            raise InternalError(f"GlobalLaplace releases with its GS {self.gs}, not {format_number(sensitivity)}")
        return sensitivity / self.epsilon

    def _sample(self, scale: Fraction, rng: RandomSource) -> int:
        return rounded_laplace(scale, self.grid, rng)

    def release(self, true_value: int, rs: Any, *, rng: RandomSource | None = None) -> Outcome:
        """Noisy ``true_value`` at the public scale GS / epsilon; the interval comes from GS (public)."""
        if isinstance(true_value, bool) or not isinstance(true_value, int):
            raise InternalError(f"release expects an integer count, got {type(true_value).__name__}")
        scale = self.scale(rs)
        m = self._sample(scale, rng if rng is not None else default_rng())
        value = Fraction(true_value + m * self.grid)
        half = self.half_width(scale)
        release = Release(
            value=value,
            interval=(value - half, value + half),
            mechanism=self.name,
            noise=self.noise,
            epsilon=self.epsilon,
            delta=self.delta,
            epsilon_noise=self.epsilon,
            epsilon_rs_bound=Fraction(0),
            beta=Fraction(0),
            grid=self.grid,
            noise_scale_upper=scale,
            interval_basis="global_sensitivity",
        )
        return Outcome(release, PrivateDetails(Fraction(self.gs), scale, None, None))


def mechanism_for_query(
    epsilon: NumberLike, delta: NumberLike | None, *, relations: int, grid: NumberLike = 1, share: NumberLike | None = None
) -> SmoothLaplace | SmoothQuartic | GlobalLaplace:
    """The mechanism for a counting query over ``relations`` relations (see :meth:`_SmoothBase.for_relations`)."""
    return mechanism_for(epsilon, delta, grid=grid, share=share).for_relations(relations)


def mechanism_for(
    epsilon: NumberLike, delta: NumberLike | None = None, *, grid: NumberLike = 1, share: NumberLike | None = None
) -> SmoothLaplace | SmoothQuartic:
    """The (epsilon, delta) Laplace mechanism if delta is given, else the pure-epsilon one.

    ``share`` is the custodian's share of epsilon for the DP bound of RS (default 1/10).
    Parameters are validated here, before anything is read or spent.
    """
    if delta is None:
        return SmoothQuartic.of(epsilon, grid=grid, share=share)
    return SmoothLaplace.of(epsilon, delta, grid=grid, share=share)


# --------------------------------------------------------------------------------------
# beta
# --------------------------------------------------------------------------------------


# proof: laplace-beta
def laplace_beta(epsilon: Fraction, delta: Fraction) -> Fraction:
    """beta for the smooth Laplace mechanism: (1 - 2^-40) epsilon / (2 ln(2/delta)), ln rounded up, beta rounded down."""
    return _round_down(_BETA_MARGIN * epsilon / (2 * ln_upper(2 / delta)))


# proof: quartic-beta
def quartic_beta(epsilon: Fraction) -> Fraction:
    """beta for the smooth quartic mechanism: (1 - 2^-40) epsilon / 10, rounded down."""
    return _round_down(_BETA_MARGIN * epsilon / 10)


# --------------------------------------------------------------------------------------
# The DP bound of RS: exact log2 grid arithmetic
# --------------------------------------------------------------------------------------


# proof: log2-steps-up
def log2_steps_up(x: Fraction) -> int:
    """The smallest integer j with 2^(j / 2^10) >= x (at least the floor -64 * 2^10), exactly.

    ``2^(j/N) >= p/q`` iff ``q^N 2^j >= p^N`` with N = 2^10: integer arithmetic only.
    """
    if x <= 0:
        return _LOG2_FLOOR_STEPS
    n = 1 << _LOG2_BITS
    a, b = x.numerator**n, x.denominator**n  # want the smallest j with b * 2^j >= a

    def fits(j: int) -> bool:
        return (b << j) >= a if j >= 0 else b >= (a << -j)

    j = a.bit_length() - b.bit_length() - 1
    while not fits(j):
        j += 1
    while fits(j - 1):
        j -= 1
    return max(j, _LOG2_FLOOR_STEPS)


# proof: pow2-steps-upper
def pow2_steps_upper(k: int, bits: int = 64) -> Fraction:
    """An upper bound of 2^(k / 2^10) within a relative 2^-(bits - 1): exact integer roots."""
    whole, rest = divmod(k, 1 << _LOG2_BITS)
    target = 1 << (rest + (bits << _LOG2_BITS))  # 2^(rest/N + bits), N-th power
    root = target
    for _ in range(_LOG2_BITS):
        root = math.isqrt(root)  # nested floors of square roots give the floor of the N-th root
    if root ** (1 << _LOG2_BITS) < target:
        root += 1
    return Fraction(root, 1 << bits) * (Fraction(2) ** whole)


# proof: round-up-significant
def round_up_significant(x: Fraction, digits: int) -> Fraction:
    """The smallest number with ``digits`` significant decimal digits that is >= x (x > 0)."""
    if x <= 0:
        return Fraction(0)
    exponent = _decimal_digits(x.numerator) - _decimal_digits(x.denominator)  # within one of floor(log10 x)
    unit = Fraction(10) ** (exponent - digits)
    while x / unit >= 10**digits:
        unit *= 10
    return math.ceil(x / unit) * unit


def _decimal_digits(n: int) -> int:
    """The number of decimal digits of ``n > 0`` (``len(str(n))`` without str's 4300-digit limit)."""
    digits = max(1, n.bit_length() * 30103 // 100000)
    while 10**digits <= n:
        digits += 1
    while digits > 1 and 10 ** (digits - 1) > n:
        digits -= 1
    return digits


# --------------------------------------------------------------------------------------
# The interval's quantile: coverage over the public law of U / RS (PROOF.md, section 8)
# --------------------------------------------------------------------------------------

#: The bound below integrates over Y ~ Laplace(1) on [-_Y_SPAN, _Y_SPAN] cut into steps of _Y_STEP
#: (exact binary fractions); each step carries at most _Y_STEP / 2 of Y's mass, which bounds
#: what the step function gives away against the exact integral.
_Y_SPAN = 40
_Y_STEP = 2.0**-10
#: Absolute allowance for floating-point error in the computed miss bound (the error is below
#: 1e-13, PROOF.md section 8), and the exponent (bits) taken off before evaluating the tail.
# proof: float-allowance
_FLOAT_ALLOWANCE = 1e-9
_EXPONENT_MARGIN_BITS = 2.0**-20
#: Significant decimal digits of the interval's quantile (rounded up).
_Q_DIGITS = 6


def _abs_tail(noise: Noise, x: Any) -> Any:
    """P(|X| > x) for x >= 0 (numpy array), X the unit noise law: exp(-x) for Laplace(1), closed form for 1/(1+z^4).

    The quartic CDF: P(|Z| <= x) = ln((x^2 + sqrt2 x + 1)/(x^2 - sqrt2 x + 1)) / (2 pi)
    + (atan(sqrt2 x + 1) + atan(sqrt2 x - 1)) / pi (0 at x = 0, 1 at infinity).
    """
    if noise == Noise.LAPLACE:
        return np.exp(-x)
    if noise != Noise.QUARTIC:
        raise InternalError(f"no tail for noise law {noise!r}")
    r2 = math.sqrt(2)
    # proof: quartic-cdf
    cdf = np.log((x * x + r2 * x + 1) / (x * x - r2 * x + 1)) / (2 * math.pi) + (np.arctan(r2 * x + 1) + np.arctan(r2 * x - 1)) / math.pi
    # proof: tail-clip
    return np.clip(1 - cdf, 0.0, 1.0)


# proof: laplace-steps
@functools.lru_cache(maxsize=64)
def _laplace_steps() -> tuple[Any, Any, float]:
    """Left ends y_i of the steps of [-_Y_SPAN, _Y_SPAN], P(Y in [y_i, y_i + _Y_STEP)), and P(|Y| >= _Y_SPAN), Y ~ Laplace(1)."""
    count = int(2 * _Y_SPAN / _Y_STEP)
    left = -_Y_SPAN + _Y_STEP * np.arange(count, dtype=np.float64)  # exact: multiples of 2^-10 below 2^6
    # proof: laplace-step-masses
    mass = np.where(left < 0, 0.5 * np.exp(left) * math.expm1(_Y_STEP), -0.5 * np.exp(-left) * math.expm1(-_Y_STEP))
    return left, mass, math.exp(-_Y_SPAN)


def _miss_terms(noise: Noise, b: float, shift_bits: float, log2_q: float) -> Any:
    """mass_i * P(|X| > 2^(e_i)) with e_i = log2 q + shift_bits + b y_i minus a margin, capped at 500 bits."""
    left, mass, _ = _laplace_steps()
    # proof: miss-exponent
    exponent = log2_q + shift_bits + b * left - (_EXPONENT_MARGIN_BITS + b * 2.0**-40)
    # proof: miss-exponent-cap
    return mass * _abs_tail(noise, np.exp2(np.minimum(exponent, 500.0)))


# proof: interval-miss-upper
def interval_miss_upper(noise: Noise, b: Fraction, shift_steps: int, q: Fraction) -> float:
    """An upper bound (before the float allowance) of the interval's miss probability at quantile ``q``.

    The miss probability is at most E[P(|X| > q 2^(t' - h/2 + b Y))], Y ~ Laplace(1), with
    t' = shift_steps h (PROOF.md, section 8); the integrand decreases in Y, so on each step it is
    at most its value at the step's left end: the sum of those times the steps' masses, plus the
    mass beyond +-_Y_SPAN counted as misses.
    """
    if q <= 0:
        return 1.0
    _, _, tails = _laplace_steps()
    log2_q = math.log2(q.numerator) - math.log2(q.denominator)
    terms = _miss_terms(noise, float(b), (shift_steps - 0.5) * float(_LOG2_GRID), log2_q)
    # proof: miss-fsum
    return math.fsum(terms.tolist()) + tails


# proof: interval-quantile
@functools.lru_cache(maxsize=256)
def interval_quantile(noise: Noise, b: Fraction, shift_steps: int) -> Fraction:
    """The smallest q (6 significant digits, rounded up) whose interval misses with probability at most 1 - CONFIDENCE.

    Public: a function of the noise law and of the bound's public constants b and t' only. The
    search is a bisection on log2 q with the pairwise float sum; the result is then re-checked
    with :func:`interval_miss_upper` (exactly rounded sum) plus the float allowance.
    """
    target = float(1 - CONFIDENCE)
    _, _, tails = _laplace_steps()
    shift_bits = (shift_steps - 0.5) * float(_LOG2_GRID)

    def misses(log2_q: float) -> float:
        return float(_miss_terms(noise, float(b), shift_bits, log2_q).sum()) + tails

    lo, hi = -16.0, 16.0  # bracket log2 q: misses(lo) above the target, misses(hi) at most it
    while misses(hi) > target - 2 * _FLOAT_ALLOWANCE:
        lo, hi = hi, 2 * hi
        if hi > 1 << 20:
            raise InternalError(f"no interval quantile found for noise={noise}, b={b}")  # pragma: no cover
    while misses(lo) <= target - 2 * _FLOAT_ALLOWANCE:
        lo, hi = 2 * lo, lo
        if lo < -(1 << 20):
            raise InternalError(f"no interval quantile found for noise={noise}, b={b}")  # pragma: no cover
    # proof: quantile-bisection
    while hi - lo > 2.0**-24:  # log2 q to 6e-8 bits, below the 6-digit rounding of q
        mid = (lo + hi) / 2
        if misses(mid) > target - 2 * _FLOAT_ALLOWANCE:
            lo = mid
        else:
            hi = mid
    # proof: quantile-round-up
    q = round_up_significant(Fraction(2.0**hi), _Q_DIGITS)
    # proof: quantile-recheck
    if interval_miss_upper(noise, b, shift_steps, q) + _FLOAT_ALLOWANCE > target:
        raise InternalError(f"interval quantile {q} failed its check for noise={noise}, b={b}")  # pragma: no cover
    return q


# --------------------------------------------------------------------------------------
# Exact rounding helpers
# --------------------------------------------------------------------------------------


# proof: float-down
def float_down(x: Fraction) -> float:
    """The largest float that is <= x (x >= 0)."""
    f = float(x)
    if Fraction(f) > x:
        f = math.nextafter(f, 0.0)
    return f


# proof: beta-round-down
def _round_down(x: Fraction, bits: int = _BETA_BITS) -> Fraction:
    """Largest multiple of 2^-bits not above x (or x itself when that would be 0)."""
    down = Fraction(math.floor(x * (1 << bits)), 1 << bits)
    return down if down > 0 else x


# proof: ln-upper
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


# proof: exp-lower
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
