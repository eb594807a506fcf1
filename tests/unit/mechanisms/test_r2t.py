"""R2T under the person unit (PROOF.md section 12): the plan's arithmetic, the release's law, the
predicted error and the utility bound."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from pimento.errors import InternalError, PrivacyParameterError
from pimento.mechanisms.r2t import (
    certified_lp_count,
    error_bound,
    predicted_error,
    r2t_plan,
    r2t_release,
    thresholds,
    truncated_count,
)
from pimento.mechanisms.samplers import fixed_noise_for_tests


def test_thresholds_double_up_to_gs_and_the_budget_is_split_evenly():
    assert thresholds(1) == (1,) and thresholds(2) == (2,) and thresholds(3) == (2, 3)
    assert thresholds(1024) == tuple(2**j for j in range(1, 11))
    plan = r2t_plan(Fraction(1, 2), 20, beta=Fraction(1, 20))
    n = len(plan.thresholds)
    assert n * plan.epsilon_per_threshold == plan.epsilon == Fraction(1, 2)
    assert plan.scales == tuple(t / plan.epsilon_per_threshold for t in plan.thresholds)
    # shift_j >= n ln(n/beta) tau_j / eps, and not much more (ln rounded up, then ceil)
    for t, shift in zip(plan.thresholds, plan.shifts, strict=True):
        exact = n * math.log(n / 0.05) * t / 0.5
        assert exact <= shift < exact + 1
    lp = r2t_plan(Fraction(1), 8, lp=True)
    assert lp.sensitivities == (3, 5, 9) and lp.scales == (9, 15, 27)


@pytest.mark.parametrize("bad", [0, -1, True, 2**41, 1.5])
def test_gs_must_be_a_positive_integer(bad):
    with pytest.raises(PrivacyParameterError, match="one person.s contribution"):
        r2t_plan(Fraction(1), bad)


def test_epsilon_and_beta_are_checked():
    with pytest.raises(PrivacyParameterError):
        r2t_plan(Fraction(0), 4)
    with pytest.raises(PrivacyParameterError):
        r2t_plan(Fraction(1), 4, beta=Fraction(1))
    with pytest.raises(InternalError):
        r2t_release(r2t_plan(Fraction(1), 4), [1])


def _release_cdf(plan, truncated, x, *, scale_factor=1.0):
    """P(release <= x) exactly: the max of independent Q_j - shift_j + round(b_j L_j)."""
    out = np.ones_like(x, dtype=float)
    for q, b, s in zip(truncated, plan.scales, plan.shifts, strict=True):
        k = x - q + s  # m_j <= k  iff  b L < k + 1/2
        z = (k + 0.5) / (float(b) * scale_factor)
        out *= np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0)), 1 - 0.5 * np.exp(-np.maximum(z, 0)))
    return out


def _chi_square_pvalue(draws, cdf):
    """Chi-square of the draws against a CDF over integers, in 20 bins of about equal mass."""
    lo, hi = int(draws.min()) - 1, int(draws.max()) + 1
    xs = np.arange(lo, hi + 1)
    c = cdf(xs)
    edges = [lo - 10**9]
    for level in np.linspace(0.05, 0.95, 19):
        edges.append(int(xs[np.searchsorted(c, level)]))
    edges = sorted(set(edges)) + [hi + 10**9]
    observed = np.array([np.sum((draws > a) & (draws <= b)) for a, b in zip(edges[:-1], edges[1:], strict=True)])
    probs = np.array([cdf(np.array([min(b, hi)]))[0] - (cdf(np.array([a]))[0] if a >= lo else 0.0) for a, b in zip(edges[:-1], edges[1:], strict=True)])
    probs = probs / probs.sum()
    return stats.chisquare(observed, probs * len(draws)).pvalue


@pytest.mark.parametrize(("gs", "truncated"), [(8, (50, 70, 80)), (1, (300,))])
def test_the_release_has_the_stated_law_and_a_scale_30_percent_off_is_rejected(gs, truncated):
    plan = r2t_plan(Fraction(1), gs)
    with fixed_noise_for_tests(random.Random(gs)):
        draws = np.array([r2t_release(plan, truncated) for _ in range(6000)])
    assert _chi_square_pvalue(draws, lambda x: _release_cdf(plan, truncated, x)) > 1e-3
    assert _chi_square_pvalue(draws, lambda x: _release_cdf(plan, truncated, x, scale_factor=1.3)) < 1e-6
    assert _chi_square_pvalue(draws, lambda x: _release_cdf(plan, truncated, x, scale_factor=1 / 1.3)) < 1e-6


def test_one_threshold_is_the_unbiased_laplace_mechanism():
    plan = r2t_plan(Fraction(1, 2), 1)
    assert plan.shifts == (0,) and plan.scales == (2,)
    with fixed_noise_for_tests(random.Random(7)):
        draws = np.array([r2t_release(plan, [1000]) for _ in range(6000)])
    assert abs(draws.mean() - 1000) < 4 * 2 * math.sqrt(2) / math.sqrt(6000)


@pytest.mark.parametrize("counts", [(1, 1, 1, 2) * 30, (21, 3, 2, 1, 1) * 10, (60, 1, 1)])
def test_predicted_error_matches_the_simulated_release_and_the_bound_holds(counts):
    """predicted_error (numerical, from the contributions) against 4,000 exact releases; the
    (1 - beta) interval of error_bound holds at least 90% of the time (beta = 1/10)."""
    plan = r2t_plan(Fraction(1), 64)
    public = 40
    truncated = [truncated_count(counts, public, t) for t in plan.thresholds]
    true = public + sum(counts)
    with fixed_noise_for_tests(random.Random(len(counts))):
        draws = np.array([r2t_release(plan, truncated) for _ in range(4000)])
    predicted = predicted_error(plan, truncated, true)
    simulated = float(np.mean(np.abs(draws - true)))
    assert abs(predicted - simulated) <= 0.06 * simulated + 1
    bound = error_bound(plan, max(counts))
    inside = np.mean((draws >= true - bound) & (draws <= true))
    assert inside >= 0.9


def test_the_lp_equals_the_truncated_count_when_each_result_has_one_person():
    sets = [(0,)] * 5 + [(1,)] * 2 + [(2,)]
    for tau in (1, 2, 3, 6):
        assert certified_lp_count(sets, 4, tau) == truncated_count((5, 2, 1), 4, tau)


def test_the_lp_of_a_triangle_is_fractional_and_rounded_within_one():
    """Three results, each shared by two of three persons, tau = 1: the LP's value is 3/2."""
    assert certified_lp_count([(0, 1), (1, 2), (0, 2)], 0, 1) in (1, 2)
    assert certified_lp_count([(0, 1), (1, 2), (0, 2)], 0, 2) == 3
    with pytest.raises(InternalError):
        certified_lp_count([()], 0, 1)
