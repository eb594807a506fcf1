"""The arithmetic range of a smooth release is decided before the charge (issue 23, finding 7).

Everything :meth:`release` computes (beta, the DP bound of RS, its quantile, U, the texts) is
checked from public inputs when the mechanism is admitted (``for_relations`` / ``privacy_cost``);
after that, no count and no RS can make a release fail (PROOF.md, section 8, "Range").
"""

from __future__ import annotations

import json
import math
import random
import sys
from fractions import Fraction

import pytest

from pimento.config import LedgerSettings
from pimento.errors import PrivacyParameterError, UnsupportedQuery
from pimento.mechanisms import Budget, GlobalLaplace, Ledger, guarded_release, mechanism_for
from pimento.mechanisms import smooth
from pimento.mechanisms.smooth import (
    _LOG2_BITS,
    _LOG2_FLOOR_STEPS,
    _LOG2_GRID,
    _RS_MAX_BITS,
    _Y_SPAN,
    BOUND_SCALE_MAX,
    MAX_RELATIONS,
    MIN_BETA,
    Release,
    SmoothLaplace,
    SmoothQuartic,
    log2_steps_up,
    pow2_steps_upper,
)
from pimento.sensitivity.envelope import MIN_BETA as SEARCH_MIN_BETA


def test_min_beta_is_the_sensitivity_search_floor():
    assert MIN_BETA == Fraction(SEARCH_MIN_BETA)


@pytest.mark.parametrize("delta", ["1e-6", None], ids=["laplace", "quartic"])
def test_a_tiny_epsilon_on_a_join_is_refused_at_admission(delta):
    with pytest.raises(PrivacyParameterError, match="DP bound of RS") as caught:
        mechanism_for("1e-5", delta).for_relations(2)
    assert "epsilon of at least about" in (caught.value.hint or "")
    # a single relation needs no bound: the same epsilon is a plain Laplace release
    assert isinstance(mechanism_for("1e-5", delta).for_relations(1), GlobalLaplace)


def test_the_hint_names_an_epsilon_that_is_admitted():
    with pytest.raises(PrivacyParameterError) as caught:
        mechanism_for("1e-5").for_relations(2)
    smallest = caught.value.hint.split("about ")[1].split(",")[0]
    assert mechanism_for(smallest).for_relations(2)._bound_law()[0] <= BOUND_SCALE_MAX


def test_a_share_too_small_for_any_epsilon_says_so():
    with pytest.raises(PrivacyParameterError) as caught:
        mechanism_for("1000", share="0.001").for_relations(3)
    assert "rs_bound_share" in (caught.value.hint or "")


def test_too_many_relations_are_refused():
    mechanism_for("1", "1e-6").for_relations(MAX_RELATIONS)
    with pytest.raises(UnsupportedQuery, match="relations"):
        mechanism_for("1", "1e-6").for_relations(MAX_RELATIONS + 1)


def test_beta_below_the_floor_is_refused_at_admission(monkeypatch):
    monkeypatch.setattr(smooth, "MIN_BETA", Fraction(1, 10))  # quartic beta at eps 0.5 is 0.045
    with pytest.raises(PrivacyParameterError, match="beta"):
        mechanism_for("0.5").for_relations(2)


@pytest.mark.parametrize("delta", ["1e-6", None], ids=["laplace", "quartic"])
def test_nothing_is_charged_for_an_out_of_range_mechanism(tmp_path, delta):
    ledger = Ledger(tmp_path / "l.sqlite", LedgerSettings(epsilon_cap="1", delta_cap="1e-5"))
    try:
        with pytest.raises(PrivacyParameterError):
            guarded_release(ledger, mechanism_for("1e-5", delta), analyst="ann", database="db", sql="q", true_value=3, rs=2)
        assert ledger.spent("db") == Budget.zero()
        assert ledger.audit_rows() == []
    finally:
        ledger.close()


