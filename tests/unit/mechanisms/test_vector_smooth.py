"""Vector smooth-sensitivity releases: beta's conditions (PROOF.md section 10) and the released law.

The law test has power: each coordinate's |noise| is accepted at the scalar scale 2 S / eps_noise
and rejected 30% off; independence across coordinates is accepted, and rejected for a vector
whose coordinates share one draw.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from pimento.errors import InternalError
from pimento.mechanisms.samplers import fixed_noise_for_tests, rounded_laplace
from pimento.mechanisms.vector_smooth import (
    VectorSmoothLaplace,
    VectorSmoothQuartic,
    vector_laplace_beta,
    vector_quartic_beta,
)

from .test_samplers import chi2_pvalue, laplace_pmf

CASES = [(Fraction(1), Fraction(1, 10**6), d) for d in (1, 2, 5, 30, 1000)] + [
    (Fraction(1, 10), Fraction(1, 10**9), 3),
    (Fraction(8), Fraction(1, 100), 50),
]


@pytest.mark.parametrize(("epsilon", "delta", "d"), CASES)
def test_laplace_beta_meets_the_dilation_conditions(epsilon, delta, d):
    """beta <= eps/(2d) (dilation inward) and P(||Z||_1 > e^-beta eps/(2 beta)) <= delta e^(-eps/2) (outward).

    The tail is the exact Gamma(d, 1) tail (scipy), not the Chernoff bound the proof uses.
    """
    beta = vector_laplace_beta(epsilon, delta, d)
    assert 0 < beta <= epsilon / (2 * d)
    b = float(beta)
    tail = stats.gamma(d).sf(math.exp(-b) * float(epsilon) / (2 * b))
    assert tail <= float(delta) * math.exp(-float(epsilon) / 2)


def test_the_scalar_beta_would_break_the_conditions_for_many_groups():
    """Mutant check: the scalar beta eps/(2 ln(2/delta)) used for d = 100 violates beta <= eps/(2d)."""
    epsilon, delta, d = Fraction(1), Fraction(1, 10**6), 100
    scalar = VectorSmoothLaplace.of(epsilon, delta, dimension=d, share="0.1").scalar_beta()
    assert scalar > Fraction(9, 10) * epsilon / (2 * d)
    assert vector_laplace_beta(Fraction(9, 10), delta, d) < Fraction(9, 10) / (2 * d)


@pytest.mark.parametrize("d", [1, 4, 64])
def test_quartic_beta_is_the_scalar_one_over_d(d):
    beta = vector_quartic_beta(Fraction(1), d)
    assert beta <= Fraction(1, 10 * d) and beta > Fraction(1, 10 * d) * (1 - Fraction(1, 1 << 39))
    assert VectorSmoothQuartic.of(1, dimension=d).beta() == vector_quartic_beta(Fraction(9, 10), d)


def test_the_vector_must_have_its_dimension_and_lie_on_the_grid():
    mech = VectorSmoothLaplace.of(1, "1e-6", dimension=2)
    with pytest.raises(InternalError):
        mech.release_vector((1, 2, 3), rs=1, rng=random.Random(0))
    with pytest.raises(InternalError):
        mech.release_vector((1, Fraction(1, 2)), rs=1, rng=random.Random(0))
    with pytest.raises(InternalError):
        VectorSmoothLaplace.of(1, "1e-6", dimension=0)


R = 3
D = 3000
S = Fraction(3)


@pytest.fixture(scope="module")
def noise() -> np.ndarray:
    """R releases of a D-vector at S = 3, eps 1 (noise share 9/10): the R x D noise matrix, drawn through the CSPRNG hook."""
    mech = VectorSmoothLaplace.of(1, "1e-6", dimension=D)
    truth = [i % 7 for i in range(D)]
    rows = []
    with fixed_noise_for_tests(random.Random(20261127)):
        for _ in range(R):
            out = mech.release_vector(truth, rs=S)
            rows.append([int(v - t) for v, t in zip(out.values, truth, strict=True)])
            assert out.private.scale == 2 * S / Fraction(9, 10)
    return np.array(rows)


@pytest.mark.parametrize("release", range(R))
def test_the_coordinates_have_the_scalar_scale(noise, release):
    scale = float(2 * S / Fraction(9, 10))
    samples = list(noise[release])
    assert chi2_pvalue(samples, laplace_pmf(scale)) > 1e-3
    for wrong in (scale * 1.3, scale * 0.7):
        assert chi2_pvalue(samples, laplace_pmf(wrong)) < 1e-6


def _independence_pvalue(a: np.ndarray, b: np.ndarray) -> float:
    """Chi-square test of independence of (|a| binned, |b| binned) and of the signs."""
    bins = [0, 2, 5, 10, 10**9]
    table = np.histogram2d(np.abs(a), np.abs(b), bins=[bins, bins])[0]
    signs = np.histogram2d(np.sign(a), np.sign(b), bins=[[-1.5, -0.5, 0.5, 1.5]] * 2)[0]
    return min(stats.chi2_contingency(table).pvalue, stats.chi2_contingency(signs).pvalue)


def test_coordinates_are_independent(noise):
    """Within a release (even against odd coordinates, and neighbours shifted by one) and across releases."""
    for r in range(R):
        assert _independence_pvalue(noise[r, 0::2], noise[r, 1::2]) > 1e-4
        assert _independence_pvalue(noise[r, :-1], noise[r, 1:]) > 1e-4
    assert _independence_pvalue(noise[0], noise[1]) > 1e-4


def test_the_independence_test_has_power():
    """A vector whose coordinates share one draw (or are perturbed copies) is rejected."""
    rng = random.Random(7)
    shared = np.array([rounded_laplace(Fraction(20, 3), Fraction(1), rng) for _ in range(D // 2)])
    jitter = np.array([rounded_laplace(Fraction(2), Fraction(1), rng) for _ in range(D // 2)])
    assert _independence_pvalue(shared, shared + jitter) < 1e-6
