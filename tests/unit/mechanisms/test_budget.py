from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import pytest
from alloc_support import CONVERSION_BYTES, refusal_peak
from hypothesis import given
from hypothesis import strategies as st

from pimento.errors import PrivacyParameterError
from pimento.mechanisms.budget import EPSILON_MAX, EPSILON_MIN, Budget, format_number, parse_number


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


# ----------------------------------------------------------------------------- issue 23: bounded inputs, total texts


def test_a_huge_exponent_is_refused_before_any_conversion():
    """'1e9999999' took 10-20 s of CPU in Decimal -> Fraction, then failed with a ValueError (a 500)."""
    for bad in ["1e9999999", "-1e9999999", "1e-9999999", "9" * 190 + "e9999", Decimal("1e9999999"), Decimal("1e-9999999")]:
        with pytest.raises(PrivacyParameterError, match="epsilon"):
            Budget.spend(bad)
        # refused from its text: converting it builds 10**9999999, 4 MB (alloc_support)
        assert refusal_peak(lambda: Budget.spend(bad), PrivacyParameterError) < CONVERSION_BYTES


@pytest.mark.parametrize(
    "bad",
    ["\u0661", "\uff11", "0.\u0665", "1\u00b2", "1_0", "0x10", "1e", "e5", "1/", "/3", "1/-3", "1//3", "1.5/2", "Infinity", "-inf", "sNaN",
     "1e-5\x00", True, False, 10**5000, Fraction(1, 3**2000), Fraction(10**800)],
    ids=lambda v: type(v).__name__ + ":" + (ascii(v)[:24] if not isinstance(v, (int, Fraction)) or abs(v) < 10**30 else "huge"),
)
def test_exotic_numbers_are_refused(bad):
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        Budget.spend(bad)


@pytest.mark.parametrize(
    "epsilon",
    ["1e-100", "1/2" + "0" * 99, "1e-7", 1e-100, 1e-7, Fraction(1, 10**100), Decimal("1e-100"), "1000001", 1e7, "0.1" + "1" * 40, "1/1001",
     Fraction(1, 2**60), "1/3" + "0" * 3],
    ids=lambda v: repr(v)[:30],
)
def test_a_spend_is_short_and_in_range(epsilon):
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        Budget.spend(epsilon)
    with pytest.raises(PrivacyParameterError, match="epsilon"):  # a Budget built directly is checked too
        Budget(parse_number(epsilon, name="epsilon")).as_spend()


@pytest.mark.parametrize("delta", ["1e-31", "1/1001", 1e-100, "1/2" + "0" * 99, Fraction(1, 3**50)], ids=lambda v: repr(v)[:30])
def test_a_delta_is_short(delta):
    with pytest.raises(PrivacyParameterError, match="delta"):
        Budget.spend("1", delta)


@pytest.mark.parametrize(
    ("epsilon", "delta"),
    [("1e-6", "1e-30"), ("1/3", "1/7"), (0.1, 1e-9), ("1000000", "0.999"), (Fraction(1, 1000), Decimal("1e-12")), (1 / 3, None), ("2.5e-6", "1/1000")],
)
def test_ordinary_spends_are_admitted(epsilon, delta):
    spend = Budget.spend(epsilon, delta)
    assert parse_number(spend.to_text()[0], name="epsilon") == spend.epsilon
    assert Budget.from_text(*spend.to_text()) == spend


def test_formatting_is_total_for_sums_and_remainders():
    """A remainder of 10 - 5e-100 (1/2 followed by 99 zeros) made format_number raise: every later request failed."""
    for value in [Fraction(10) - Fraction(1, 2 * 10**99), Fraction(1, 2**3000), Fraction(3**9000, 7), -Fraction(10**5000 + 1, 10**4999)]:
        text = format_number(value)
        if "/" in text:
            num, den = text.split("/")
            assert Fraction(Decimal(num)) / Fraction(Decimal(den)) == value
        else:
            assert Fraction(Decimal(text)) == value
    cap = Budget.of("10", "1e-3")
    eps, dlt = cap.minus(Budget(Fraction(1, 10**100), Fraction(1, 2 * 10**99))).to_text()
    assert eps.startswith("9.999") and dlt.startswith("0.000999")
    assert "epsilon=" in str(cap.minus(Budget(Fraction(1, 3**300))))
    assert Budget(Fraction(1, 7**400)).to_dict()["epsilon"].startswith("1/")


SPENDS = st.one_of(
    st.builds(Fraction, st.integers(1, 10**6), st.integers(1, 1000)),
    st.builds(lambda n, k: Fraction(n, 10**k), st.integers(1, 10**12), st.integers(0, 30)),
)


@given(st.lists(SPENDS, min_size=1, max_size=60))
def test_sums_of_admitted_spends_stay_short(parts):
    admitted = [p for p in parts if EPSILON_MIN <= p <= EPSILON_MAX]
    total = Budget.zero()
    for part in admitted:
        total = total + Budget.spend(part)
    # every admitted spend is a multiple of 1 / (lcm(1..1000) 10^30): so is every sum
    assert (LCM_1000 * 10**30) % total.epsilon.denominator == 0
    text = format_number(total.epsilon)
    assert len(text) < 1100
    assert Budget.of("100000000").minus(total).to_text()


LCM_1000 = math.lcm(*range(1, 1001))
