"""R2T: a count released under the person unit, by truncation at several thresholds.

Dong, Fang, Yi, Tao, Machanavajjhala, "R2T: Instance-optimal truncation for differentially private
query evaluation with foreign key constraints" (SIGMOD 2022). Under ``[privacy] unit = "Patient"``
one person may contribute c_p join results to a count (``sensitivity/person.py`` computes them);
``GS`` is a public bound of c_p used only to choose how many thresholds to try (privacy holds
whatever the data, utility needs c_p <= GS). With n thresholds tau_1 < ... < tau_n
(:func:`thresholds`: 2, 4, ..., capped at GS, so tau_n = GS), R2T releases

    max_j ( Q(I, tau_j) + Lap(n s_j / eps) - ceil(n ln(n / beta) s_j / eps) )

where Q(I, tau) is the count truncated at tau and s_j its sensitivity:

* one-person class (every result references at most one person): Q(I, tau) = public +
  sum_p min(c_p, tau), exact integers, s_j = tau_j;
* several persons per result: Q(I, tau) is the value of R2T's linear program (max sum_k u_k,
  0 <= u_k <= 1, sum_{k owned by p} u_k <= tau), solved in floating point by HiGHS and *certified*
  by a primal and a dual solution checked in exact arithmetic; its rounding moves by at most
  tau + 1 between neighbours, so s_j = tau_j + 1 (PROOF.md section 12.3).

Each threshold spends eps / n (sequential composition); the max and the shift are post-processing.
With one threshold nothing is maximised and no shift is subtracted (the plain Laplace mechanism,
unbiased: COUNT(DISTINCT person) has GS = 1). The noise is the project's exact rounded Laplace
(``samplers.py``) from the OS CSPRNG. With probability at least 1 - beta the release lies in
[Q(I) - 2 ceil(n ln(n/beta) s_{j*} / eps), Q(I)] where tau_{j*} is the first threshold at or above
max_p c_p (:func:`error_bound`); :func:`predicted_error` gives its expected absolute error from
contributions measured on the synthetic copy, for comparison with another mechanism's.

    >>> plan = r2t_plan(Fraction(1), 1)
    >>> plan.thresholds, plan.scales, plan.shifts
    ((1,), (Fraction(1, 1),), (0,))
    >>> r2t_plan(Fraction(1), 20).thresholds
    (2, 4, 8, 16, 20)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from pimento.errors import InternalError, PrivacyParameterError
from pimento.mechanisms.samplers import RandomSource, default_rng, rounded_laplace
from pimento.mechanisms.smooth import ln_upper

__all__ = [
    "DEFAULT_BETA",
    "R2TPlan",
    "certified_lp_count",
    "error_bound",
    "predicted_error",
    "r2t_plan",
    "r2t_release",
    "thresholds",
    "truncated_count",
]

#: Default probability that the release overshoots its utility bound (a utility parameter, not a privacy one).
DEFAULT_BETA = Fraction(1, 10)
#: Largest GS accepted: 2^40 thresholds' worth is more than any count a database holds.
MAX_GS = 1 << 40


# proof: r2t-thresholds
def thresholds(gs: int) -> tuple[int, ...]:
    """tau_j = min(2^j, GS) for j = 1..ceil(log2 GS) (the single threshold 1 when GS = 1)."""
    if isinstance(gs, bool) or not isinstance(gs, int) or not 1 <= gs <= MAX_GS:
        raise PrivacyParameterError(
            f"the bound of one person's contribution must be an integer in [1, 2^40], got {gs!r}",
            hint="set [privacy] max_contribution in pimento.toml",
        )
    if gs == 1:
        return (1,)
    n = (gs - 1).bit_length()  # ceil(log2 gs)
    return tuple(min(1 << j, gs) for j in range(1, n + 1))


@dataclass(frozen=True)
class R2TPlan:
    """Everything R2T needs that is public, decided before the charge: epsilon, GS, beta, the class.

    ``sensitivities`` are the s_j (tau_j, or tau_j + 1 for the LP), ``scales`` the Laplace scales
    n s_j / eps of each threshold (eps / n each), ``shifts`` the integers subtracted
    (ceil(n ln(n/beta) s_j / eps), ln rounded up; 0 with one threshold).
    """

    epsilon: Fraction
    gs: int
    beta: Fraction
    lp: bool
    thresholds: tuple[int, ...]
    sensitivities: tuple[int, ...]
    scales: tuple[Fraction, ...]
    shifts: tuple[int, ...]

    @property
    def epsilon_per_threshold(self) -> Fraction:
        return self.epsilon / len(self.thresholds)


# proof: r2t-plan
def r2t_plan(epsilon: Fraction, gs: int, *, beta: Fraction = DEFAULT_BETA, lp: bool = False) -> R2TPlan:
    """The public plan of one release: thresholds, their budget share, noise scales and shifts.

    Raises:
        PrivacyParameterError: epsilon <= 0, beta outside (0, 1), GS not an integer in [1, 2^40].
    """
    epsilon, beta = Fraction(epsilon), Fraction(beta)
    if epsilon <= 0:
        raise PrivacyParameterError(f"epsilon must be > 0, got {epsilon}")
    if not 0 < beta < 1:
        raise PrivacyParameterError(f"R2T's beta must lie in (0, 1), got {beta}")
    taus = thresholds(gs)
    n = len(taus)
    sens = tuple(t + 1 if lp else t for t in taus)
    scales = tuple(n * s / epsilon for s in sens)
    if n == 1:
        shifts: tuple[int, ...] = (0,)
    else:
        log_term = ln_upper(Fraction(n) / beta)
        shifts = tuple(math.ceil(n * log_term * s / epsilon) for s in sens)
    return R2TPlan(epsilon, gs, beta, lp, taus, sens, scales, shifts)


# proof: r2t-truncated
def truncated_count(counts: Sequence[int], public: int, tau: int) -> int:
    """Q(I, tau) in the one-person class: the results of nobody plus each person's, cut at tau."""
    if tau < 1 or public < 0 or any(c < 0 for c in counts):
        raise InternalError(f"truncated_count: tau={tau}, public={public}, negative contributions")
    return public + sum(min(c, tau) for c in counts)


