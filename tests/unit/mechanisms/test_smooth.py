from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from pimento.errors import PrivacyParameterError
from pimento.mechanisms.smooth import (
    _Q95_LAPLACE,
    _Q95_QUARTIC,
    Release,
    SmoothLaplace,
    SmoothQuartic,
    ln_upper,
    mechanism_for,
)

from .test_samplers import quartic_abs_cdf


def test_cost_and_beta_are_known_before_running():
    mech = mechanism_for("1", "1e-6")
    assert mech.privacy_cost().epsilon == 1 and mech.privacy_cost().delta == Fraction(1, 10**6)
    exact = 1 / (2 * math.log(2e6))
    assert float(mech.beta()) <= exact
    assert float(mech.beta()) == pytest.approx(exact, rel=1e-8)
    pure = mechanism_for("0.5")
    assert isinstance(pure, SmoothQuartic)
    assert Fraction(1, 20) * (1 - Fraction(1, 2**39)) <= pure.beta() <= Fraction(1, 20) * (1 - Fraction(1, 2**40))
    assert pure.privacy_cost().delta == 0


@pytest.mark.parametrize("delta", ["1e-3", "1e-9", "1/7", "1e-120"])
def test_beta_never_exceeds_the_exact_value(delta):
    d = Fraction(delta) if "/" in delta else Fraction(__import__("decimal").Decimal(delta))
    beta = SmoothLaplace.of("0.7", delta).beta()
    # beta <= eps / (2 ln(2/d))  <=>  exp(eps / (2 beta)) >= 2/d; check with a high-precision log
    log_needed = math.log(2) + (math.log(d.denominator) - math.log(d.numerator))
    assert Fraction(7, 10) / (2 * beta) >= Fraction(log_needed) * (1 - Fraction(1, 10**12))
    assert ln_upper(2 / d) >= Fraction(log_needed) * (1 - Fraction(1, 10**14))


def test_scales_follow_the_formulas():
    assert SmoothLaplace.of("0.5", "1e-6").scale(3) == Fraction(12)
    assert SmoothQuartic.of("0.5").scale(Fraction(7, 3)) == Fraction(140, 3)


@pytest.mark.parametrize("eps, delta", [(0, "1e-6"), (-1, None), ("nan", None), (math.inf, "1e-6"), (1, "0"), (1, "1"), (1, "2"), (1, math.nan)])
def test_bad_parameters_raise_before_anything_runs(eps, delta):
    with pytest.raises(PrivacyParameterError):
        mechanism_for(eps, delta)


def test_release_is_integral_and_reports_everything():
    mech = mechanism_for("1", "1e-6")
    r = mech.release(120, rs=3, rng=random.Random(1))
    d = r.to_dict()
    assert isinstance(d["value"], int)
    assert d["noise"] == "laplace" and d["scale"] == 6.0 and d["rs"] == 3.0
    assert d["epsilon"] == "1" and d["delta"] == "0.000001"
    lo, hi = d["interval"]
    assert lo <= d["value"] <= hi and hi - d["value"] == math.ceil(6 * 2.995733 - 0.5)
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
        r = mech.release(50, rs=Fraction(1, 3), rng=rng)
        hits += r.interval[0] <= 50 <= r.interval[1]
    assert hits / n >= 0.94  # coverage >= 0.95 by construction; slack for sampling error


def test_releases_are_unbiased():
    mech = mechanism_for("2", "1e-6")
    rng = random.Random(5)
    values = [mech.release(10, rs=1, rng=rng).value for _ in range(10_000)]
    mean = float(sum(values)) / len(values)
    assert abs(mean - 10) < 4 * math.sqrt(2) * 1 / math.sqrt(len(values)) + 0.02


def test_float_sensitivity_is_taken_exactly_never_rounded_down():
    mech = mechanism_for("1")
    r = mech.release(0, rs=0.1, rng=random.Random(0))
    assert r.sensitivity == Fraction(0.1) and r.sensitivity > Fraction(1, 10)


@pytest.mark.parametrize("grid", ["2", "2/3", "0", "-1"])
def test_grid_must_keep_integers_on_the_grid(grid):
    with pytest.raises(PrivacyParameterError, match="grid"):
        mechanism_for("1", grid=grid)


def test_fine_grid_releases_fractions():
    r = mechanism_for("1", "1e-6", grid="1/8").release(3, rs=1)
    assert (r.value * 8).denominator == 1


def test_zero_sensitivity_releases_the_exact_value():
    r = mechanism_for("1").release(42, rs=0)
    assert r.value == 42 and r.interval == (42, 42)


@pytest.mark.parametrize("delta", ["1e-6", "1e-9", "0.3"])
def test_float_beta_is_rounded_down(delta):
    mech = mechanism_for("0.9", delta)
    assert Fraction(mech.beta_float()) <= mech.beta()
    assert mech.beta_float() == pytest.approx(float(mech.beta()), rel=1e-15)


def test_single_relation_counts_use_global_laplace_at_one_over_epsilon():
    from pimento.mechanisms import GlobalLaplace, mechanism_for_query

    m = mechanism_for_query("0.5", "1e-6", relations=1)
    assert isinstance(m, GlobalLaplace)
    assert m.privacy_cost().epsilon == Fraction(1, 2) and m.privacy_cost().delta == 0
    assert m.scale(1) == 2
    release = m.release(10, 1)
    assert release.noise == "laplace" and release.scale == 2 and release.delta == 0


def test_global_laplace_refuses_another_sensitivity_and_joins_keep_smooth():
    from pimento.errors import InternalError, PrivacyParameterError
    from pimento.mechanisms import GlobalLaplace, SmoothLaplace, mechanism_for_query

    with pytest.raises(InternalError):
        GlobalLaplace.of("1").scale(3)
    assert isinstance(mechanism_for_query("1", "1e-6", relations=2), SmoothLaplace)
    with pytest.raises(PrivacyParameterError):
        mechanism_for_query("nan", "1e-6", relations=1)
