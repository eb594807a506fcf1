"""The analyst's part of a grouped or summed release: :class:`GroupedRelease`, stored and read back as one dict.

A grouped COUNT, a SUM or an AVG (grouped or not) is released as one or two noisy vectors
(:class:`VectorPart`: ``count`` and/or ``sum``, one coordinate per group) under one charge.
:meth:`GroupedRelease.to_dict` writes what every edge shows: per group its key, the noisy value,
and a 95% interval (90% for an AVG: two intervals of 95% each) derived from public quantities
only (the DP upper bound of the noise scale, the declared clipping bounds); nothing here is
private. The answer cache stores exactly this dict (:func:`stored_dict`), so a cached answer reads
back the same (:meth:`GroupedRelease.from_dict`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pimento.numbers import display_float, format_number, json_number, parse_number

__all__ = ["GroupedRelease", "VectorPart", "avg_interval"]

#: An AVG's interval covers when both its SUM's and its COUNT's do: 1 - 2 * 5% (a union bound).
AVG_CONFIDENCE = Fraction(90, 100)
CONFIDENCE = Fraction(95, 100)


def _f(text: Any) -> Fraction:
    return parse_number(str(text), name="stored value")


@dataclass(frozen=True)
class VectorPart:
    """One released vector (``count`` or ``sum``): values, intervals and the mechanism's public description."""

    name: str
    values: tuple[Fraction, ...]
    intervals: tuple[tuple[Fraction, Fraction], ...]
    mechanism: str
    noise: str
    epsilon: Fraction
    delta: Fraction
    epsilon_noise: Fraction
    epsilon_rs_bound: Fraction
    beta: Fraction
    grid: Fraction
    noise_scale_upper: Fraction
    interval_basis: str

    def describe(self) -> dict[str, Any]:
        """How this vector was released (public), without its values."""
        return {
            "part": self.name, "mechanism": self.mechanism, "noise": self.noise, "epsilon": format_number(self.epsilon),
            "delta": format_number(self.delta), "epsilon_noise": format_number(self.epsilon_noise),
            "epsilon_rs_bound": format_number(self.epsilon_rs_bound), "beta": format_number(self.beta),
            "grid": format_number(self.grid), "noise_scale_upper": display_float(self.noise_scale_upper),
            "noise_scale_upper_exact": format_number(self.noise_scale_upper), "interval_basis": self.interval_basis,
        }

    def to_stored(self) -> dict[str, Any]:
        return {
            **self.describe(),
            "values": [format_number(v) for v in self.values],
            "intervals": [[format_number(lo), format_number(hi)] for lo, hi in self.intervals],
        }

    @classmethod
    def from_stored(cls, data: Mapping[str, Any]) -> VectorPart:
        return cls(
            name=str(data["part"]), values=tuple(_f(v) for v in data["values"]),
            intervals=tuple((_f(lo), _f(hi)) for lo, hi in data["intervals"]), mechanism=str(data["mechanism"]),
            noise=str(data["noise"]), epsilon=_f(data["epsilon"]), delta=_f(data["delta"]), epsilon_noise=_f(data["epsilon_noise"]),
            epsilon_rs_bound=_f(data["epsilon_rs_bound"]), beta=_f(data["beta"]), grid=_f(data["grid"]),
            noise_scale_upper=_f(data["noise_scale_upper_exact"]), interval_basis=str(data["interval_basis"]),
        )


# proof: avg-interval
def avg_interval(
    total: tuple[Fraction, Fraction], count: tuple[Fraction, Fraction], bounds: tuple[Fraction, Fraction]
) -> tuple[Fraction, Fraction]:
    """Where SUM / COUNT lies when the true SUM is in ``total`` and the true COUNT in ``count`` (public quantities).

    For a count interval above 0 the ratio is monotone in each argument, so its extremes are at the
    corners; the clipped mean is in ``bounds`` whatever the counts. Without a positive lower count
    the interval is ``bounds`` itself.
    """
    lo, hi = bounds
    if count[0] < 1:
        return lo, hi
    corners = [s / c for s in total for c in count]
    return max(min(corners), lo), min(max(corners), hi)