# proof: r2t-lp
def certified_lp_count(owner_sets: Sequence[Sequence[int]], public: int, tau: int) -> int:
    """Q(I, tau) with several persons per result: the LP's value, rounded to an integer within 1 of it.

    ``owner_sets`` lists, for each result that references someone, the persons (numbered from 0)
    it references. The LP (max sum u_k, 0 <= u <= 1, each person's load <= tau) is solved by HiGHS;
    a primal solution made exactly feasible gives lo <= LP, a dual solution made exactly feasible
    gives hi >= LP (both in Fractions). The value returned is round(lo); hi - lo < 1/2 is checked,
    so it lies within 1 of the LP's value. A wider gap (a solver failure) raises InternalError,
    which halts the deployment after a charge (PROOF.md section 9).
    """
    from scipy.optimize import linprog
    from scipy.sparse import csr_matrix

    if tau < 1 or public < 0:
        raise InternalError(f"certified_lp_count: tau={tau}, public={public}")
    k = len(owner_sets)
    if k == 0:
        return public
    sets = [sorted(set(s)) for s in owner_sets]
    if any(not s or s[0] < 0 for s in sets):
        raise InternalError("certified_lp_count: each owned result names its persons, numbered from 0")
    persons = 1 + max(p for s in sets for p in s)
    rows = [p for s in sets for p in s]
    cols = [i for i, s in enumerate(sets) for _ in s]
    a = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(persons, k))
    res = linprog(-np.ones(k), A_ub=a, b_ub=np.full(persons, float(tau)), bounds=(0, 1), method="highs")
    if res.status != 0:
        raise InternalError(f"the truncation LP did not solve: {res.message}")
    lo = _primal_lower(sets, persons, res.x, tau)
    hi = _dual_upper(sets, persons, -res.ineqlin.marginals, tau)
    if not lo <= hi or hi - lo >= Fraction(1, 2):
        raise InternalError(f"the truncation LP's certificate is too loose: [{float(lo)}, {float(hi)}]")
    return public + math.floor(lo + Fraction(1, 2))


_GRID = 1 << 30  # the solutions are read on a dyadic grid, so the exact checks are integer sums


