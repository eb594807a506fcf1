"""Issue 26, item 4: the predicted relative error and its warning (pimento.release.accuracy), from the synthetic
copy and public inputs only; the planner's epsilon for +-10%."""

from __future__ import annotations

from fractions import Fraction

from pimento.release.accuracy import PLANNER_TARGET, Accuracy, epsilon_for

ROWS = ({"epsilon": "0.1", "estimated_half_width_95": 300.0}, {"epsilon": "0.5", "estimated_half_width_95": 60.0},
        {"epsilon": "2", "estimated_half_width_95": 15.0}, {"epsilon": "4", "estimated_half_width_95": 7.5})


def test_the_relative_error_is_the_half_width_over_the_copys_answer():
    assert Accuracy(Fraction(60), 200, Fraction(1, 2)).relative_error == Fraction(3, 10)
    assert Accuracy(Fraction(60), -200, Fraction(1, 2)).relative_error == Fraction(3, 10)
    assert Accuracy(Fraction(3), 0, Fraction(1, 2)).relative_error == 3  # a zero answer is not divided by
    assert Accuracy(Fraction(3), None, Fraction(1, 2)).relative_error is None


def test_the_warning_is_said_above_the_threshold_only():
    at = Accuracy(Fraction(100), 200, Fraction(1, 2))
    assert not at.mostly_noise and at.warning() is None  # exactly at the threshold: no warning
    above = Accuracy(Fraction(101), 200, Fraction(1, 2), ROWS)
    assert above.mostly_noise
    text = above.warning()
    assert text is not None and "mostly noise" in text and "50%" in text and "epsilon 2 " in text
    assert Accuracy(Fraction(101), 200, Fraction(2)).warning() is None  # the custodian's threshold decides
    assert Accuracy(Fraction(101), None, Fraction(1, 2)).warning() is None  # no copy: no estimate, no warning


def test_the_planner_names_the_smallest_epsilon_for_ten_percent():
    assert PLANNER_TARGET == Fraction(1, 10)
    assert epsilon_for(PLANNER_TARGET, ROWS, 150) == "2"  # 15/150 = 10%
    assert epsilon_for(PLANNER_TARGET, ROWS, 100) == "4"
    assert epsilon_for(PLANNER_TARGET, ROWS, 10) is None
    assert epsilon_for(PLANNER_TARGET, reversed(ROWS), 1000) == "0.5"  # order of rows does not matter
    fields = Accuracy(Fraction(60), 100, Fraction(1, 2), ROWS).to_dict()
    assert fields == {"predicted_relative_error": 0.6, "warn_relative_error": 0.5, "epsilon_for_10_percent": "4",
                      "noise_warning": fields["noise_warning"]} and fields["noise_warning"]


def test_the_warning_reads_well_without_a_planner_and_for_huge_errors():
    text = Accuracy(Fraction(600), 29, Fraction(1, 2)).warning()
    assert text is not None and "21 times the synthetic copy's answer 29" in text and "1/epsilon" in text and "e+" not in text
    assert "no epsilon the planner prices" in (Accuracy(Fraction(600), 29, Fraction(1, 2), ROWS[:1]).warning() or "")
