from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from pimento.errors import InternalError, PrivacyParameterError
from pimento.mechanisms import GlobalLaplace, mechanism_for_query
from pimento.mechanisms.smooth import (
    _Q95_LAPLACE,
    _Q95_QUARTIC,
    Release,
    SmoothLaplace,
    SmoothQuartic,
    laplace_beta,
    ln_upper,
    mechanism_for,
)

from .test_samplers import quartic_abs_cdf


def test_cost_and_beta_are_known_before_running():
    mech = mechanism_for("1", "1e-6")
    assert mech.privacy_cost().epsilon == 1 and mech.privacy_cost().delta == Fraction(1, 10**6)
    assert mech.epsilon_noise == Fraction(9, 10) and mech.epsilon_rs_bound == Fraction(1, 10)
    exact = 0.9 / (2 * math.log(2e6))  # beta comes from the mechanism's share of epsilon
    assert float(mech.beta()) <= exact
    assert float(mech.beta()) == pytest.approx(exact, rel=1e-8)
    pure = mechanism_for("0.5")
    assert isinstance(pure, SmoothQuartic)
    assert Fraction(9, 200) * (1 - Fraction(1, 2**39)) <= pure.beta() <= Fraction(9, 200) * (1 - Fraction(1, 2**40))
    assert pure.privacy_cost().delta == 0


@pytest.mark.parametrize("delta", ["1e-3", "1e-9", "1/7", "1e-120"])
def test_beta_never_exceeds_the_exact_value(delta):
    d = Fraction(delta) if "/" in delta else Fraction(__import__("decimal").Decimal(delta))
    # 1e-120 is below what a spend may be (budget.py): the formula is checked directly there
    beta = laplace_beta(Fraction(63, 100), d) if delta == "1e-120" else SmoothLaplace.of("0.7", delta).beta()
    assert beta == laplace_beta(Fraction(63, 100), d)
    # beta <= eps_noise / (2 ln(2/d))  <=>  exp(eps_noise / (2 beta)) >= 2/d; check with a high-precision log
    log_needed = math.log(2) + (math.log(d.denominator) - math.log(d.numerator))
    assert Fraction(63, 100) / (2 * beta) >= Fraction(log_needed) * (1 - Fraction(1, 10**12))
    assert ln_upper(2 / d) >= Fraction(log_needed) * (1 - Fraction(1, 10**14))


def test_scales_follow_the_formulas():
    assert SmoothLaplace.of("0.5", "1e-6").scale(3) == Fraction(12) / Fraction(9, 10)
    assert SmoothQuartic.of("0.5").scale(Fraction(7, 3)) == Fraction(140, 3) / Fraction(9, 10)
    assert SmoothLaplace.of("0.5", "1e-6", share="1/4").scale(3) == Fraction(16)


@pytest.mark.parametrize("eps, delta", [(0, "1e-6"), (-1, None), ("nan", None), (math.inf, "1e-6"), (1, "0"), (1, "1"), (1, "2"), (1, math.nan)])
def test_bad_parameters_raise_before_anything_runs(eps, delta):
    with pytest.raises(PrivacyParameterError):
        mechanism_for(eps, delta)


def test_release_is_integral_and_reports_only_what_the_analyst_may_see():
    mech = mechanism_for("1", "1e-6")
    r, private = mech.release(120, rs=3, rng=random.Random(1))
    d = r.to_dict()
    assert isinstance(d["value"], int)
    assert d["mechanism"] == "smooth_laplace" and d["noise"] == "laplace"
    assert d["epsilon"] == "1" and d["delta"] == "0.000001" and d["epsilon_noise"] == "0.9" and d["epsilon_rs_bound"] == "0.1"
    # The exact RS and scale are the custodian's only; the interval comes from the DP bound.
    assert private.rs == 3 and private.scale == Fraction(20, 3)
    assert not {"rs", "rs_exact", "scale", "scale_exact", "noise_std", "sensitivity"} & set(d)
    assert d["interval_basis"] == "dp_rs_upper_bound"
    lo, hi = d["interval"]
    scale_upper = Fraction(d["noise_scale_upper_exact"])
    assert private.rs_upper is not None and scale_upper >= 2 * private.rs_upper / Fraction(9, 10)
    assert lo <= d["value"] <= hi and hi - d["value"] == math.ceil(scale_upper * mech._q_bound - Fraction(1, 2))
    assert Fraction(1) < mech._q_bound < Fraction("1.1")  # the quantile over the bound's law (3.218876 by the old union bound)
    assert Release.from_dict(d) == r
    assert "true" not in " ".join(d)


