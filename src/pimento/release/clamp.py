"""Released counts clamped at zero: post-processing of the noisy value, at no privacy cost.

A count cannot be negative, so a negative noisy value is reported as 0 and the interval's ends
below 0 are raised to 0 (the true count is >= 0, so the interval's coverage can only grow).
``clamped`` says whether anything changed, and ``value_unclamped`` keeps the noisy value as it
was drawn (unbiased, for analysts who average answers). Every field is a function of the noisy
value, so the neighbour-invariance rule allows it to differ with the data like the value does.

    >>> clamp_count({"value": -12, "value_exact": "-12", "interval": [-40, 16], "interval_exact": ["-40", "16"]})["value"]
    0
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from pimento.mechanisms.budget import format_number
from pimento.numbers import json_number

__all__ = ["clamp_count"]


def clamp_count(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a released count's fields) with the value and the interval clamped at zero."""
    out = dict(data)
    value = Fraction(str(data.get("value_exact", data["value"])))
    lo, hi = (Fraction(str(x)) for x in data.get("interval_exact", data["interval"]))
    out["value_unclamped"] = json_number(value)
    out["value"] = json_number(max(value, Fraction(0)))
    if "value_exact" in data:
        out["value_exact"] = format_number(max(value, Fraction(0)))
    new_lo, new_hi = max(lo, Fraction(0)), max(hi, Fraction(0))
    out["interval"] = [json_number(new_lo), json_number(new_hi)]
    if "interval_exact" in data:
        out["interval_exact"] = [format_number(new_lo), format_number(new_hi)]
    out["clamped"] = value < 0 or lo < 0
    return out
