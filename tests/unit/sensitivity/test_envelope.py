"""The envelope maximisation against an exhaustive evaluation over a generous region.

The code searches the box [0, floor(1/beta) + 1]^d (PROOF.md, section 3); here every integer
point with |s| <= 10/beta + 10 is evaluated with numpy (a bound that does not repeat the code's),
for random T_E (zeros, ties, non-monotone values), GS caps and small beta, so the box and the
pruning by narrowing and bounds are checked where it matters. The directed rounding is checked
against 120-digit arithmetic.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pimento.sensitivity.envelope as envelope_module
from pimento.sensitivity import maximize_envelope
from pimento.errors import PrivacyParameterError
from pimento.sensitivity.envelope import MIN_BETA, exp_neg_upper, round_up_float

from ._brute import rs_brute


def box_brute(relations, private, te, beta, gs=None):
    """max over i in P and s with |s| <= K of e^{-beta |s|} min(GS, f_i(s)) (floats).

    K = ceil(10 / beta) + 10 is a generous bound chosen independently of the code's box
    (``floor(1/beta) + 1`` per coordinate): e^{-beta k} (1 + k)^d is far past its peak there for d <= 3.
    """
    priv = [a for a in relations if a in private]
    d = len(priv) - 1
    K = math.ceil(10 / beta) + 10
    if d:
        grid = np.stack(np.meshgrid(*[np.arange(K + 1)] * d, indexing="ij"), axis=-1).reshape(-1, d)
        grid = grid[grid.sum(axis=1) <= K]
    else:
        grid = np.zeros((1, 0))
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
    # 1/beta integer and not (0.4, 0.3, 0.15): the maximiser can sit at ceil(1/beta) = floor(1/beta) + 1
    beta = draw(st.sampled_from([0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 1.0]))
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


def _exp_neg(beta: float, k: int, digits: int = 120) -> Decimal:
    """e^{-beta k} to ``digits`` significant digits (the product beta * k is exact)."""
    with localcontext() as ctx:
        ctx.prec = 2000  # a binary float has at most ~770 significant decimal digits
        exponent = -(Decimal(beta) * k)
        ctx.prec = digits
        return exponent.exp()


@pytest.mark.parametrize("beta", [0.4, 0.55, 0.35, 0.26, 0.21, 0.15])
def test_envelope_reaches_ceil_of_one_over_beta(search_mode, beta):
    """T_{} = 1, T_a = T_b = 0: RS = max_s s e^{-beta s}, at s = ceil(1/beta) for these betas.

    At beta = 0.4 that is 3 e^{-1.2} = 0.9036; a box cut to floor(1/beta) gives 2 e^{-0.8} = 0.8987.
    """
    te = {frozenset(): 1, frozenset({"a"}): 0, frozenset({"b"}): 0}
    env = maximize_envelope(["a", "b"], ["a", "b"], te, beta)
    best = max(range(0, 100), key=lambda s: s * math.exp(-beta * s))
    assert best == math.ceil(1 / beta)
    true = best * _exp_neg(beta, best)
    assert env.k_star == best and env.inner == best
    assert Decimal(env.rs.numerator) / Decimal(env.rs.denominator) >= true
    assert float(env.rs) == pytest.approx(float(true), rel=1e-12)
    if beta == 0.4:
        assert round(float(env.rs), 4) == 0.9036


@settings(max_examples=400, deadline=None)
@given(
    beta=st.one_of(st.floats(1e-9, 20.0), st.sampled_from([0.1, 0.4, 1 / 3, 0.05, 1e-6, 2.0**-30])),
    fraction=st.floats(0.0, 1.0),
)
def test_exp_neg_upper_is_above_the_true_value_and_within_two_units(beta, fraction):
    """exp_neg_upper(beta, k) >= e^{-beta k} (120 digits), and above it by at most 2 units in the 60th digit."""
    k = 1 + min(10**9, int(fraction * 30 / beta))  # beta k up to ~50, as in the envelope (k <= d (1/beta + 1))
    got = exp_neg_upper(beta, k)
    true = _exp_neg(beta, k)
    assert got >= true, (beta, k)
    with localcontext() as ctx:
        ctx.prec = 120
        assert (got - true) / true <= Decimal("2e-59"), (beta, k)


def test_exp_neg_upper_is_one_at_zero_and_positive_far_out():
    assert exp_neg_upper(0.3, 0) == 1
    assert exp_neg_upper(50.0, 10**7) > 0  # e^{-5e8} underflows the decimal context: still an upper bound


@settings(max_examples=300, deadline=None)
@given(
    numerator=st.integers(0, 10**80),
    denominator=st.integers(1, 10**80),
    nudge=st.sampled_from([0, 1, -1]),
)
def test_round_up_float_is_the_smallest_float_not_below(numerator, denominator, nudge):
    value = Fraction(numerator, denominator)
    if nudge:  # a value a hair above or below a float, where 28-digit decimal division rounds wrongly
        value = max(Fraction(0), Fraction(float(value)) + nudge * Fraction(1, 10**60))
    f = round_up_float(value)
    assert Fraction(f) >= value
    assert Fraction(math.nextafter(f, -math.inf)) < value or f == 0.0


def test_round_up_float_regressions():
    # 1/2 + 1e-40 became 0.5 through a 28-digit Decimal division (rounded down, below the value)
    assert round_up_float(Fraction(1, 2) + Fraction(1, 10**40)) == math.nextafter(0.5, 1)
    assert round_up_float(Decimal("0.5000000000000000000000000000000000000001")) == math.nextafter(0.5, 1)
    assert round_up_float(Fraction(10**400)) == math.inf
    assert round_up_float(7) == 7.0


@pytest.mark.parametrize("beta", [1e-19, 1e-25, 1e-300, 5e-324])
def test_beta_below_the_supported_minimum_is_a_parameter_error(beta):
    """Was an OverflowError (exit 70) from the search box for beta < ~2^-62 with two or more private relations."""
    te = {frozenset(): 1, frozenset({"a"}): 7, frozenset({"b"}): 7}
    with pytest.raises(PrivacyParameterError):
        maximize_envelope(["a", "b"], ["a", "b"], te, beta)


@pytest.mark.parametrize("m", [2, 3])
def test_envelope_is_exact_at_the_smallest_beta(m):
    """At beta = 2^-50 the maximiser sits near 1/beta = 2^50: still found exactly, rounded up."""
    rels = [f"R{i}" for i in range(m)]
    te = {frozenset(c): (1 if not c else 7 * len(c)) for n in range(m) for c in combinations(rels, n)}
    env = maximize_envelope(rels, rels, te, MIN_BETA)
    rs = Decimal(env.rs.numerator) / Decimal(env.rs.denominator)
    if m == 2:  # f(s) = 7 + s: the best integer is next to 1/beta - 7
        peak = 2**50 - 7
        true = max((7 + s) * _exp_neg(MIN_BETA, s) for s in (peak - 1, peak, peak + 1))
        assert rs >= true and float(rs) == pytest.approx(float(true), rel=1e-15)
    assert env.k_star > 2**49
