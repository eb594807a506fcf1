"""Exact privacy budgets: ``Budget(epsilon, delta)`` with Fraction parts.

No float ever decides a spend: parameters are parsed into :class:`fractions.Fraction`
(a float is read through its shortest decimal text, so ``0.1`` is exactly ``1/10``),
sums and comparisons are exact, and the value round-trips through :meth:`Budget.to_text`.

    >>> Budget.of("0.1", "1e-6") + Budget.of(0.2)
    Budget(epsilon=Fraction(3, 10), delta=Fraction(1, 1000000))
    >>> Budget.of("0.3").fits_within(Budget.of("0.1") + Budget.of("0.2"))
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Union

from pimento.errors import InternalError, PrivacyParameterError

__all__ = ["Budget", "NumberLike", "format_number", "parse_number"]

NumberLike = Union[str, int, Fraction, float, Decimal]

#: Refuse absurd inputs (a 10,000-digit denominator is a typo or an attack, not a budget).
_MAX_DIGITS = 200


def parse_number(value: NumberLike, *, name: str) -> Fraction:
    """Read ``value`` exactly as a Fraction; NaN, infinities and garbage raise PrivacyParameterError.

    Strings may be decimals (``"0.1"``, ``"1e-5"``) or fractions (``"1/3"``). Floats are
    read through ``str(x)``, their shortest round-trip decimal, so ``0.1`` is ``1/10``.
    Booleans are refused (``True`` is not a privacy parameter).
    """
    if isinstance(value, bool):
        raise PrivacyParameterError(f"{name} must be a number, got {value!r}")
    if isinstance(value, Fraction):
        result = value
    elif isinstance(value, int):
        result = Fraction(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise PrivacyParameterError(f"{name} must be a finite number, got {value!r}")
        result = Fraction(str(value))
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise PrivacyParameterError(f"{name} must be a finite number, got {value!r}")
        result = Fraction(value)
    elif isinstance(value, str):
        text = value.strip()
        if not text or len(text) > _MAX_DIGITS:
            raise PrivacyParameterError(f"{name} must be a number like 0.5, 1e-6 or 1/3, got {value!r}")
        try:
            if "/" in text:
                result = Fraction(text)
            else:
                dec = Decimal(text)
                if not dec.is_finite():
                    raise PrivacyParameterError(f"{name} must be a finite number, got {value!r}")
                result = Fraction(dec)
        except (ValueError, ZeroDivisionError, InvalidOperation):
            raise PrivacyParameterError(f"{name} must be a number like 0.5, 1e-6 or 1/3, got {value!r}") from None
    else:
        raise PrivacyParameterError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if len(str(result.numerator)) + len(str(result.denominator)) > _MAX_DIGITS:
        raise PrivacyParameterError(f"{name} has too many digits: {value!r}")
    return result


def format_number(value: Fraction) -> str:
    """Exact text for a Fraction: a decimal when it terminates (``"0.1"``, ``"1e-05"``), else ``"1/3"``.

    :func:`parse_number` reads it back to the same Fraction.
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
        return f"{value.numerator}/{value.denominator}"
    digits = max(twos, fives)
    scaled = abs(value.numerator) * (10**digits // value.denominator)
    sign = "-" if value < 0 else ""
    body = str(scaled).rjust(digits + 1, "0")
    whole, frac = body[: len(body) - digits], body[len(body) - digits :].rstrip("0")
    text = f"{sign}{whole}.{frac}" if frac else f"{sign}{whole}"
    if parse_number(text, name="value") != value:  # pragma: no cover - defensive
        raise InternalError(f"format_number lost precision on {value!r}")
    return text


@dataclass(frozen=True)
class Budget:
    """A privacy cost or cap (epsilon, delta), exact. ``delta == 0`` is pure epsilon-DP.

    Construct with :meth:`of` (parses and validates) or directly with Fractions (validated
    in ``__post_init__``). epsilon >= 0 and 0 <= delta < 1; a *spend* additionally needs
    epsilon > 0 (see :meth:`as_spend`).
    """

    epsilon: Fraction
    delta: Fraction = Fraction(0)

    def __post_init__(self) -> None:
        eps, delta = self.epsilon, self.delta
        if not isinstance(eps, Fraction) or not isinstance(delta, Fraction):
            raise InternalError("Budget parts must be Fractions; use Budget.of(...) to parse other types")
        if eps < 0:
            raise PrivacyParameterError(f"epsilon must be >= 0, got {format_number(eps)}")
        if delta < 0 or delta >= 1:
            raise PrivacyParameterError(f"delta must be in [0, 1), got {format_number(delta)}")

    @classmethod
    def of(cls, epsilon: NumberLike, delta: NumberLike | None = None) -> Budget:
        """Parse a budget; ``delta=None`` means 0 (pure epsilon-DP)."""
        eps = parse_number(epsilon, name="epsilon")
        dlt = Fraction(0) if delta is None else parse_number(delta, name="delta")
        return cls(eps, dlt)

    @classmethod
    def spend(cls, epsilon: NumberLike, delta: NumberLike | None = None) -> Budget:
        """Parse the cost of one release: epsilon > 0 and, if given, 0 < delta < 1."""
        eps = parse_number(epsilon, name="epsilon")
        dlt = None if delta is None else parse_number(delta, name="delta")
        if dlt is not None and not 0 < dlt < 1:
            raise PrivacyParameterError(
                f"delta must be in (0, 1), got {format_number(dlt)}",
                hint="omit delta for pure epsilon-DP, or pass e.g. --delta 1e-6",
            )
        if eps <= 0:
            raise PrivacyParameterError(
                f"epsilon must be > 0, got {format_number(eps)}", hint="pass a positive epsilon such as --epsilon 0.5"
            )
        return cls(eps, dlt if dlt is not None else Fraction(0))

    def as_spend(self) -> Budget:
        """This budget, checked to be a valid cost of one release (epsilon > 0)."""
        if self.epsilon <= 0:
            raise PrivacyParameterError(
                f"epsilon must be > 0, got {format_number(self.epsilon)}",
                hint="pass a positive epsilon such as --epsilon 0.5",
            )
        return self

    @classmethod
    def zero(cls) -> Budget:
        return cls(Fraction(0), Fraction(0))

    def __add__(self, other: Budget) -> Budget:
        if not isinstance(other, Budget):
            return NotImplemented
        delta = self.delta + other.delta
        if delta >= 1:
            raise PrivacyParameterError(
                f"total delta {format_number(delta)} would reach 1: no guarantee is left",
                hint="use a much smaller delta",
            )
        return Budget(self.epsilon + other.epsilon, delta)

    def minus(self, other: Budget) -> Budget:
        """What is left of ``self`` after ``other`` (floored at zero per part)."""
        return Budget(max(Fraction(0), self.epsilon - other.epsilon), max(Fraction(0), self.delta - other.delta))

    def fits_within(self, cap: Budget) -> bool:
        """True iff both parts are at most the cap's (exact comparison)."""
        return self.epsilon <= cap.epsilon and self.delta <= cap.delta

    @property
    def is_pure(self) -> bool:
        return self.delta == 0

    def to_text(self) -> tuple[str, str]:
        """Exact text of (epsilon, delta), as stored in the ledger."""
        return format_number(self.epsilon), format_number(self.delta)

    @classmethod
    def from_text(cls, epsilon: str, delta: str) -> Budget:
        return cls(parse_number(epsilon, name="epsilon"), parse_number(delta, name="delta"))

    def to_dict(self) -> dict[str, object]:
        eps, dlt = self.to_text()
        return {"epsilon": eps, "delta": dlt, "epsilon_float": float(self.epsilon), "delta_float": float(self.delta)}

    def __str__(self) -> str:
        eps, dlt = self.to_text()
        return f"(epsilon={eps}, delta={dlt})"

