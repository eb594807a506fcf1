"""Column encodings: data-independent bucketing, then DP choice of the buckets that are kept.

Every modelled column becomes a small categorical attribute. Values are first mapped to a
bucket key by a data-independent rule (text and booleans: the value; integers: the value
(fine) or 2 significant digits (coarse); reals: 3 (fine) or 1 (coarse) significant digits;
dates and timestamps: the month (fine) or the year (coarse)). Which keys are kept is chosen
with Gaussian stability-based partition selection: a key is kept when its noisy number of
units exceeds a threshold that a key held by a single unit passes with probability at most
delta_column / m (m = distinct keys counted per unit). See PRIVACY.md.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import norm

__all__ = ["Encoding", "ColumnData", "bucket_keys", "select_keys", "MAX_CATEGORIES"]

#: Largest number of kept categories per attribute (the rest fall into "other").
MAX_CATEGORIES = 48
#: Distinct keys counted per unit in partition selection.
KEYS_PER_UNIT = 8
#: Fraction of units that must be covered by kept keys to use a level.
MIN_COVERAGE = 0.5

PLACEHOLDER = "[synthetic]"


@dataclass
class ColumnData:
    """A column read from the database: values (object or numeric) and a null mask."""

    family: str
    values: np.ndarray
    null: np.ndarray

    def take(self, idx: np.ndarray) -> ColumnData:
        return ColumnData(self.family, self.values[idx], self.null[idx])


@dataclass
class Encoding:
    """How one column is modelled: kept bucket keys, 'other' and NULL codes."""

    family: str
    kind: str  # "cat" (modelled) | "free" (placeholder, not modelled)
    level: str = "fine"  # "fine" | "coarse" | "public"
    keys: list[Any] = field(default_factory=list)
    weights: np.ndarray = field(default_factory=lambda: np.zeros(0))
    has_other: bool = False
    nullable: bool = True

    @property
    def size(self) -> int:
        return len(self.keys) + int(self.has_other) + int(self.nullable)

    @property
    def other_code(self) -> int:
        return len(self.keys)

    @property
    def null_code(self) -> int:
        return len(self.keys) + int(self.has_other)

    def encode(self, col: ColumnData) -> np.ndarray:
        """Codes for a column (0..k-1 kept keys, k other, last NULL)."""
        codes = np.full(len(col.values), self.other_code if self.has_other else 0, dtype=np.int64)
        if self.keys:
            keys = bucket_keys(col, self.level)
            lookup = {k: i for i, k in enumerate(self.keys)}
            mapped = np.fromiter((lookup.get(k, -1) for k in keys.tolist()), dtype=np.int64, count=len(keys))
            hit = mapped >= 0
            codes[hit] = mapped[hit]
        if self.nullable:
            codes[col.null] = self.null_code
        return codes

    def decode(self, codes: np.ndarray, rng: np.random.Generator, *, not_null: bool) -> np.ndarray:
        """Raw values for codes: a kept key decodes to a value in its bucket; 'other' to a kept key
        drawn by noisy weight; NULL to None (or, for a NOT NULL column, a kept key)."""
        n = len(codes)
        out = np.empty(n, dtype=object)
        if not self.keys:
            out[:] = None if (self.nullable and not not_null) else _default(self.family)
            return out
        codes = codes.copy()
        w = np.clip(self.weights, 0, None) + 1e-9
        w = w / w.sum()
        redraw = codes == self.other_code if self.has_other else np.zeros(n, dtype=bool)
        if not_null and self.nullable:
            redraw |= codes == self.null_code
        if redraw.any():
            codes[redraw] = rng.choice(len(self.keys), size=int(redraw.sum()), p=w)
        for i, key in enumerate(self.keys):
            sel = np.flatnonzero(codes == i)
            if sel.size:
                out[sel] = _decode_key(key, self.family, self.level, sel.size, rng)
        if self.nullable and not not_null:
            out[codes == self.null_code] = None
        return out


def _default(family: str) -> Any:
    return {"integer": 0, "real": 0.0, "boolean": False, "date": _dt.date(2000, 1, 1), "timestamp": _dt.datetime(2000, 1, 1)}.get(
        family, PLACEHOLDER
    )


def _sig_bucket(x: np.ndarray, digits: int, integer: bool) -> np.ndarray:
    """Bucket ``x`` to ``digits`` significant digits; key = lo + 1j * step (complex for np.unique)."""
    ax = np.abs(x.astype(float))
    with np.errstate(divide="ignore"):
        e = np.floor(np.log10(np.where(ax > 0, ax, 1.0))) - digits + 1
    step = np.power(10.0, e)
    if integer:
        step = np.maximum(step, 1.0)
    lo = np.floor(x.astype(float) / step) * step
    return lo + 1j * step


def public_key(x: Any) -> Any:
    """A value of a public domain in a comparable form (plain Python, integral floats as int,
    midnight timestamps as dates)."""
    if isinstance(x, np.datetime64):
        x = x.astype("datetime64[us]").item()
    elif isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, _dt.datetime) and x.time() == _dt.time(0):
        return x.date()
    return x


def bucket_keys(col: ColumnData, level: str) -> np.ndarray:
    """The bucket key of every row (meaningless where ``col.null``)."""
    fam = col.family
    v = col.values
    if level == "public":
        # A public domain lists the values themselves (no bucketing).
        out = np.empty(len(v), dtype=object)
        out[:] = [public_key(x) for x in v.tolist()]
        return out
    if fam in ("integer", "real"):
        x = np.where(col.null, 0, v).astype(float)
        if level == "fine":
            return _sig_bucket(x, 3, False) if fam == "real" else (np.round(x) + 1j).astype(complex)
        return _sig_bucket(x, 3 if fam == "integer" else 1, fam == "integer")
    if fam in ("date", "timestamp"):
        d = np.asarray(v)
        if d.dtype.kind != "M":
            d = np.array([np.datetime64(x) if x is not None else np.datetime64("NaT") for x in v], dtype="datetime64[us]")
        unit = "M" if level == "fine" else "Y"
        out = d.astype(f"datetime64[{unit}]").astype(np.int64)
        return np.where(col.null, 0, out)
    if fam == "boolean":
        return np.array([bool(x) if x is not None else False for x in v], dtype=object)
    return np.array([str(x) if x is not None else "" for x in v], dtype=object)


def _decode_key(key: Any, family: str, level: str, n: int, rng: np.random.Generator) -> Any:
    if level == "public":
        out = np.empty(n, dtype=object)
        out[:] = [key] * n
        return out
    if family in ("integer", "real"):
        c = complex(key)
        lo, step = c.real, c.imag
        if family == "integer":
            if step <= 1:
                return np.full(n, int(lo), dtype=object)
            return rng.integers(int(lo), int(lo + step), size=n).astype(object)
        if level == "fine" and step > 0:
            return np.round(rng.uniform(lo, lo + step, size=n), 6).astype(object)
        return rng.uniform(lo, lo + step, size=n).astype(object)
    if family in ("date", "timestamp"):
        if level == "fine":
            start = np.datetime64(int(key), "M").astype("datetime64[D]")
            end = (np.datetime64(int(key), "M") + 1).astype("datetime64[D]")
        else:
            start = np.datetime64(int(key), "Y").astype("datetime64[D]")
            end = (np.datetime64(int(key), "Y") + 1).astype("datetime64[D]")
        days = rng.integers(0, int((end - start).astype(int)), size=n)
        vals = (start + days).astype("datetime64[D]").astype(object)
        if family == "timestamp":
            return np.array([_dt.datetime(d.year, d.month, d.day) for d in vals], dtype=object)
        return vals
    if family == "boolean":
        return np.full(n, bool(key), dtype=object)
    return np.full(n, key, dtype=object)


def public_encoding(family: str, keys: list[Any], nullable: bool) -> Encoding:
    """An encoding over a public domain (booleans, keys of a public table): no selection needed."""
    return Encoding(family, "cat", "public", [public_key(k) for k in keys], np.ones(len(keys)), False, nullable)


def selection_sensitivity_sq(m: int = KEYS_PER_UNIT) -> float:
    """Squared L2 sensitivity of one partition-selection vector under replacement of a unit:
    up to KEYS_PER_UNIT counts go down by one and KEYS_PER_UNIT others up by one, plus the
    unit-count scalar."""
    return 2.0 * m + 1.0


def select_keys(
    keys: np.ndarray,
    present: np.ndarray,
    unit: np.ndarray,
    *,
    sigma: float,
    delta_column: float,
    keys_per_unit: int = KEYS_PER_UNIT,
    noise: Any,
    order_rng: np.random.Generator,
) -> tuple[list[Any], np.ndarray, float]:
    """Gaussian partition selection of bucket keys.

    Returns the kept keys (at most MAX_CATEGORIES, largest noisy count first), their noisy
    counts, and the noisy coverage (sum of kept noisy counts / noisy number of units with a value).
    ``noise(size)`` draws N(0, sigma^2) noise (the caller accounts for rho).
    """
    keys = keys[present]
    unit = unit[present]
    m = keys_per_unit
    tau = 1.0 + sigma * float(norm.isf(delta_column / m))
    if keys.size == 0:
        n_units_noisy = float(noise(1)[0])
        return [], np.zeros(0), 0.0
    if keys.dtype == object and not isinstance(keys[0], bool):
        uniq, inv = _unique_text(keys)
    elif keys.dtype == object:
        uniq, inv = np.unique(keys.astype(bool), return_inverse=True)
        uniq = uniq.astype(object)
    else:
        uniq, inv = np.unique(keys, return_inverse=True)
    # Distinct (unit, key) pairs in (unit, key) order, as one integer each (no n x 2 sort).
    width = np.int64(max(len(uniq), 1))
    code = np.unique(unit.astype(np.int64) * width + inv.astype(np.int64))
    pairs = np.stack([code // width, code % width], axis=1)
    # Keep at most KEYS_PER_UNIT distinct keys per unit, chosen in a random order.
    perm = order_rng.permutation(len(pairs))
    pairs = pairs[perm]
    pairs = pairs[np.argsort(pairs[:, 0], kind="stable")]
    starts = np.r_[0, np.flatnonzero(np.diff(pairs[:, 0])) + 1]
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(pairs)]))
    rank = np.arange(len(pairs)) - starts[group]
    pairs = pairs[rank < m]
    counts = np.bincount(pairs[:, 1], minlength=len(uniq)).astype(float)
    n_units = float(len(np.unique(unit)))
    noisy = counts + noise(len(counts))
    n_units_noisy = n_units + float(noise(1)[0])
    kept = np.flatnonzero(noisy > tau)
    kept = kept[np.argsort(-noisy[kept], kind="stable")][:MAX_CATEGORIES]
    coverage = float(noisy[kept].sum()) / max(n_units_noisy, 1.0)
    out_keys = [_plain(uniq[i]) for i in kept]
    return out_keys, noisy[kept], coverage


def _unique_text(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys.astype(str), return_inverse=True)`` without the fixed-width string copy
    (4 bytes per character of the longest value, per row: 5 GB for a note column at 1,000,000
    patients): a dictionary of the distinct values, then the distinct values sorted."""
    index: dict[str, int] = {}
    first = np.fromiter((index.setdefault(str(k), len(index)) for k in keys.tolist()), dtype=np.int64, count=len(keys))
    values = np.array(list(index), dtype=object)
    order = np.array(sorted(range(len(values)), key=lambda i: values[i]), dtype=np.int64)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return values[order], rank[first]


def _plain(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    return x


