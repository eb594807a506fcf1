"""Exact numbers from text: the one grammar of every privacy parameter and setting, and its text back.

:func:`parse_number` reads a number exactly (a :class:`fractions.Fraction`) from a decimal
(``"0.1"``, ``"1e-5"``), a fraction (``"1/3"``), an int, a float (through its shortest text, so
``0.1`` is ``1/10``), a Decimal or a Fraction, bounding the text (digits, exponent, denominator)
before converting anything; :func:`format_number` writes any Fraction back exactly. The budget
(:mod:`pimento.mechanisms.budget`) and the configuration (:mod:`pimento.config`) both read numbers
here, so a value the custodian writes in ``pimento.toml`` and one an analyst sends follow one rule.

    >>> parse_number("1/3", name="epsilon"), format_number(parse_number("1e-5", name="delta"))
    (Fraction(1, 3), '0.00001')
"""

from __future__ import annotations

import math
import re
import sys
from decimal import Decimal
from fractions import Fraction
from typing import Union

from pimento.errors import ConfigError, InternalError, PrivacyParameterError

__all__ = ["MAX_BITS", "MAX_DIGITS", "MIN_MEMORY_BYTES", "NumberLike", "display_float", "format_number", "json_number", "parse_number",
           "parse_size", "short_number", "shown"]

NumberLike = Union[str, int, Fraction, float, Decimal]

#: Refuse absurd inputs (a 10,000-digit denominator is a typo or an attack, not a budget).
MAX_DIGITS = 200
#: Bits of an int of MAX_DIGITS decimal digits (with room): checked before any int is turned to text.
MAX_BITS = 700
#: The only number texts read (ASCII digits; no underscores, no "Infinity"): a decimal with an
#: optional exponent, or a fraction of two integers. The exponent is bounded before conversion.
_DECIMAL_TEXT = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:[eE]([+-]?[0-9]+))?")
_FRACTION_TEXT = re.compile(r"[+-]?[0-9]+/[0-9]+")


def _bad(name: str, value: object) -> PrivacyParameterError:
    return PrivacyParameterError(f"{name} must be a number like 0.5, 1e-6 or 1/3, got {shown(value)}")


def shown(value: object) -> str:
    """``repr(value)`` cut to 60 characters (an error message never echoes a huge input)."""
    text = repr(value) if not isinstance(value, int) or value.bit_length() < MAX_BITS else f"an integer of {value.bit_length()} bits"
    return text if len(text) <= 60 else text[:57] + "..."


def _from_text(text: str, name: str, value: object) -> Fraction:
    """Read a number text by the grammar above; the exponent is bounded before anything is converted."""
    if _FRACTION_TEXT.fullmatch(text):
        num, den = text.split("/")
        if int(den) == 0:
            raise _bad(name, value)
        return Fraction(int(num), int(den))
    match = _DECIMAL_TEXT.fullmatch(text)
    if match is None:
        lowered = text.lower().lstrip("+-")
        if lowered in ("inf", "infinity", "nan", "snan"):
            raise PrivacyParameterError(f"{name} must be a finite number, got {shown(value)}")
        raise _bad(name, value)
    mantissa, exponent = match.group(1), match.group(2)
    power = int(exponent) if exponent else 0
    if abs(power) > 2 * MAX_DIGITS:  # 10^|power| alone would exceed the digit limit: refused unconverted
        raise PrivacyParameterError(f"{name} has too many digits: {shown(value)}")
    return Fraction(Decimal(mantissa)) * Fraction(10) ** power


