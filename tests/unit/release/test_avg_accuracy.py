"""An average's predicted error is measured against its declared range, not its value (found by the analyst-input fuzzer).

An AVG's interval is clamped to the declared bounds, so its half-width can never exceed half their range: against a
value far from zero (a birth year near 1970 with bounds [1900, 2020]) a useless answer (the interval covers the whole
range) looked like a 3% error, and the mostly-noise refusal never fired for an AVG however small epsilon was.
"""

from __future__ import annotations

from fractions import Fraction

from pimento.release.aggregate_accuracy import GroupedEstimate

HALF_RANGE = Fraction(60)  # bounds [1900, 2020]


def test_a_useless_average_is_mostly_noise():
    estimate = GroupedEstimate((Fraction(1970),), (HALF_RANGE,), None, Fraction(90, 100), reference=HALF_RANGE)
    shown = estimate.accuracy(Fraction(1, 2))
    assert shown.relative_error == 1 and shown.mostly_noise
    warning = shown.warning()
    assert warning is not None and "half the declared bounds' range" in warning
    assert shown.to_dict()["predicted_relative_error"] == 1


def test_a_tight_average_is_not_mostly_noise_and_the_planner_uses_the_same_scale():
    rows = ({"epsilon": "0.5", "estimated_half_width_95": 12}, {"epsilon": "2", "estimated_half_width_95": 3})
    estimate = GroupedEstimate((Fraction(1970),), (Fraction(12),), None, Fraction(90, 100), reference=HALF_RANGE)
    shown = estimate.accuracy(Fraction(1, 2), rows)
    assert shown.relative_error == Fraction(1, 5) and not shown.mostly_noise
    assert shown.epsilon_for_target() == "2"  # 3 / 60 = 5% <= 10%; 12 / 60 = 20% is not


def test_a_count_is_still_relative_to_its_value():
    estimate = GroupedEstimate((Fraction(200),), (Fraction(30),), None, Fraction(95, 100))
    assert estimate.accuracy(Fraction(1, 2)).relative_error == Fraction(3, 20)
