"""Statistical tests with power: each sampler is accepted at its true scale and rejected 30% off.

Exact pmfs of the rounded laws are computed from the continuous CDFs; a chi-square test on
binned |m| (signs folded, then checked separately) at a fixed seed decides.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction
from secrets import SystemRandom

import numpy as np
import pytest
from scipy import stats

from pimento.mechanisms.samplers import bernoulli_exp, default_rng, geometric_exp, rounded_laplace, rounded_quartic

N = 20_000


def laplace_abs_cdf(x: float, scale: float) -> float:
    return 1 - math.exp(-x / scale) if x > 0 else 0.0


def quartic_abs_cdf(x: float) -> float:
    """P(|Z| <= x) for density (sqrt 2 / pi) / (1 + z^4), closed form."""
    if x <= 0:
        return 0.0
    s = math.sqrt(2)
    antiderivative = (math.log((x * x + s * x + 1) / (x * x - s * x + 1)) + 2 * math.atan(s * x + 1) + 2 * math.atan(s * x - 1)) / (4 * s)
    return 2 * (s / math.pi) * antiderivative


def rounded_pmf(abs_cdf, scale: float, grid: float, kmax: int) -> list[float]:
    """P(|m| = k) for k < kmax and the tail P(|m| >= kmax), m = round(scale X / grid)."""
    edges = [0.0] + [(k + 0.5) * grid / scale for k in range(kmax)]
    probs = [abs_cdf(edges[k + 1]) - abs_cdf(edges[k]) for k in range(kmax)]
    return probs + [1 - sum(probs)]


def chi2_pvalue(samples: list[int], probs: list[float]) -> float:
    kmax = len(probs) - 1
    counts = [0] * (kmax + 1)
    for m in samples:
        counts[min(abs(m), kmax)] += 1
    expected = [p * len(samples) for p in probs]
    return stats.chisquare(counts, expected).pvalue


@pytest.fixture(scope="module")
def laplace_samples() -> list[int]:
    rng = random.Random(20240601)
    return [rounded_laplace(Fraction(4), Fraction(1), rng) for _ in range(N)]


@pytest.fixture(scope="module")
def quartic_samples() -> list[int]:
    rng = random.Random(20240602)
    return [rounded_quartic(Fraction(5), Fraction(1), rng) for _ in range(N)]


def laplace_pmf(scale: float) -> list[float]:
    return rounded_pmf(lambda x: laplace_abs_cdf(x, 1.0), scale, 1.0, 20)


def quartic_pmf(scale: float) -> list[float]:
    return rounded_pmf(quartic_abs_cdf, scale, 1.0, 16)


def test_laplace_accepts_true_scale(laplace_samples):
    assert chi2_pvalue(laplace_samples, laplace_pmf(4.0)) > 1e-3


@pytest.mark.parametrize("wrong", [4.0 * 1.3, 4.0 * 0.7])
def test_laplace_rejects_scale_30_percent_off(laplace_samples, wrong):
    assert chi2_pvalue(laplace_samples, laplace_pmf(wrong)) < 1e-6


def test_quartic_accepts_true_scale(quartic_samples):
    assert chi2_pvalue(quartic_samples, quartic_pmf(5.0)) > 1e-3


@pytest.mark.parametrize("wrong", [5.0 * 1.3, 5.0 * 0.7])
def test_quartic_rejects_scale_30_percent_off(quartic_samples, wrong):
    assert chi2_pvalue(quartic_samples, quartic_pmf(wrong)) < 1e-6


@pytest.mark.parametrize("fixture", ["laplace_samples", "quartic_samples"])
def test_noise_is_symmetric_and_unbiased(fixture, request):
    samples = request.getfixturevalue(fixture)
    nonzero = [m for m in samples if m]
    positives = sum(1 for m in nonzero if m > 0)
    assert stats.binomtest(positives, len(nonzero)).pvalue > 1e-3
    mean = sum(samples) / len(samples)
    sd = (sum(m * m for m in samples) / len(samples)) ** 0.5
    assert abs(mean) < 4 * sd / math.sqrt(len(samples))


def test_quartic_fine_grid_matches_continuous_law():
    """With grid 1/64 the rounded law approaches the continuous one: KS accepts it, rejects 30% off."""
    rng = random.Random(7)
    xs = [rounded_quartic(Fraction(1), Fraction(1, 64), rng) / 64 for _ in range(N // 2)]
    abs_xs = [abs(x) for x in xs]
    cdf = np.vectorize(quartic_abs_cdf)
    assert stats.kstest(abs_xs, cdf).pvalue > 1e-3
    assert stats.kstest([a / 1.3 for a in abs_xs], cdf).pvalue < 1e-6


def test_bernoulli_exp_frequency():
    rng = random.Random(3)
    for x in (Fraction(1, 3), Fraction(5, 2)):
        hits = sum(bernoulli_exp(x, rng) for _ in range(N))
        assert stats.binomtest(hits, N, math.exp(-float(x))).pvalue > 1e-3
        assert stats.binomtest(hits, N, math.exp(-float(x) * 1.3)).pvalue < 1e-6


def test_geometric_exp_mean():
    rng = random.Random(4)
    x = Fraction(1, 7)
    samples = [geometric_exp(x, rng) for _ in range(N)]
    p = math.exp(-float(x))
    probs = [(1 - p) * p**k for k in range(30)]
    counts = [0] * 31
    for g in samples:
        counts[min(g, 30)] += 1
    expected = [q * N for q in probs] + [N * p**30]
    assert stats.chisquare(counts, expected).pvalue > 1e-3


def test_zero_scale_gives_zero_noise():
    rng = random.Random(0)
    assert rounded_laplace(Fraction(0), Fraction(1), rng) == 0
    assert rounded_quartic(Fraction(0), Fraction(1), rng) == 0


def test_default_source_is_the_os_csprng():
    assert isinstance(default_rng(), SystemRandom)
