"""Truncation at one public threshold under the person unit (PROOF.md section 12.5)."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from pimento.errors import PrivacyParameterError
from pimento.mechanisms.r2t import r2t_plan, r2t_release, truncated_count
from pimento.mechanisms.samplers import fixed_noise_for_tests
from pimento.mechanisms.truncation import choose_threshold, truncation_plan, truncation_predicted_error, truncation_release


def test_the_scale_is_the_truncated_counts_sensitivity_over_epsilon():
    assert truncation_plan(Fraction(1, 2), 8).scale == 16
    assert truncation_plan(Fraction(1, 2), 8, lp=True).scale == 18
    for bad in (0, -2, True, 1.5, 2**41):
        with pytest.raises(PrivacyParameterError):
            truncation_plan(Fraction(1), bad)
    with pytest.raises(PrivacyParameterError):
        truncation_plan(Fraction(0), 4)


def test_the_release_is_rounded_laplace_of_the_stated_scale_and_30_percent_off_is_rejected():
    """KS on the continuous Laplace the rounding comes from (draw + U(-1/2, 1/2) recovers it exactly
    in law: the rounded value plus an independent uniform has the density of the convolution, which
    differs from Laplace by O(1/scale^2); at scale 40 the test cannot see that but sees 30%)."""
    plan = truncation_plan(Fraction(1, 4), 10)  # scale 40
    with fixed_noise_for_tests(random.Random(3)):
        draws = np.array([truncation_release(plan, 500) for _ in range(5000)], dtype=float) - 500
    jitter = np.random.default_rng(0).uniform(-0.5, 0.5, size=draws.size)  # test-side only, not released noise
    sample = draws + jitter
    assert stats.kstest(sample, stats.laplace(scale=40).cdf).pvalue > 1e-3
    assert stats.kstest(sample, stats.laplace(scale=52).cdf).pvalue < 1e-6
    assert stats.kstest(sample, stats.laplace(scale=40 / 1.3).cdf).pvalue < 1e-6


@pytest.mark.parametrize("bias", [0, 7, 60])
def test_predicted_error_is_the_mean_absolute_error(bias):
    plan = truncation_plan(Fraction(1), 12)
    truth = 1000
    with fixed_noise_for_tests(random.Random(bias)):
        draws = np.array([truncation_release(plan, truth - bias) for _ in range(6000)])
    simulated = float(np.mean(np.abs(draws - truth)))
    predicted = truncation_predicted_error(plan, truth - bias, truth)
    assert abs(predicted - simulated) <= 0.05 * simulated + 0.5
    if bias == 0:
        assert math.isclose(predicted, 12)


def test_the_chosen_threshold_minimises_the_predicted_error_and_beats_r2t_on_a_typical_hospital():
    """Persons with 1-3 results and a few with 21 (the demo's heavy patients): at eps 1 the
    threshold chosen on these contributions predicts a far smaller error than R2T with GS 64."""
    counts = (21, 3, 2, 1, 1) * 10
    public = 40
    truth = public + sum(counts)
    eps = Fraction(1)
    tau = choose_threshold(lambda t: truncated_count(counts, public, t), truth, eps, gs=64)
    errors = {t: truncation_predicted_error(truncation_plan(eps, t), truncated_count(counts, public, t), truth) for t in range(1, 65)}
    assert errors[tau] == min(errors.values())
    r2t = r2t_plan(eps, 64)
    truncated = [truncated_count(counts, public, t) for t in r2t.thresholds]
    with fixed_noise_for_tests(random.Random(5)):
        r2t_error = np.mean([abs(r2t_release(r2t, truncated) - truth) for _ in range(500)])
    assert errors[tau] * 3 < r2t_error
    assert choose_threshold(lambda t: truncated_count((), 0, t), 0, eps, gs=2**40) == 1
