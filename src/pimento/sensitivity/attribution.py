"""Sensitivity value function W(U) and Shapley attribution of RS to the relations of a query.

Paper, Section 4.1: with the maximisers k*, s* of the terminal RS computation held fixed,

    W(U) = e^{-beta k*} min(GS, max_{i in U and P} T_{U minus {i}, s*}),   W({}) = 0,
    T_{E, s} = sum over A within E and P of T_{E minus A} prod_{j in A} s_j,

and phi_i = sum over U within V minus {i} of |U|! (n-|U|-1)! / n! (W(U + i) - W(U)).

``min(GS, max ...)`` is an integer, so W(U) = e^{-beta k*} * M(U) with M exact; the Shapley sums
are computed on M with Fractions and multiplied by the float e^{-beta k*} only at the end, so
sum_i phi_i = e^{-beta k*} M(V) = RS up to that one float rounding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations

from pimento.errors import InternalError

__all__ = ["Attribution", "attribute", "value_function"]


def _t_es(subset: frozenset[str], private: Sequence[str], s: Mapping[str, int], te: Mapping[frozenset[str], int]) -> int:
    """T_{E, s} for E = ``subset`` (exact int)."""
    priv = [p for p in private if p in subset]
    total = 0
    for size in range(len(priv) + 1):
        for removed in combinations(priv, size):
            weight = math.prod(s.get(j, 0) for j in removed)
            if weight == 0 and size:
                continue
            key = subset - frozenset(removed)
            if key not in te:
                raise InternalError(f"T_E for {sorted(key)} is needed by the attribution but was not computed")
            total += te[key] * weight
    return total


def value_function(
    relations: Sequence[str],
    private: Sequence[str],
    te: Mapping[frozenset[str], int],
    s_star: Mapping[str, int],
    *,
    gs: int | None = None,
) -> dict[frozenset[str], int]:
    """M(U) = min(GS, max_{i in U and P} T_{U - i, s*}) for every U (W(U) = e^{-beta k*} M(U))."""
    out: dict[frozenset[str], int] = {}
    priv = [a for a in relations if a in set(private)]
    for size in range(len(relations) + 1):
        for combo in combinations(relations, size):
            u = frozenset(combo)
            candidates = [_t_es(u - {i}, priv, s_star, te) for i in priv if i in u]
            value = max(candidates) if candidates else 0
            if gs is not None:
                value = min(value, gs)
            out[u] = value
    return out


@dataclass(frozen=True)
class Attribution:
    """W(U) for every subset (floats, for display) and the Shapley value of every relation."""

    factor: float  # e^{-beta k*} as a float
    inner: Mapping[frozenset[str], int]  # M(U)
    shapley_exact: Mapping[str, Fraction]  # phi_i / e^{-beta k*}

    @property
    def shapley(self) -> dict[str, float]:
        return {a: float(v) * self.factor for a, v in self.shapley_exact.items()}

    def w(self, subset: frozenset[str]) -> float:
        return self.inner[subset] * self.factor


def attribute(
    relations: Sequence[str],
    private: Sequence[str],
    te: Mapping[frozenset[str], int],
    s_star: Mapping[str, int],
    k_star: int,
    beta: float,
    *,
    gs: int | None = None,
) -> Attribution:
    """Shapley values of the relations for the RS computation that produced ``k_star``, ``s_star``."""
    inner = value_function(relations, private, te, s_star, gs=gs)
    n = len(relations)
    fact = [math.factorial(t) for t in range(n + 1)]
    shapley: dict[str, Fraction] = {}
    for i in relations:
        rest = [a for a in relations if a != i]
        total = Fraction(0)
        for size in range(len(rest) + 1):
            weight = Fraction(fact[size] * fact[n - size - 1], fact[n])
            for combo in combinations(rest, size):
                u = frozenset(combo)
                total += weight * (inner[u | {i}] - inner[u])
        shapley[i] = total
    return Attribution(factor=math.exp(-beta * k_star), inner=inner, shapley_exact=shapley)
