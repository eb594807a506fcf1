"""A count under the person unit by truncation at one public threshold.

The simpler alternative to R2T (:mod:`pimento.mechanisms.r2t`): cut each person's contribution at
one threshold tau and add Laplace noise of scale s / eps, s the truncated count's sensitivity
(tau in the one-person class; tau + 1 for the certified LP value when a result references several
persons; PROOF.md section 12). The whole epsilon goes to the noise, because tau is *public*:

* chosen by :func:`choose_threshold` from contributions measured on the SYNTHETIC copy (the copy
  is public: its own budget was spent when it was made), as the tau minimising the predicted
  error there; or
* declared by the custodian.

Tumult Analytics and Google's DP libraries bound contributions the same way (a declared bound, or
one chosen by a DP quantile of the data, which spends part of the budget; not implemented here:
the synthetic copy gives the threshold for free). Privacy does not depend on how well tau fits the
private data; utility does (the bias is sum_p max(0, c_p - tau) on the private data).

    >>> plan = truncation_plan(Fraction(1, 2), 8)
    >>> plan.scale
    Fraction(16, 1)
    >>> choose_threshold(lambda t: truncated_count((1, 1, 2, 1, 30), 0, t), 35, Fraction(1), gs=64)
    14
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from pimento.errors import InternalError, PrivacyParameterError
from pimento.mechanisms.r2t import MAX_GS, truncated_count
from pimento.mechanisms.samplers import RandomSource, default_rng, rounded_laplace

__all__ = ["TruncationPlan", "choose_threshold", "truncation_plan", "truncation_predicted_error", "truncation_release"]

#: Most thresholds :func:`choose_threshold` tries one by one; above it, powers of two only.
MAX_CANDIDATES = 4096


@dataclass(frozen=True)
class TruncationPlan:
    """The public plan: epsilon, the threshold, and the noise scale s / eps (s = tau, or tau + 1 for the LP)."""

    epsilon: Fraction
    tau: int
    lp: bool

    @property
    def sensitivity(self) -> int:
        return self.tau + 1 if self.lp else self.tau

    @property
    def scale(self) -> Fraction:
        return self.sensitivity / self.epsilon


# proof: truncation-plan
def truncation_plan(epsilon: Fraction, tau: int, *, lp: bool = False) -> TruncationPlan:
    """The plan of one release; refuses epsilon <= 0 and a threshold that is not an integer in [1, 2^40]."""
    epsilon = Fraction(epsilon)
    if epsilon <= 0:
        raise PrivacyParameterError(f"epsilon must be > 0, got {epsilon}")
    if isinstance(tau, bool) or not isinstance(tau, int) or not 1 <= tau <= MAX_GS:
        raise PrivacyParameterError(f"the truncation threshold must be an integer in [1, 2^40], got {tau!r}")
    return TruncationPlan(epsilon, tau, lp)


# proof: truncation-release
def truncation_release(plan: TruncationPlan, truncated: int, *, rng: RandomSource | None = None) -> int:
    """Q(I, tau) + round(scale L): one exact rounded Laplace draw from the OS CSPRNG (tests may fix it)."""
    rng = rng if rng is not None else default_rng()
    return truncated + rounded_laplace(plan.scale, Fraction(1), rng)


def truncation_predicted_error(plan: TruncationPlan, truncated: int, true_count: int) -> float:
    """E|release - Q| = B + b e^{-B/b} for the bias B = Q - Q(tau) >= 0 and the scale b (continuous noise).

    From the synthetic copy's contributions this is the prediction the release compares with the
    other mechanisms' (floats: a prediction, not privacy arithmetic).
    """
    bias = true_count - truncated
    if bias < 0:
        raise InternalError(f"a truncated count {truncated} above the count {true_count}")
    b = float(plan.scale)
    return bias + b * math.exp(-bias / b)


def choose_threshold(truncated_at: Callable[[int], int], true_count: int, epsilon: Fraction, *, gs: int, lp: bool = False) -> int:
    """The tau in [1, GS] with the least :func:`truncation_predicted_error` (the smallest on ties).

    ``truncated_at(tau)`` gives Q(tau) on the SYNTHETIC copy (e.g. :func:`~pimento.mechanisms.r2t.truncated_count`
    of its contributions); every threshold is tried up to :data:`MAX_CANDIDATES`, then powers of two.
    Public inputs only: the result may be used as the release's threshold at no privacy cost.
    """
    top = min(gs, MAX_CANDIDATES)
    candidates = list(range(1, top + 1)) + [1 << j for j in range(top.bit_length(), gs.bit_length()) if (1 << j) <= gs]
    if gs not in candidates:
        candidates.append(gs)
    best, best_error = 1, math.inf
    for tau in candidates:
        value = truncated_at(tau)
        error = truncation_predicted_error(truncation_plan(epsilon, tau, lp=lp), value, true_count)
        if error < best_error:
            best, best_error = tau, error
        if value >= true_count:  # no bias left: a larger tau only adds noise
            break
    return best