def parse_number(value: NumberLike, *, name: str) -> Fraction:
    """Read ``value`` exactly as a Fraction; NaN, infinities and garbage raise PrivacyParameterError.

    Strings may be decimals (``"0.1"``, ``"1e-5"``) or fractions (``"1/3"``), in ASCII digits;
    an exponent beyond +-400 or more than 200 digits in all is refused before any conversion (so
    ``"1e9999999"`` costs nothing). Floats are read through ``str(x)``, their shortest round-trip
    decimal, so ``0.1`` is ``1/10``. Booleans are refused (``True`` is not a privacy parameter).
    Everything :func:`format_number` writes for a value of at most 200 digits reads back.
    """
    if isinstance(value, bool):
        raise PrivacyParameterError(f"{name} must be a number, got {value!r}")
    if isinstance(value, Fraction):
        if max(value.numerator.bit_length(), value.denominator.bit_length()) > MAX_BITS:
            raise PrivacyParameterError(f"{name} has too many digits: {shown(value)}")
        result = value
    elif isinstance(value, int):
        if value.bit_length() > MAX_BITS:
            raise PrivacyParameterError(f"{name} has too many digits: {shown(value)}")
        result = Fraction(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise PrivacyParameterError(f"{name} must be a finite number, got {value!r}")
        result = _from_text(str(value), name, value)
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise PrivacyParameterError(f"{name} must be a finite number, got {shown(value)}")
        sign, digits, exponent = value.as_tuple()
        assert isinstance(exponent, int)  # finite
        if len(digits) > MAX_DIGITS or abs(exponent) > 2 * MAX_DIGITS:
            raise PrivacyParameterError(f"{name} has too many digits: {shown(value)}")
        result = Fraction(value)
    elif isinstance(value, str):
        text = value.strip()
        if not text or len(text) > MAX_DIGITS:
            raise _bad(name, value)
        result = _from_text(text, name, value)
    else:
        raise PrivacyParameterError(f"{name} must be a number, got {type(value).__name__} {shown(value)}")
    if len(str(result.numerator)) + len(str(result.denominator)) > MAX_DIGITS:
        raise PrivacyParameterError(f"{name} has too many digits: {shown(value)}")
    return result


def _int_text(n: int) -> str:
    """Decimal text of any int (``str`` refuses ints beyond 4300 digits): split in halves when long."""
    if n < 0:
        return "-" + _int_text(-n)
    if n.bit_length() <= 8192:
        return str(n)
    half = n.bit_length() * 3 // 20  # about half of its decimal digits
    high, low = divmod(n, 10**half)
    return _int_text(high) + _int_text(low).rjust(half, "0")


def format_number(value: Fraction) -> str:
    """Exact text for a Fraction: a decimal when it terminates (``"0.1"``, ``"0.00001"``), else ``"1/3"``.

    Total: any Fraction has a text, whatever its size (no digit limit here; sums and remainders
    of budgets always format). :func:`parse_number` reads it back to the same Fraction when it
    has at most 200 digits, which every admitted spend has.
    """
    den = value.denominator
    twos = fives = 0
    while den % 2 == 0:
        den //= 2
        twos += 1
    while den % 5 == 0:
        den //= 5
        fives += 1
    if den != 1:
        return f"{_int_text(value.numerator)}/{_int_text(value.denominator)}"
    digits = max(twos, fives)
    scaled = abs(value.numerator) * (10**digits // value.denominator)
    if Fraction(scaled, 10**digits) != abs(value):  # pragma: no cover - defensive
        raise InternalError(f"format_number lost precision on {value!r}")
    sign = "-" if value < 0 else ""
    body = _int_text(scaled).rjust(digits + 1, "0")
    whole, frac = body[: len(body) - digits], body[len(body) - digits :].rstrip("0")
    return f"{sign}{whole}.{frac}" if frac else f"{sign}{whole}"




#: Units of a size (``[database] memory_limit``), lower case: decimal and binary multiples of a byte.
_SIZE_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
               "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}
_SIZE_TEXT = re.compile(r"\s*([0-9]{1,15}(?:\.[0-9]{1,15})?)\s*([A-Za-z]*)\s*")
#: The smallest memory limit an engine is given.
MIN_MEMORY_BYTES = 16 * 1024**2


def parse_size(text: object, *, name: str = "memory limit") -> int:
    """Bytes of a size such as ``"4GB"``, ``"512MiB"`` or ``"1000000"``, at least :data:`MIN_MEMORY_BYTES`.

    Exact (a decimal size such as ``"1.5GB"`` is read as a Fraction, then rounded down to whole bytes).

        >>> parse_size("4GB"), parse_size("1 GiB"), parse_size("1.5GB")
        (4000000000, 1073741824, 1500000000)

    Raises:
        ConfigError: not a size, or below 16 MB.
    """
    match = _SIZE_TEXT.fullmatch(str(text)) if isinstance(text, (str, int)) and not isinstance(text, bool) else None
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _SIZE_UNITS:
        raise ConfigError(f"{name} {shown(text)} is not a size", hint='write it like "4GB", "512MB" or "2GiB"')
    value = int(Fraction(match.group(1)) * _SIZE_UNITS[unit])
    if value < MIN_MEMORY_BYTES:
        raise ConfigError(f"{name} {shown(text)} is below 16 MB", hint="give the engine at least 16MB")
    return value


def display_float(x: Fraction) -> float:
    """``float(x)``, saturated at the largest finite float (JSON has no infinity): for display, never for arithmetic."""
    try:
        return float(x)
    except OverflowError:
        return sys.float_info.max if x > 0 else -sys.float_info.max


def json_number(x: Fraction) -> int | float:
    """The JSON form of an exact value: an int when integral (and under 8192 bits), else :func:`display_float`.

        >>> json_number(Fraction(6, 2)), json_number(Fraction(1, 4))
        (3, 0.25)
    """
    return x.numerator if x.denominator == 1 and x.numerator.bit_length() <= 8192 else display_float(x)


def short_number(value: object) -> str:
    """A figure as a short decimal for people (the web page's budget meter): the integer, or 6 significant digits.

        >>> short_number("1/3"), short_number(Fraction(10)), short_number("n/a")
        ('0.333333', '10', 'n/a')
    """
    try:
        x = Fraction(str(value))
    except (ValueError, ZeroDivisionError):
        return str(value)
    return str(x.numerator) if x.denominator == 1 else f"{display_float(x):.6g}"
