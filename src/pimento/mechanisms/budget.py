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

from dataclasses import dataclass
from fractions import Fraction

from pimento.errors import InternalError, PrivacyParameterError
from pimento.numbers import MAX_BITS, NumberLike, format_number, parse_number

__all__ = [
    "EPSILON_MAX",
    "EPSILON_MIN",
    "SPEND_DENOMINATOR",
    "SPEND_PLACES",
    "Budget",
    "NumberLike",
    "check_spend_part",
    "format_number",
    "parse_number",
]

#: What one release (or synthetic copy) may cost, per part; checked by :meth:`Budget.as_spend`
#: before anything is charged. A spend is a decimal with at most SPEND_PLACES places or a fraction
#: whose denominator is at most SPEND_DENOMINATOR, so every sum of spends is a multiple of
#: 1 / (lcm(1..1000) 10^30): its exact text stays a few hundred digits however many are added.
SPEND_PLACES = 30
SPEND_DENOMINATOR = 1000
#: The range of a spend's epsilon: below 1e-6 a release is noise only (and a cheap oracle), above
#: 1e6 no cap makes sense. delta needs no separate minimum: the rule above makes it >= 1e-30.
EPSILON_MIN = Fraction(1, 10**6)
EPSILON_MAX = Fraction(10**6)


def _brief(value: Fraction) -> str:
    """A Fraction's exact text for a message, cut to 60 characters (never formats a huge number)."""
    if max(value.numerator.bit_length(), value.denominator.bit_length()) > MAX_BITS:
        return f"a number of {value.numerator.bit_length()} / {value.denominator.bit_length()} bits"
    text = format_number(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_spend_part(value: Fraction, *, name: str) -> Fraction:
    """``value`` (epsilon or a non-zero delta of one spend) checked to have a short exact form.

    A decimal with at most :data:`SPEND_PLACES` places or a fraction whose denominator is at most
    :data:`SPEND_DENOMINATOR` (docs/budget.md, "What a request may cost"). Public: decided from
    the number alone, before anything is charged.
    """
    den = value.denominator
    if den <= SPEND_DENOMINATOR or (10**SPEND_PLACES) % den == 0:
        return value
    raise PrivacyParameterError(
        f"{name} = {_brief(value)} is too long for a spend: a spend is a decimal with at most "
        f"{SPEND_PLACES} places or a fraction with a denominator at most {SPEND_DENOMINATOR}",
        hint=f"round {name} to a shorter number, e.g. 1e-6",
    )


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
        """Parse the cost of one release: epsilon > 0 and, if given, 0 < delta < 1, both within :meth:`as_spend`'s bounds."""
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
        return cls(eps, dlt if dlt is not None else Fraction(0)).as_spend()

    def as_spend(self) -> Budget:
        """This budget, checked to be a valid cost of one release (or synthetic copy), before any charge.

        epsilon in [EPSILON_MIN, EPSILON_MAX], and epsilon and a non-zero delta each a decimal with
        at most SPEND_PLACES places or a fraction with a denominator at most SPEND_DENOMINATOR
        (:func:`check_spend_part`): so every sum of spends stays short and exact.
        """
        if self.epsilon <= 0:
            raise PrivacyParameterError(
                f"epsilon must be > 0, got {_brief(self.epsilon)}",
                hint="pass a positive epsilon such as --epsilon 0.5",
            )
        if not EPSILON_MIN <= self.epsilon <= EPSILON_MAX:
            raise PrivacyParameterError(
                f"epsilon must be between {format_number(EPSILON_MIN)} and {format_number(EPSILON_MAX)} for one release, "
                f"got {_brief(self.epsilon)}",
                hint="below 1e-6 a release is noise only; pass e.g. --epsilon 0.5",
            )
        check_spend_part(self.epsilon, name="epsilon")
        if self.delta:
            check_spend_part(self.delta, name="delta")
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