def _edge_mechanisms() -> list[SmoothLaplace | SmoothQuartic]:
    """Mechanisms at the edge of the range: b just under BOUND_SCALE_MAX, and ordinary ones."""
    found = []
    for delta, share in [("1e-6", None), (None, None), ("1e-30", "0.9"), (None, "1/1000"), ("0.5", None)]:
        for eps in ["7.8e-5", "1e-4", "0.001", "1", "100", "1000000"]:
            try:
                found.append(mechanism_for(eps, delta, share=share).for_relations(2))
            except PrivacyParameterError:
                continue
    return found


def _huge_draws(monkeypatch, draws):
    real = smooth.rounded_laplace
    it = iter(draws)

    def rigged(scale, grid, rng):
        if grid == _LOG2_GRID:  # the bound's draw; the value's noise is drawn on the count's grid
            return next(it)
        return real(scale, grid, rng)

    monkeypatch.setattr(smooth, "rounded_laplace", rigged)


RS_VALUES = [Fraction(0), Fraction(1, 10**40), Fraction(7, 3), Fraction(2**2000 + 1, 3), Fraction(2**9000, 3)]


def test_admitted_mechanisms_release_for_any_rs_and_any_draw(monkeypatch):
    widest = sorted(_edge_mechanisms(), key=lambda m: m._bound_law()[0])
    mechanisms = [widest[0], *widest[-4:]]  # an ordinary one and the four widest bounds
    assert {m.noise for m in mechanisms[1:]} == {"laplace", "quartic"}
    assert widest[-1]._bound_law()[0] > BOUND_SCALE_MAX * Fraction(9, 10)  # the edge is exercised
    draws = [0, 10**12, -(10**12)]
    for mech in mechanisms:
        for rs in RS_VALUES:
            for m in draws:
                _huge_draws(monkeypatch, [m])
                outcome = mech.release(5, rs, rng=random.Random(1))
                data = outcome.release.to_dict()
                text = json.dumps(data, allow_nan=False)  # finite floats only: JSON has no infinity
                back = Release.from_dict(json.loads(text))
                assert back == outcome.release
                assert abs(data["noise_scale_upper"]) <= sys.float_info.max
                json.dumps(outcome.private.to_dict(), allow_nan=False)


def test_the_bound_is_clamped_to_public_ends(monkeypatch):
    mech = mechanism_for("1", "1e-6").for_relations(2)
    top = mech._top_steps()
    _huge_draws(monkeypatch, [10**15, -(10**15)])
    high, _ = mech.rs_upper(Fraction(3), random.Random(0))
    low, _ = mech.rs_upper(Fraction(3), random.Random(0))
    assert high == pow2_steps_upper(top) >= 2**_RS_MAX_BITS
    assert low == pow2_steps_upper(_LOG2_FLOOR_STEPS) == Fraction(1, 2**64)


@pytest.mark.parametrize("mech", _edge_mechanisms(), ids=lambda m: f"{m.noise}-{float(m.epsilon):g}-{float(m.share):g}")
def test_the_top_clamp_is_reached_only_beyond_the_quantiles_span(mech):
    """Clamping U down is safe only if it happens where the quantile already counts a miss:
    k > top implies m h > 40 b + h/2 whatever RS (RS < 2^_RS_MAX_BITS), i.e. the Laplace draw Y > 40."""
    b, shift_steps = mech._bound_law()
    largest_rs_steps = log2_steps_up(Fraction(2**_RS_MAX_BITS))
    assert largest_rs_steps == _RS_MAX_BITS << _LOG2_BITS
    smallest_clamped_m = mech._top_steps() + 1 - largest_rs_steps - shift_steps
    # m = round(b Y / h) >= smallest_clamped_m implies b Y / h >= smallest_clamped_m - 1/2
    assert (smallest_clamped_m - Fraction(1, 2)) * _LOG2_GRID > _Y_SPAN * b


def test_rs_above_the_public_maximum_is_cut_not_fatal():
    """An RS above 2^2048 (no data can give it: PROOF.md section 8) still releases, in bounded time."""
    mech = mechanism_for("1", "1e-6").for_relations(2)
    outcome = mech.release(10, Fraction(2**100000 + 1, 3), rng=random.Random(2))
    assert outcome.release.to_dict()["noise_scale_upper"] == sys.float_info.max
    assert math.isfinite(outcome.release.to_dict()["noise_scale_upper"])
