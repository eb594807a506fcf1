from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pimento.errors import PrivacyParameterError
from pimento.mechanisms.budget import Budget, format_number, parse_number


def test_float_is_read_through_its_decimal_text():
    assert parse_number(0.1, name="epsilon") == Fraction(1, 10)
    assert parse_number("1e-5", name="delta") == Fraction(1, 100000)
    assert parse_number("1/3", name="epsilon") == Fraction(1, 3)
    assert parse_number(Decimal("0.25"), name="epsilon") == Fraction(1, 4)


def test_sum_is_exact_where_floats_are_not():
    assert 0.1 + 0.2 != 0.3
    assert Budget.of(0.1) + Budget.of(0.2) == Budget.of("0.3")
    assert Budget.of("0.3").fits_within(Budget.of(0.1) + Budget.of(0.2))
    total = Budget.zero()
    for _ in range(10):
        total = total + Budget.of("0.1", "1e-7")
    assert total == Budget.of(1, "1e-6")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "nan", "inf", "abc", "", "1/0", True, None, [1]])
def test_garbage_is_refused_with_the_value_named(bad):
    with pytest.raises(PrivacyParameterError) as info:
        Budget.spend(bad)
    assert "epsilon" in info.value.message


@pytest.mark.parametrize("eps", [0, "0", -1, "-0.5"])
def test_spend_needs_positive_epsilon(eps):
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        Budget.spend(eps, "1e-6")


@pytest.mark.parametrize("delta", [0, 1, "1.5", -1e-9, math.nan])
def test_spend_needs_delta_in_open_unit_interval(delta):
    with pytest.raises(PrivacyParameterError, match="delta"):
        Budget.spend(1, delta)


def test_pure_spend_has_zero_delta():
    assert Budget.spend("0.5").delta == 0
    assert Budget.spend("0.5").is_pure


def test_fits_within_compares_both_parts():
    cap = Budget.of(1, "1e-6")
    assert Budget.of(1, "1e-6").fits_within(cap)
    assert not Budget.of("1.0000000001", 0).fits_within(cap)
    assert not Budget.of(0, "1.0000001e-6").fits_within(cap)


def test_minus_floors_at_zero():
    assert Budget.of(1).minus(Budget.of(2)) == Budget.zero()


def test_delta_sum_reaching_one_is_refused():
    with pytest.raises(PrivacyParameterError):
        Budget.of(1, "0.6") + Budget.of(1, "0.5")


@given(st.fractions(min_value=0, max_value=10**6, max_denominator=10**12))
def test_text_round_trip_is_exact(value):
    assert parse_number(format_number(value), name="x") == value


def test_decimal_text_is_plain():
    assert format_number(Fraction(1, 100000)) == "0.00001"
    assert format_number(Fraction(5)) == "5"
    assert format_number(Fraction(1, 3)) == "1/3"
