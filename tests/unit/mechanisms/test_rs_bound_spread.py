"""The spread of the DP bound of RS is the mechanism's stated Laplace scale (issue 23's mutation round).

``rs_upper`` draws ``log2 U = ceil_h(log2 RS) + m h + t'`` with ``m h`` a Laplace variable of
scale ``b`` (in bits) rounded to the grid ``h = 2^-10``: that spread is what makes the bound
(released as ``noise_scale_upper``) private. A mutant drawing it on the wrong grid (``m`` in whole
bits times ``h``: a spread of 0.0006 bits instead of 0.65) kept every coverage test passing, the
bound being only ever *wider* than needed, and revealed RS to 0.05%. Here the spread of
``log2(U / RS)`` over many draws with the real sampler is compared with ``b``: for Laplace(b),
``E|X - median| = b``, estimated within a relative standard error ``1/sqrt(N)`` (5% for N = 400);
the test accepts a ratio within 15% and is shown to reject a scale 30% off and the wrong grid.
"""

from __future__ import annotations

import math
import random
import statistics
from fractions import Fraction

import pytest

from pimento.mechanisms import smooth
from pimento.mechanisms.smooth import mechanism_for

DRAWS = 800
#: the accepted ratio of the measured spread to b: 3.4 standard errors at DRAWS draws (1/sqrt(800) = 3.5%)
TOLERANCE = 0.12


def spread_ratio(mechanism, rs: Fraction, *, draws: int = DRAWS, seed: int = 0) -> float:
    """Mean |log2(U/RS) - median| over ``draws`` bounds U, divided by the mechanism's stated scale b."""
    b, _shift = mechanism._bound_law()
    rng = random.Random(seed)
    logs = []
    for _ in range(draws):
        upper, _steps = mechanism.rs_upper(rs, rng)
        logs.append(math.log2(upper) - math.log2(rs))
    centre = statistics.median(logs)
    return sum(abs(x - centre) for x in logs) / len(logs) / float(b)


@pytest.fixture()
def fast_powers(monkeypatch):
    """``2^(k h)`` to float precision instead of exactly (5 ms a draw): the spread is read to 1e-12 bits all the
    same. For the draws that need many samples; the exact U is used by the first test (and tested in test_smooth_bound)."""
    monkeypatch.setattr(smooth, "pow2_steps_upper", lambda k, bits=64: Fraction(2.0 ** (k / (1 << 10))))


def test_the_bound_spreads_as_the_stated_laplace_scale():
    """Smooth Laplace (b = 0.46 bits), everything exact and real."""
    ratio = spread_ratio(mechanism_for("1", "1e-6"), Fraction(3))
    assert abs(ratio - 1) < TOLERANCE, ratio


@pytest.mark.parametrize("epsilon,delta,share", [("1", None, None), ("0.3", "1e-9", "1/4"), ("5", "1e-6", None)])
def test_every_mechanism_spreads_its_bound_as_stated(fast_powers, epsilon, delta, share):
    """Smooth quartic (b = 1.31 bits) and other epsilons, deltas and shares: the real sampler, 2000 draws."""
    ratio = spread_ratio(mechanism_for(epsilon, delta, share=share), Fraction(1000, 7), draws=2000)
    assert abs(ratio - 1) < TOLERANCE, ratio


def _with_sampler(monkeypatch, change):
    """``rs_upper`` drawing through ``change(scale, grid) -> (scale, grid)`` (a mutant, for the power check)."""
    real = smooth.rounded_laplace

    def mutant(scale, grid, rng):
        return real(*change(scale, grid), rng)

    monkeypatch.setattr(smooth, "rounded_laplace", mutant)


@pytest.mark.parametrize("name,change", [
    ("scale 30% low", lambda scale, grid: (scale * Fraction(7, 10), grid)),
    ("scale 30% high", lambda scale, grid: (scale * Fraction(13, 10), grid)),
    ("drawn on the whole-bit grid", lambda scale, grid: (scale, Fraction(1))),
])
def test_the_spread_check_has_power(monkeypatch, fast_powers, name, change):
    """The same check, at DRAWS draws, rejects the bound drawn at a scale 30% off and the wrong-grid mutant
    (spread b/1024), on every seed tried."""
    mechanism = mechanism_for("1", "1e-6")
    _with_sampler(monkeypatch, change)
    for seed in range(3):
        ratio = spread_ratio(mechanism, Fraction(3), seed=seed)
        assert abs(ratio - 1) >= TOLERANCE, (name, seed, ratio)
