"""Which representation a column is modelled in: the declared type, or (DP-tested) the values'.

A column's declared type does not always say what it holds: SQLite keeps whatever is inserted
(Spider's ``wta_1.players.birth_date`` is a DATE column holding integers such as 19800930) and a
TEXT column may hold numbers only (``car_1.cars_data.Horsepower``). Deciding this from the data
is a data-dependent choice, so it is made with a DP test (PRIVACY.md, "Column types"):

1. each unit keeps one of its (valid, capped) rows with a non-NULL value, chosen at random;
2. the kept value is put in a class by a fixed rule (:func:`value_classes`): integer number,
   fractional number, ISO date, anything else;
3. the class histogram is released with Gaussian noise. Replacing a unit changes one one-hot
   vector into another (or into nothing): L2 sensitivity ``sqrt 2`` (:data:`TYPE_SENSITIVITY`);
4. the family is a fixed function of the noisy histogram and the declared type
   (:func:`decide_family`, post-processing).

Values that do not fit the chosen family are treated as NULL when modelling
(:func:`coerce`, a per-value rule that looks at nothing else).
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from typing import Any

import numpy as np

from pimento.synth._encode import ColumnData

__all__ = [
    "INT",
    "FRAC",
    "DATE",
    "OTHER",
    "TYPE_SENSITIVITY",
    "classes_for",
    "value_classes",
    "decide_family",
    "coerce",
    "to_datetime64",
]

INT, FRAC, DATE, OTHER = 0, 1, 2, 3
#: L2 sensitivity of one column's class histogram when a unit is replaced (one kept value per unit).
TYPE_SENSITIVITY = math.sqrt(2.0)
#: A class set wins when its noisy count exceeds the others' by this many noise standard deviations
#: of that difference...
TYPE_Z = 3.5
#: ... and the others hold at most this share of the noisy total.
TYPE_MAX_OTHER_SHARE = 0.25

_DECIMAL = re.compile(r"^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?$")
_ISO = re.compile(r"^\s*\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?\s*$")


def classes_for(declared: str) -> list[int]:
    """The classes counted for a column of declared family ``declared`` (dates only for date types)."""
    return [INT, FRAC, DATE, OTHER] if declared in ("date", "timestamp") else [INT, FRAC, OTHER]


def _number(x: Any) -> float | None:
    if isinstance(x, (bool, np.bool_)):
        return None
    if isinstance(x, (int, np.integer)):
        return float(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, str):
        # Only canonical decimals: '021' (a code with a leading zero), ' 4', '1e3' or '+5' would
        # not survive the round trip through a number, so they count as text.
        if len(x) > 40 or not _DECIMAL.match(x):
            return None
        v = float(x)
        return v if math.isfinite(v) else None
    return None


def _date(x: Any) -> np.datetime64 | None:
    if isinstance(x, np.datetime64):
        return None if np.isnat(x) else x.astype("datetime64[us]")
    if isinstance(x, (_dt.datetime, _dt.date)):
        return np.datetime64(x).astype("datetime64[us]")
    if isinstance(x, str) and _ISO.match(x):
        try:
            return np.datetime64(x.strip().replace(" ", "T")).astype("datetime64[us]")
        except ValueError:
            return None
    return None


def value_classes(values: np.ndarray, declared: str) -> np.ndarray:
    """The class of every value (a fixed per-value rule). Dates count as OTHER unless ``declared``
    is a date type."""
    dates = declared in ("date", "timestamp")
    out = np.empty(len(values), dtype=np.int64)
    for i, x in enumerate(values.tolist() if isinstance(values, np.ndarray) else list(values)):
        v = _number(x)
        if v is not None:
            out[i] = INT if float(v).is_integer() else FRAC
        elif dates and _date(x) is not None:
            out[i] = DATE
        else:
            out[i] = OTHER
    return out


def decide_family(declared: str, noisy: dict[int, float], sigma: float) -> str:
    """The modelled family from the noisy class counts (post-processing).

    A set of classes *wins* when its noisy count exceeds the other classes' noisy count by
    TYPE_Z standard deviations of that difference and the others hold at most
    TYPE_MAX_OTHER_SHARE of the noisy total. Inconclusive tests keep the declared family.
    """
    k = len(noisy)
    total = sum(noisy.values())

    def wins(group: set[int]) -> bool:
        good = sum(v for c, v in noisy.items() if c in group)
        bad = total - good
        return good - bad >= TYPE_Z * sigma * math.sqrt(k) and bad <= TYPE_MAX_OTHER_SHARE * total

    def number() -> str:
        return "integer" if noisy[FRAC] <= noisy[INT] else "real"

    if declared in ("date", "timestamp"):
        if wins({DATE}):
            return declared
        if wins({INT, FRAC}):
            return number()
        if wins({OTHER}):
            return "text"
        return declared
    if declared == "text" and wins({INT, FRAC}):
        return number()
    return declared


def to_datetime64(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """Values as datetime64[us] and a mask of those that are NULL or not dates (never raises)."""
    vals = list(values.tolist() if isinstance(values, np.ndarray) else values)
    out = np.full(len(vals), np.datetime64("NaT"), dtype="datetime64[us]")
    bad = np.ones(len(vals), dtype=bool)
    for i, x in enumerate(vals):
        d = _date(x) if x is not None else None
        if d is not None:
            out[i] = d
            bad[i] = False
    return out, bad


def coerce(col: ColumnData, family: str) -> ColumnData:
    """``col`` in ``family``: numbers as int64/float arrays, dates as datetime64[us], text as
    objects. A value that does not fit the family becomes NULL (a per-value rule)."""
    v = col.values
    null = col.null.copy()
    if family in ("integer", "real"):
        if v.dtype.kind in "iu":
            return ColumnData(family, v, null)
        if v.dtype.kind == "f":
            null |= ~np.isfinite(v)
            return ColumnData(family, np.where(null, 0.0, v), null)
        num = np.zeros(len(v), dtype=float)
        for i, x in enumerate(v.tolist()):
            if null[i]:
                continue
            f = _number(x)
            if f is None:
                null[i] = True
            else:
                num[i] = f
        if family == "integer" and np.all(num == np.round(num)) and np.all(np.abs(num) < 2**62):
            return ColumnData(family, num.astype(np.int64), null)
        return ColumnData(family, num, null)
    if family in ("date", "timestamp"):
        if v.dtype.kind == "M":
            return ColumnData(family, v.astype("datetime64[us]"), null | np.isnat(v))
        d, bad = to_datetime64(v)
        return ColumnData(family, d, null | bad)
    if family == "text" and v.dtype != object:
        vals = np.empty(len(v), dtype=object)
        vals[:] = [None if m else _text(x) for x, m in zip(v.tolist(), null.tolist())]
        return ColumnData(family, vals, null)
    return ColumnData(family, v, null)


def _text(x: Any) -> str:
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)
