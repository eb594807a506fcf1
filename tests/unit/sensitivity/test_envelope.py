"""The envelope maximisation against an exhaustive evaluation over the whole search box.

The box [0, floor(1/beta) + 1]^d contains a maximiser (PROOF.md, section 3); here every integer
point of it is evaluated with numpy, for random T_E (zeros, ties, non-monotone values), GS caps
and small beta, so the pruning by narrowing and bounds is checked where it matters.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pimento.sensitivity.envelope as envelope_module
from pimento.sensitivity import maximize_envelope

from ._brute import rs_brute


def box_brute(relations, private, te, beta, gs=None):
    """max over i in P and s in [0, U]^d of e^{-beta |s|} min(GS, f_i(s)) (floats), and its argmax value."""
    priv = [a for a in relations if a in private]
    d = len(priv) - 1
    U = math.floor(1 / beta) + 1
    grid = np.stack(np.meshgrid(*[np.arange(U + 1)] * d, indexing="ij"), axis=-1).reshape(-1, d) if d else np.zeros((1, 0))
    best = 0.0
    for i in priv:
        others = [p for p in priv if p != i]
        base = frozenset(relations) - {i}
        f = np.zeros(len(grid), dtype=float)
        for size in range(d + 1):
            for combo in combinations(range(d), size):
                coeff = te[base - {others[j] for j in combo}]
                f += float(coeff) * np.prod(grid[:, list(combo)], axis=1) if combo else float(coeff)
        if gs is not None:
            f = np.minimum(f, gs)
        best = max(best, float((f * np.exp(-beta * grid.sum(axis=1))).max()))
    return best


@st.composite
def envelopes(draw):
    m = draw(st.integers(2, 5))
    rels = [f"R{i}" for i in range(m)]
    private = draw(st.lists(st.sampled_from(rels), unique=True, min_size=1, max_size=min(m, 4)))
    te = {frozenset(): 1}
    for size in range(1, m):
        for combo in combinations(rels, size):
            te[frozenset(combo)] = draw(st.one_of(st.just(0), st.integers(1, 5), st.integers(1, 10**6)))
    beta = draw(st.sampled_from([0.05, 0.1, 0.2, 0.5, 1.0]))
    gs = draw(st.one_of(st.none(), st.integers(1, 10**5)))
    d = len(private) - 1
    if d >= 3 and beta < 0.1:
        beta = 0.1  # keep the exhaustive grid small
    return rels, sorted(private), te, beta, gs


@pytest.fixture(params=["default", "branch_and_bound", "search_only"])
def search_mode(request, monkeypatch):
    """``default``: small boxes are evaluated point by point; ``branch_and_bound`` forces the
    search for every box; ``search_only`` also drops the coordinate-ascent incumbents, so the
    narrowing and the bounds alone must find the maximiser (the incumbent is usually optimal)."""
    if request.param != "default":
        monkeypatch.setattr(envelope_module, "EXHAUSTIVE_POINTS", 0)
    if request.param == "search_only":
        monkeypatch.setattr(envelope_module._Search, "_incumbents", lambda self, coeff, fgs: None)
    return request.param


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=envelopes())
def test_envelope_equals_exhaustive_box(search_mode, case):
    rels, private, te, beta, gs = case
    env = maximize_envelope(rels, private, te, beta, gs=gs)
    expected = box_brute(rels, private, te, beta, gs)
    assert float(env.rs) >= expected * (1 - 1e-12)
    assert float(env.rs) == pytest.approx(expected, rel=1e-9, abs=1e-300)
    # the maximiser it reports gives that value
    if env.argmax is not None:
        i = env.argmax
        others = [p for p in private if p != i]
        base = frozenset(rels) - {i}
        inner = sum(
            te[base - set(combo)] * math.prod(env.s_star[j] for j in combo)
            for size in range(len(others) + 1)
            for combo in combinations(others, size)
        )
        if gs is not None:
            inner = min(inner, gs)
        assert inner == env.inner
        assert env.k_star == sum(env.s_star.values())


@pytest.mark.parametrize("beta", [0.3, 0.5])
def test_envelope_matches_the_k_enumeration(beta):
    """Against the independent brute force of the formula (enumerates k, then every s with |s| = k)."""
    rels = ["A", "B", "C"]
    te = {frozenset(): 1, frozenset("A"): 4, frozenset("B"): 0, frozenset("C"): 7}
    te.update({frozenset("AB"): 12, frozenset("AC"): 3, frozenset("BC"): 40})
    env = maximize_envelope(rels, rels, te, beta)
    assert float(env.rs) == pytest.approx(rs_brute(rels, rels, te, beta), rel=1e-12)


def test_envelope_zero_counts_give_zero():
    rels = ["A", "B", "C"]
    te = {frozenset(s): 0 for size in range(3) for s in combinations(rels, size)}
    te[frozenset()] = 1
    env = maximize_envelope(rels, rels, te, 0.01)
    # only T_{} = 1 is non-zero: f_i(s) = prod of the other two s_j, max e^{-beta k} (k/2)^2 at k = 2/beta
    expected = max(math.exp(-0.01 * (a + b)) * a * b for a in range(0, 202) for b in range(0, 202))
    assert float(env.rs) == pytest.approx(expected, rel=1e-12)
    assert isinstance(env.rs, Fraction)


@pytest.mark.parametrize("m", [5, 6])
def test_envelope_is_fast_enough_to_search_six_relations(m):
    """Not a timing assertion (the machine is shared): the search must stay small in boxes."""
    import random

    rnd = random.Random(m)
    rels = [f"R{i}" for i in range(m)]
    te = {}
    for size in range(m + 1):
        for combo in combinations(rels, size):
            te[frozenset(combo)] = 1 if size == 0 else int(10 ** (rnd.uniform(0, 1.5) * size))
    env = maximize_envelope(rels, rels, te, 0.01)
    assert env.nodes < 2_000