def test_quantile_constants_are_outward_roundings():
    assert 1 - math.exp(-float(_Q95_LAPLACE)) >= 0.95
    assert 1 - math.exp(-float(_Q95_LAPLACE)) < 0.95 + 1e-6
    assert quartic_abs_cdf(float(_Q95_QUARTIC)) >= 0.95
    assert quartic_abs_cdf(float(_Q95_QUARTIC)) < 0.95 + 1e-6


@pytest.mark.parametrize("mech", [mechanism_for("1", "1e-6"), mechanism_for("1")], ids=["laplace", "quartic"])
def test_interval_covers_the_true_count_at_least_95_percent(mech):
    rng = random.Random(11)
    n = 4000
    hits = 0
    for _ in range(n):
        r, _ = mech.release(50, rs=Fraction(1, 3), rng=rng)
        hits += r.interval[0] <= 50 <= r.interval[1]
    assert hits / n >= 0.94  # coverage >= 0.95 by construction; slack for sampling error


def test_releases_are_unbiased():
    mech = mechanism_for("2", "1e-6")
    rng = random.Random(5)
    values = [mech.release(10, rs=1, rng=rng).release.value for _ in range(10_000)]
    mean = float(sum(values)) / len(values)
    assert abs(mean - 10) < 4 * math.sqrt(2) * 1 / math.sqrt(len(values)) + 0.02


def test_float_sensitivity_is_taken_exactly_never_rounded_down():
    mech = mechanism_for("1")
    _, private = mech.release(0, rs=0.1, rng=random.Random(0))
    assert private.rs == Fraction(0.1) and private.rs > Fraction(1, 10)


@pytest.mark.parametrize("grid", ["2", "2/3", "0", "-1"])
def test_grid_must_keep_integers_on_the_grid(grid):
    with pytest.raises(PrivacyParameterError, match="grid"):
        mechanism_for("1", grid=grid)


def test_fine_grid_releases_fractions():
    r, _ = mechanism_for("1", "1e-6", grid="1/8").release(3, rs=1)
    assert (r.value * 8).denominator == 1


def test_zero_sensitivity_releases_the_exact_value():
    r, _ = mechanism_for("1").release(42, rs=0)
    assert r.value == 42 and r.interval[1] - r.interval[0] <= 2  # the bound of RS = 0 is tiny (floor 2^-64)


@pytest.mark.parametrize("delta", ["1e-6", "1e-9", "0.3"])
def test_float_beta_is_rounded_down(delta):
    mech = mechanism_for("0.9", delta)
    assert Fraction(mech.beta_float()) <= mech.beta()
    assert mech.beta_float() == pytest.approx(float(mech.beta()), rel=1e-15)


def test_single_relation_counts_use_global_laplace_at_one_over_epsilon():
    m = mechanism_for_query("0.5", "1e-6", relations=1)
    assert isinstance(m, GlobalLaplace)
    assert m.privacy_cost().epsilon == Fraction(1, 2) and m.privacy_cost().delta == 0
    assert m.scale(1) == 2
    release, private = m.release(10, 1)
    assert release.noise == "laplace" and private.scale == 2 and release.delta == 0
    # GS is public: the whole epsilon goes to the noise, the interval comes from GS.
    assert release.epsilon_rs_bound == 0 and release.epsilon_noise == Fraction(1, 2)
    assert release.noise_scale_upper == 2 and release.interval_basis == "global_sensitivity"
    assert release.interval[1] - release.value == math.ceil(2 * Fraction("2.995733") - Fraction(1, 2))


def test_global_laplace_refuses_another_sensitivity_and_joins_keep_smooth():
    with pytest.raises(InternalError):
        GlobalLaplace.of("1").scale(3)
    assert isinstance(mechanism_for_query("1", "1e-6", relations=2), SmoothLaplace)
    with pytest.raises(PrivacyParameterError):
        mechanism_for_query("nan", "1e-6", relations=1)
