"""zCDP accounting for the synthesizer: one (epsilon, delta) converted once to rho, then split.

The conversion uses the standard bound of Bun & Steinke (2016, Prop. 1.3): a mechanism that is
rho-zCDP is (rho + 2 sqrt(rho ln(1/delta)), delta)-DP for every delta > 0. Inverting it,
``rho = (sqrt(ln(1/delta) + eps) - sqrt(ln(1/delta)))**2``; we round rho DOWN and check the
forward bound again (``_eps_of``) so that floating-point error can only make the spend smaller.

Part of delta (``SELECTION_DELTA_SHARE``) pays for the data-dependent choice of category
values (stability-based partition selection, see PRIVACY.md); the rest pays for the conversion.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from pimento.errors import InternalError, PrivacyParameterError
from pimento.mechanisms.budget import parse_number

__all__ = ["Accountant", "rho_from_eps_delta", "eps_from_rho"]

#: Share of delta_syn spent on partition selection (the rest converts zCDP to (eps, delta)).
SELECTION_DELTA_SHARE = Fraction(1, 2)

#: Budget shares inside a component (of its rho): fan-out caps, category selection, ties.
SHARE_CAPS, SHARE_SELECT, SHARE_TIES = 0.05, 0.25, 0.05
#: Share for the column-type tests (taken from the models' share, only in components with a
#: tested column: TEXT columns, and DATE/TIMESTAMP columns of engines that do not enforce types).
SHARE_TYPES = 0.05
#: Share for link in-degrees (taken from the models' share, only in components that own links
#: to private tables).
SHARE_LINKS = 0.08


def eps_from_rho(rho: float, delta: float) -> float:
    """Epsilon implied by rho-zCDP at ``delta`` (Bun & Steinke Prop. 1.3), rounded up slightly."""
    value = rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))
    return math.nextafter(value, math.inf)


def rho_from_eps_delta(epsilon: Fraction, delta: Fraction) -> float:
    """The largest rho (rounded down) with ``eps_from_rho(rho, delta) <= epsilon``."""
    eps = float(epsilon)
    dlt = float(delta)
    log_term = math.log(1.0 / dlt)
    rho = (math.sqrt(log_term + eps) - math.sqrt(log_term)) ** 2
    rho *= 1.0 - 1e-9
    while eps_from_rho(rho, dlt) > float(epsilon) or Fraction(eps_from_rho(rho, dlt)) > epsilon:
        rho *= 1.0 - 1e-6
    if not rho > 0:
        raise PrivacyParameterError(f"epsilon {float(epsilon)} is too small to synthesize anything at delta {dlt}")
    return rho


def check_budget(epsilon: object, delta: object) -> tuple[Fraction, Fraction]:
    """Validate a synthesis budget: 0 < epsilon (finite) and 0 < delta < 1; exact Fractions back."""
    # parse_number bounds the text (digits, exponent, denominator) before converting it, so an
    # absurd value such as "1e9999999" is refused at once instead of costing seconds of CPU.
    try:
        eps = parse_number(epsilon, name="epsilon")  # type: ignore[arg-type]
        dlt = parse_number(delta, name="delta")  # type: ignore[arg-type]
    except PrivacyParameterError as exc:
        raise PrivacyParameterError(exc.message, hint="pass numbers such as --epsilon 1.6 --delta 1e-6") from None
    if eps <= 0:
        raise PrivacyParameterError(f"epsilon must be > 0, got {epsilon}", hint="e.g. --epsilon 1.6")
    if eps > 100:
        raise PrivacyParameterError(f"epsilon {epsilon} is not a meaningful privacy budget", hint="use epsilon <= 100")
    if not 0 < dlt < 1:
        raise PrivacyParameterError(
            f"delta must be strictly between 0 and 1, got {delta}", hint="the synthesizer needs delta > 0, e.g. --delta 1e-6"
        )
    if dlt > Fraction(1, 1000):
        raise PrivacyParameterError(f"delta {delta} is too large to protect anyone", hint="use delta <= 1e-3, e.g. 1e-6")
    return eps, dlt


@dataclass
class Accountant:
    """Hands out rho and delta to the steps of one synthesis and refuses to overspend.

    Noise comes from a generator seeded by the operating system (``secrets``), never from the
    user's ``--seed``: the seed only drives sampling, which is post-processing.
    """

    epsilon: Fraction
    delta: Fraction
    rho_total: float = 0.0
    delta_selection: float = 0.0
    delta_conversion: float = 0.0
    rho_spent: float = 0.0
    delta_spent: float = 0.0
    log: list[tuple[str, float, float]] = field(default_factory=list)
    noise_seed: int | None = None
    #: Privacy components are disjoint in the data they read (parallel composition, PRIVACY.md):
    #: each scope may spend the whole budget; ``rho_spent`` is the largest scope's spend.
    scope: str = ""
    by_scope: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.delta_selection = float(self.delta * SELECTION_DELTA_SHARE)
        # The conversion delta is what is left, rounded down.
        self.delta_conversion = math.nextafter(float(self.delta) - self.delta_selection, 0.0)
        self.rho_total = rho_from_eps_delta(self.epsilon, Fraction(self.delta_conversion))
        seed = self.noise_seed if self.noise_seed is not None else secrets.randbits(128)
        self._rng = np.random.default_rng(seed)

    def spend(self, what: str, rho: float, delta: float = 0.0) -> None:
        if rho < 0 or delta < 0:
            raise InternalError(f"negative spend for {what}")
        spent = self.by_scope.setdefault(self.scope, [0.0, 0.0])
        if spent[0] + rho > self.rho_total * (1 + 1e-12) or spent[1] + delta > self.delta_selection * (1 + 1e-12):
            raise InternalError(f"synthesis overspent its budget at {what}")
        spent[0] += rho
        spent[1] += delta
        self.rho_spent = max(v[0] for v in self.by_scope.values())
        self.delta_spent = max(v[1] for v in self.by_scope.values())
        self.log.append((f"[{self.scope}] {what}", rho, delta))

    def gaussian(self, values: np.ndarray, *, sensitivity: float, rho: float, what: str) -> np.ndarray:
        """``values`` plus N(0, sigma^2) noise with sigma = sensitivity / sqrt(2 rho) (costs rho)."""
        self.spend(what, rho)
        sigma = sensitivity / math.sqrt(2.0 * rho)
        return np.asarray(values, dtype=float) + self._rng.normal(0.0, sigma, size=np.shape(values))

    def sigma(self, *, sensitivity: float, rho: float) -> float:
        return sensitivity / math.sqrt(2.0 * rho)

    def normal(self, size: int | tuple[int, ...], sigma: float) -> np.ndarray:
        """Raw noise for mechanisms that account for themselves (call :meth:`spend`)."""
        return self._rng.normal(0.0, sigma, size=size)

    def gumbel(self, size: int) -> np.ndarray:
        return self._rng.gumbel(size=size)

    def summary(self) -> dict[str, object]:
        return {
            "epsilon": str(self.epsilon),
            "delta": str(self.delta),
            "rho_total": self.rho_total,
            "rho_spent": self.rho_spent,
            "delta_selection": self.delta_selection,
            "delta_conversion": self.delta_conversion,
            "epsilon_implied_by_rho_spent": eps_from_rho(self.rho_spent, self.delta_conversion) if self.rho_spent > 0 else 0.0,
        }
