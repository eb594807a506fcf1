"""DP partition selection (PROOF.md section 11): the threshold's delta, and the shown probability's law."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
from scipy import stats

from pimento.errors import InternalError, PrivacyParameterError
from pimento.mechanisms.partition_selection import Contribution, laplace_threshold, select_partitions, shown_probability
from pimento.mechanisms.samplers import fixed_noise_for_tests

ONE = Contribution(Fraction(1), 1, Fraction(1))
CASES = [
    (Fraction(1), Fraction(1, 10**6), ONE, Fraction(1)),
    (Fraction(1, 2), Fraction(1, 10**9), Contribution(Fraction(6), 3, Fraction(2)), Fraction(1)),
    (Fraction(3), Fraction(1, 10**5), Contribution(Fraction(4), 4, Fraction(1)), Fraction(1, 4)),
]


@pytest.mark.parametrize(("epsilon", "delta", "c", "grid"), CASES)
def test_keys_one_neighbour_creates_are_shown_with_probability_at_most_delta_over_e_eps(epsilon, delta, c, grid):
    """groups * P(shown | count per_group) <= delta e^-eps: the (eps, delta) argument's only delta term."""
    tau = laplace_threshold(epsilon, delta, c, grid=grid)
    p = shown_probability(c.per_group, epsilon, c, tau, grid=grid)
    assert c.groups * p <= float(delta) * math.exp(-float(epsilon)) * (1 + 1e-9)
    # and not absurdly conservative: within a factor e^(grid/scale) of it
    assert c.groups * p >= float(delta) * math.exp(-float(epsilon)) * math.exp(-float(grid * epsilon / c.l1)) * 0.999


@pytest.mark.parametrize("n", [12, 15, 16, 18])
def test_the_shown_frequency_matches_the_stated_probability(n):
    """10,000 keys of count n near tau = 15.6 (eps 1, delta 1e-6): the binomial test accepts the
    stated probability and rejects the one of a noise scale 30% off."""
    epsilon, delta = Fraction(1), Fraction(1, 10**6)
    tau = laplace_threshold(epsilon, delta, ONE)
    keys = 10_000
    with fixed_noise_for_tests(random.Random(n)):
        shown = select_partitions({k: n for k in range(keys)}, epsilon, delta, ONE)
    p = shown_probability(n, epsilon, ONE, tau)
    assert stats.binomtest(len(shown), keys, p).pvalue > 1e-3
    wrong = shown_probability(n, epsilon, Contribution(Fraction(13, 10), 1, Fraction(1)), tau)
    assert stats.binomtest(len(shown), keys, wrong).pvalue < 1e-6
    assert all(v >= tau for v in shown.values())


def test_refusals_and_order():
    with pytest.raises(PrivacyParameterError, match="delta"):
        laplace_threshold(Fraction(1), Fraction(0), ONE)
    with pytest.raises(InternalError):
        Contribution(Fraction(1), 1, Fraction(2))
    with fixed_noise_for_tests(random.Random(1)):
        out = select_partitions({"b": 100, "a": 100, "c": 0}, Fraction(1), Fraction(1, 10**6), ONE)
    assert list(out) == ["a", "b"]