def _primal_lower(sets: list[list[int]], persons: int, x: np.ndarray, tau: int) -> Fraction:
    """A feasible u (x clipped to [0, 1] on the grid, each person's results scaled down to load tau) and its value."""
    u = [min(max(int(math.floor(float(v) * _GRID)), 0), _GRID) for v in x]
    load = [0] * persons
    for uk, s in zip(u, sets, strict=True):
        for p in s:
            load[p] += uk
    cap = tau * _GRID
    total = Fraction(0)
    for uk, s in zip(u, sets, strict=True):
        worst = max(load[p] for p in s)
        total += Fraction(uk, _GRID) if worst <= cap else Fraction(uk * cap, worst * _GRID)
    return total


def _dual_upper(sets: list[list[int]], persons: int, y: np.ndarray, tau: int) -> Fraction:
    """tau sum y_p + sum_k max(0, 1 - sum_{p in k} y_p) for y >= 0: a feasible dual's value, >= the LP's."""
    yy = [max(int(math.ceil(float(v) * _GRID)), 0) for v in y]
    total = tau * sum(yy)
    for s in sets:
        total += max(0, _GRID - sum(yy[p] for p in s))
    return Fraction(total, _GRID)


# proof: r2t-release
def r2t_release(plan: R2TPlan, truncated: Sequence[int], *, rng: RandomSource | None = None) -> int:
    """The released count: max_j (Q(I, tau_j) + m_j - shift_j), m_j the rounded Laplace draw of scale n s_j / eps.

    ``truncated`` holds Q(I, tau_j) for the plan's thresholds, in order (:func:`truncated_count`
    or :func:`certified_lp_count`). One draw per threshold, in threshold order, from the OS CSPRNG
    unless a test fixes the source. The value is an integer; it may be negative (clamping is the
    release layer's post-processing).
    """
    if len(truncated) != len(plan.thresholds):
        raise InternalError(f"r2t_release: {len(truncated)} truncated counts for {len(plan.thresholds)} thresholds")
    rng = rng if rng is not None else default_rng()
    values = [q + rounded_laplace(scale, Fraction(1), rng) - shift for q, scale, shift in zip(truncated, plan.scales, plan.shifts, strict=True)]
    return max(values)


# proof: r2t-utility
def error_bound(plan: R2TPlan, largest: int) -> int:
    """With probability >= 1 - beta, Q(I) - bound <= release <= Q(I) when max_p c_p = ``largest`` <= GS.

    bound = 2 shift_{j*} for the first threshold tau_{j*} >= largest (one threshold: the Laplace
    quantile ceil(scale ln(1/beta)), two-sided). The LP's rounding adds nothing: at tau >= largest
    its value is the integer count of owned results, which the certified rounding returns exactly.
    """
    j = next((i for i, t in enumerate(plan.thresholds) if t >= max(largest, 1)), None)
    if j is None:
        raise InternalError(f"error_bound: a contribution {largest} above GS = {plan.gs}: the bound does not apply")
    if len(plan.thresholds) == 1:
        return math.ceil(plan.scales[0] * ln_upper(1 / plan.beta))
    return 2 * plan.shifts[j]


def predicted_error(plan: R2TPlan, truncated: Sequence[int], true_count: int, *, points: int = 20_001) -> float:
    """E|release - Q(I)| for the given Q(I, tau_j) and Q(I): truncation bias and noise together.

    Meant for contributions measured on the SYNTHETIC copy (a prediction, never from private data):
    the release's law is the max of independent shifted Laplace variables, whose CDF is the product
    of theirs; the expectation is integrated numerically (the rounding of the noise to integers is
    ignored: it changes the answer by less than 1/2). Floats: a prediction, not privacy arithmetic.
    """
    if len(truncated) != len(plan.thresholds):
        raise InternalError("predicted_error: one truncated count per threshold")
    centres = np.array([float(q - s) for q, s in zip(truncated, plan.shifts, strict=True)])
    scales = np.array([float(b) for b in plan.scales])
    q = float(true_count)
    reach = float(np.max(np.abs(centres - q) + 40 * scales))
    x = np.linspace(q - reach, q + reach, points)
    z = (x[:, None] - centres[None, :]) / scales[None, :]
    cdf_each = np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0)), 1 - 0.5 * np.exp(-np.maximum(z, 0)))
    cdf = np.prod(cdf_each, axis=1)
    below = np.where(x <= q, cdf, 0.0)
    above = np.where(x >= q, 1 - cdf, 0.0)
    return float(np.trapezoid(below + above, x))