@dataclass(frozen=True)
class GroupedRelease:
    """A grouped or summed answer (module docstring): the groups' keys and one or two noisy vectors."""

    aggregate: str
    column: str | None
    group_by: tuple[str, ...]
    bounds: tuple[Fraction, Fraction] | None
    keys: tuple[tuple[Any, ...], ...]
    parts: tuple[VectorPart, ...]
    domain: str
    epsilon: Fraction
    delta: Fraction
    budget_split: str | None = None
    partition_selection: dict[str, Any] | None = None
    clipped_on_copy: dict[str, Any] | None = None

    def part(self, name: str) -> VectorPart | None:
        return next((p for p in self.parts if p.name == name), None)

    @property
    def confidence(self) -> Fraction:
        return AVG_CONFIDENCE if self.aggregate == "avg" else CONFIDENCE

    def groups(self) -> list[dict[str, Any]]:
        """One entry per group: key, value and interval (clamped where the true value's range is public)."""
        out: list[dict[str, Any]] = []
        for i, key in enumerate(self.keys):
            value, interval = self._value(i)
            entry: dict[str, Any] = {
                "key": list(key),
                "value": None if value is None else json_number(value),
                "value_exact": None if value is None else format_number(value),
                "interval": [json_number(interval[0]), json_number(interval[1])],
                "interval_exact": [format_number(interval[0]), format_number(interval[1])],
            }
            for part in self.parts:
                if self.aggregate == "avg" or part.name != self.aggregate:
                    entry[part.name] = json_number(part.values[i])
            out.append(entry)
        return out

    def _value(self, i: int) -> tuple[Fraction | None, tuple[Fraction, Fraction]]:
        count, total = self.part("count"), self.part("sum")
        if self.aggregate == "avg":
            assert count is not None and total is not None and self.bounds is not None
            lo, hi = self.bounds
            c, s = count.values[i], total.values[i]
            value = None if c < 1 else min(max(s / c, lo), hi)  # the clipped mean lies in the bounds: post-processing
            return value, avg_interval(total.intervals[i], count.intervals[i], self.bounds)
        part = count if self.aggregate == "count" else total
        assert part is not None
        floor = Fraction(0) if self.aggregate == "count" or (self.bounds is not None and self.bounds[0] >= 0) else None
        value, (lo, hi) = part.values[i], part.intervals[i]
        if floor is None:
            return value, (lo, hi)
        return max(value, floor), (max(lo, floor), max(hi, floor))  # a count (a sum of non-negatives) is never negative

    def to_dict(self) -> dict[str, Any]:
        """The analyst's answer (keys pinned by tests/unit/release/test_answer_keys.py)."""
        return {
            "aggregate": self.aggregate,
            "column": self.column,
            "group_by": list(self.group_by),
            "bounds": None if self.bounds is None else [format_number(b) for b in self.bounds],
            "domain": self.domain,
            "groups": self.groups(),
            "confidence": float(self.confidence),
            "epsilon": format_number(self.epsilon),
            "delta": format_number(self.delta),
            "budget_split": self.budget_split,
            "releases": [p.describe() for p in self.parts],
            "partition_selection": self.partition_selection,
            "clipped_on_copy": self.clipped_on_copy,
        }

    def to_stored(self) -> dict[str, Any]:
        """What the answer cache stores: enough to rebuild this release exactly."""
        return {
            "aggregate": self.aggregate, "column": self.column, "group_by": list(self.group_by),
            "bounds": None if self.bounds is None else [format_number(b) for b in self.bounds],
            "keys": [list(k) for k in self.keys], "parts": [p.to_stored() for p in self.parts], "domain": self.domain,
            "epsilon": format_number(self.epsilon), "delta": format_number(self.delta), "budget_split": self.budget_split,
            "partition_selection": self.partition_selection, "clipped_on_copy": self.clipped_on_copy,
        }

    @classmethod
    def from_stored(cls, data: Mapping[str, Any]) -> GroupedRelease:
        bounds: Sequence[Any] | None = data.get("bounds")
        return cls(
            aggregate=str(data["aggregate"]), column=data.get("column"), group_by=tuple(data["group_by"]),
            bounds=None if bounds is None else (_f(bounds[0]), _f(bounds[1])),
            keys=tuple(tuple(k) for k in data["keys"]), parts=tuple(VectorPart.from_stored(p) for p in data["parts"]),
            domain=str(data["domain"]), epsilon=_f(data["epsilon"]), delta=_f(data["delta"]),
            budget_split=data.get("budget_split"), partition_selection=data.get("partition_selection"),
            clipped_on_copy=data.get("clipped_on_copy"),
        )
