"""The residual-sensitivity envelope: LS_hat^(k), its exact maximisation, and RS rounded up.

For a private relation ``i`` write ``Q_i = P minus {i}``, ``E_i = [n] minus {i}`` and, for a
distance vector ``s`` over ``Q_i`` (non-negative integers),

    f_i(s) = sum over A within Q_i of T_{E_i minus A} * prod_{j in A} s_j      (multilinear, coefficients >= 0)

    LS_hat^(k) = max over i in P and |s| = k of f_i(s)
    RS_beta    = max over k >= 0 of e^{-beta k} * min(GS, LS_hat^(k)).

Range of k. The maximum over *all* k >= 0 (the paper's definition) is computed: the search
runs over the box ``[0, floor(1/beta) + 1]^d`` of distance vectors, which contains a maximiser
(PROOF.md, section 3), so ``k* <= d (floor(1/beta) + 1)``. ``k_max`` gives the classical
bound on k for reference; the issue's ``k <= floor((m-1)/beta)`` can only give an equal or
smaller value.

Exact maximisation. ``max_k e^{-beta k} min(GS, max_{|s|=k} f_i(s))`` equals the maximum of
``h_i(s) = e^{-beta |s|} min(GS, f_i(s))`` over the integer points of the orthant, found by a
branch and bound over boxes, all problems i at once, vectorised with numpy:

* incumbents: coordinate ascent from s = 1/beta and s = 0 (in one coordinate h is
  ``e^{-beta x} min(GS, P + Q x)``, whose best integer x is known in closed form);
* narrowing (:class:`_Narrowing`): a global maximiser is optimal in every coordinate, so s*_j is
  floor/ceil of ``1/beta - P_j/Q_j`` (or 0); bounding the ratio P_j/Q_j over a box (at its
  vertices: it is linear-fractional in each coordinate) shrinks the box or empties it;
* bounds (:meth:`_Search._bounds`): every factor of every term at its maximum over the box, and
  the tangent planes of the concave log-terms at the box centre (second-order tight).

A box is discarded only when it is empty after narrowing or its bound is below the best value
found times ``1 - 1e-9`` (a margin far above float error); leaves are single integer points, and
the final choice among the surviving near-ties is made on exact integers with directed-rounding
decimal arithmetic. No relaxation: the value is the exact maximum (PROOF.md, section 3).

Numbers. ``f_i(s)`` is an exact Python int. ``e^{-beta k}`` is computed with ``decimal`` at 60
significant digits (correctly rounded by ``Decimal.exp``) and then moved up by one unit in the
last place, so it is an upper bound; products are taken with ``ROUND_CEILING``. The result is a
``Fraction`` that is never below the true RS (and above it by less than 1e-55 relative).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, localcontext
from fractions import Fraction

import numpy as np

from pimento.errors import InternalError, PrivacyParameterError

__all__ = [
    "MIN_BETA",
    "Envelope",
    "check_beta",
    "exp_neg_upper",
    "k_max",
    "maximize_envelope",
    "round_up_float",
]

_PREC = 60
_MARGIN = 1e-9
#: Nodes explored before the branch and bound gives up (it has never come close; see bench).
NODE_BUDGET = 2_000_000
#: Bisections per box per round, and narrowing passes per round (measured best on the bench).
SPLITS = 1
NARROW_ROUNDS = 1
#: Boxes with at most this many integer points are evaluated point by point (cheaper for small d).
EXHAUSTIVE_POINTS = 4096


#: The smallest beta the envelope search takes: its box reaches floor(1/beta) + 1 per coordinate,
#: which must stay an exact float and far inside int64 (below it the search overflowed, or its
#: float narrowing could cut the box; RS there grows like beta^-d, noise beyond any use).
MIN_BETA = 2.0**-50


def check_beta(beta: float) -> float:
    """``beta`` as a finite float in [MIN_BETA, inf), or a PrivacyParameterError."""
    try:
        value = float(beta)
    except (TypeError, ValueError):
        raise PrivacyParameterError(f"beta must be a number, got {beta!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise PrivacyParameterError(
            f"beta must be positive and finite, got {beta!r}",
            hint="use --beta B > 0, or --epsilon E [--delta D] to derive it",
        )
    if value < MIN_BETA:
        raise PrivacyParameterError(
            f"beta = {beta!r} is below {MIN_BETA!r} (2^-50), the smallest the residual-sensitivity search supports",
            hint="use a larger epsilon (beta is about epsilon / 10): at this beta the noise would exceed any count by far",
        )
    return value


def round_up_float(value: Fraction | Decimal | int) -> float:
    """The smallest float not below ``value`` (``inf`` past the largest float), compared exactly.

    >>> round_up_float(Fraction(1, 2) + Fraction(1, 10**40)) > 0.5
    True
    """
    exact = Fraction(value)  # exact for ints, Fractions and finite Decimals
    try:
        f = float(exact)  # correctly rounded, either way
    except OverflowError:
        return math.inf if exact > 0 else -math.nextafter(math.inf, 0)
    if Fraction(f) < exact:
        f = math.nextafter(f, math.inf)
    return f


def exp_neg_upper(beta: float, k: int) -> Decimal:
    """An upper bound of e^{-beta k} (60 digits, at most 2 ulps above the true value; exactly 1 at k = 0)."""
    if k == 0:
        return Decimal(1)
    with localcontext() as ctx:
        b = Decimal(beta)  # exact: a binary float has a finite decimal expansion (up to ~770 digits)
        ctx.prec = len(b.as_tuple().digits) + len(str(abs(k))) + 2
        exponent = -(b * k)  # exact at that precision
        ctx.prec = _PREC
        return exponent.exp().next_plus()  # exp is correctly rounded (half even): one ulp up is above


def k_max(d: int, beta: float) -> int:
    """A k beyond which e^{-beta k} LS_hat^(k) never increases (PROOF.md, section 3)."""
    if d <= 0:
        return 0
    gap = -math.expm1(-beta)  # 1 - e^{-beta}, accurate for small beta
    bound = d / gap
    return max(0, math.ceil(bound * (1 + 1e-12)) + 1)


@dataclass(frozen=True)
class Envelope:
    """The maximiser of the RS envelope and the RS value (an exact upper bound)."""

    rs: Fraction
    ls: int
    k_star: int
    s_star: Mapping[str, int]
    argmax: str | None
    inner: int  # min(GS, f_{argmax}(s_star)): RS = e^{-beta k*} * inner
    k_bound: int
    nodes: int
    seconds: float

    @property
    def rs_float(self) -> float:
        return round_up_float(self.rs)


def _split(lo: np.ndarray, hi: np.ndarray, which: np.ndarray, times: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bisect every box along its widest side, ``times`` times in a row (up to 2^times children)."""
    for _ in range(times):
        widths = hi - lo
        j = widths.argmax(axis=1)
        rows = np.arange(len(which))
        wide = widths[rows, j] > 0
        mid = (lo[rows, j] + hi[rows, j]) // 2
        lo_b, hi_a = lo[wide].copy(), hi.copy()
        hi_a[rows[wide], j[wide]] = mid[wide]
        lo_b[np.arange(len(lo_b)), j[wide]] = mid[wide] + 1
        lo = np.concatenate([lo, lo_b])
        hi = np.concatenate([hi_a, hi[wide]])
        which = np.concatenate([which, which[wide]])
    return lo, hi, which


def _multilinear(coeffs: Sequence[int], s: Sequence[int]) -> int:
    """Exact f(s) = sum_mask coeffs[mask] prod_{j in mask} s_j (bit j of mask = coordinate j)."""
    vals = list(coeffs)
    for j in range(len(s) - 1, -1, -1):
        half = len(vals) // 2
        # bit j is the highest remaining bit: split into without / with j
        vals = [vals[t] + s[j] * vals[t + half] for t in range(half)]
    return vals[0]


def _multilinear_f(coeffs: Sequence[float], t: Sequence[float]) -> float:
    vals = list(coeffs)
    for j in range(len(t) - 1, -1, -1):
        half = len(vals) // 2
        tj = t[j]
        vals = [vals[k] + tj * vals[k + half] for k in range(half)]
    return vals[0]


def _coefficients(relations: Sequence[str], private: Sequence[str], i: str, te: Mapping[frozenset[str], int]) -> tuple[list[str], list[int]]:
    others = [p for p in private if p != i]
    base = frozenset(relations) - {i}
    coeffs = []
    for mask in range(1 << len(others)):
        removed = {others[j] for j in range(len(others)) if mask >> j & 1}
        key = base - removed
        if key not in te:
            raise InternalError(f"T_E for {sorted(key)} was not computed")
        value = te[key]
        if not isinstance(value, int) or value < 0:
            raise InternalError(f"T_E for {sorted(key)} is {value!r}, not a non-negative int")
        coeffs.append(value)
    return others, coeffs


class _Search:
    """Branch and bound for max over integer s in [0, U]^d of e^{-beta|s|} min(GS, f(s)).

    ``U = floor(1/beta) + 1``: for fixed other coordinates, h is ``e^{-beta x} min(GS, a x + b)``
    in coordinate x (a, b >= 0), which does not increase for x >= 1/beta, so every point can be
    moved into the box coordinate by coordinate without lowering h (PROOF.md, section 3).
    """

    def __init__(self, beta: float, gs_inner: bool):
        self.beta = beta
        self.U = math.floor(1.0 / beta) + 1
        self.best = -1.0
        self.candidates: list[tuple[float, int, tuple[int, ...]]] = []  # (value, which, s)
        self.nodes = 0

    def value(self, prob: _Problem, s: tuple[int, ...]) -> float:
        f = _multilinear_f(prob.fcoeffs, [float(x) for x in s])
        if prob.fgs is not None:
            f = min(f, prob.fgs)
        return f * math.exp(-self.beta * sum(s))

    def offer(self, v: float, which: int, s: tuple[int, ...]) -> None:
        if v >= self.best * (1 - _MARGIN):
            self.candidates.append((v, which, s))
        if v > self.best:
            self.best = v

    def _incumbents(self, coeff: np.ndarray, fgs: float | None) -> None:
        """Coordinate ascent for every problem at once (numpy), from s = 1/beta and from s = 0.

        A good lower bound early makes the search prune early. In coordinate j, h is
        e^{-beta x} min(GS, P_j + Q_j x): the best integer x is 0, floor/ceil of 1/beta - P_j/Q_j
        or floor/ceil of (GS - P_j)/Q_j, clipped to the box. Values are floats: an incumbent only
        steers pruning (with the 1e-9 margin); the final choice is exact.
        """
        n, T = coeff.shape
        d = self.narrow.d
        beta, U = self.beta, self.U
        peak = min(U, round(1 / beta))
        s = np.concatenate([np.full((n, d), peak, dtype=float), np.zeros((n, d))])
        which = np.concatenate([np.arange(n), np.arange(n)])
        pq = self.narrow.PQ[which]  # (2n, T, 2d)
        bits = self.narrow.bits
        rows = np.arange(2 * n)
        for _ in range(200):
            changed = False
            for j in range(d):
                mono = np.prod(np.where(bits[None, :, :], s[:, None, :], 1.0), axis=2)  # (2n, T)
                vals = np.matmul(mono[:, None, :], pq)[:, 0, :]
                P, Q = vals[:, j], vals[:, d + j]
                rest = s.sum(axis=1) - s[:, j]
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                    xs = [1.0 / beta - P / Q]
                    if fgs is not None:
                        xs.append((fgs - P) / Q)
                cands = [np.zeros(2 * n), s[:, j]]
                for x in xs:
                    x = np.where(np.isfinite(x), np.clip(x, 0, U), 0.0)
                    cands += [np.floor(x), np.ceil(x)]
                C = np.stack(cands, axis=1)  # (2n, c)
                f = P[:, None] + Q[:, None] * C
                if fgs is not None:
                    f = np.minimum(f, fgs)
                h = f * np.exp(-beta * (rest[:, None] + C))
                pick = h.argmax(axis=1)
                current = h[:, 1]
                better = h[rows, pick] > current * (1 + 1e-12)
                if better.any():
                    s[better, j] = C[rows[better], pick[better]]
                    changed = True
            if not changed:
                break
        mono = np.prod(np.where(bits[None, :, :], s[:, None, :], 1.0), axis=2)
        f = (mono * coeff[which]).sum(axis=1)
        if fgs is not None:
            f = np.minimum(f, fgs)
        h = f * np.exp(-beta * s.sum(axis=1))
        for r in range(2 * n):
            self.offer(float(h[r]), int(which[r]), tuple(int(x) for x in s[r]))

    def _exhaustive(self, coeff: np.ndarray, fgs: float | None, d: int) -> None:
        """Every integer point of the box [0, U]^d, for every problem (small d / large beta).

        The box holds a maximiser (PROOF.md, section 3), so this is exact like the search; which
        of the two runs depends only on d and beta, never on the data.
        """
        U, beta = self.U, self.beta
        axes = np.meshgrid(*[np.arange(U + 1, dtype=float)] * d, indexing="ij")
        grid = np.stack([a.ravel() for a in axes], axis=1)  # (G, d)
        bits = np.array([[(B >> j) & 1 for j in range(d)] for B in range(1 << d)], dtype=bool)
        mono = np.ones((len(grid), 1 << d))
        for j in range(d):
            mono[:, bits[:, j]] *= grid[:, j, None]
        f = mono @ coeff.T  # (G, n)
        if fgs is not None:
            f = np.minimum(f, fgs)
        h = f * np.exp(-beta * grid.sum(axis=1))[:, None]
        self.nodes += h.size
        best = float(h.max())
        if best <= 0.0:
            # every value is 0 (all coefficients 0): s = 0 of the first problem is a maximiser
            self.offer(0.0, 0, tuple([0] * d))
            return
        for g, which in zip(*np.nonzero(h >= best * (1 - _MARGIN)), strict=True):
            self.offer(float(h[g, which]), int(which), tuple(int(x) for x in grid[g]))

    def run_all(self, problems: list[_Problem]) -> None:
        """Branch and bound over all problems at once, one batched bound evaluation per round.

        Each round narrows every live box (:class:`_Narrowing`, dropping emptied ones), bounds it
        (:meth:`_bounds`, vectorised with numpy), records single-point boxes as candidates, drops
        every box whose bound is below the best value found (with a 1e-9 relative margin) and
        splits the rest along their widest side. A single-point box's bound is the value of h there.
        """
        d = problems[0].d
        if d == 0:
            for index, prob in enumerate(problems):
                self.offer(self.value(prob, ()), index, ())
            return
        U = self.U
        beta = self.beta
        n = len(problems)
        coeff = np.array([p.fcoeffs for p in problems])  # (n, T)
        if (U + 1) ** d <= EXHAUSTIVE_POINTS:
            self._exhaustive(coeff, problems[0].fgs, d)
            return
        logc = np.array([p.logc for p in problems])
        fgs = problems[0].fgs
        bits = problems[0].bits  # (T, d)
        bbool = bits.astype(bool)
        vbits = bbool  # vertices of a box use the same 0/1 patterns
        lo = np.zeros((n, d), dtype=np.int64)
        hi = np.full((n, d), U, dtype=np.int64)
        which = np.arange(n)
        peak = 1.0 / beta
        self.narrow = _Narrowing(coeff, d, beta, capped=fgs is not None)
        self._incumbents(coeff, fgs)
        while len(which):
            lo, hi, keep = self.narrow.apply(lo, hi, which)
            lo, hi, which = lo[keep], hi[keep], which[keep]
            if not len(which):
                break
            self.nodes += len(which)
            if self.nodes > NODE_BUDGET:
                raise InternalError(
                    "the envelope search exceeded its node budget",
                    hint="report this query; a larger beta makes the search smaller",
                )
            bound = np.empty(len(which))
            for start in range(0, len(which), 1024):
                sl = slice(start, start + 1024)
                bound[sl] = self._bounds(lo[sl], hi[sl], coeff[which[sl]], logc[which[sl]], fgs, bits, bbool, vbits, peak)
            point = (lo == hi).all(axis=1)
            for idx in np.nonzero(point)[0]:
                self.offer(float(bound[idx]), int(which[idx]), tuple(int(x) for x in lo[idx]))
            live = (~point) & (bound * (1 + _MARGIN) >= self.best)
            lo, hi, which = lo[live], hi[live], which[live]
            if not len(which):
                break
            lo, hi, which = _split(lo, hi, which, SPLITS)

    def _bounds(self, lo, hi, coeff, logc, fgs, bits, bbool, vbits, peak) -> np.ndarray:
        beta = self.beta
        lo_f = lo.astype(float)
        hi_f = hi.astype(float)
        m0 = np.exp(-beta * lo_f)
        x = np.where(hi_f < peak, hi_f, lo_f)
        m1 = np.where((lo_f <= peak) & (peak <= hi_f), peak * math.exp(-1.0), x * np.exp(-beta * x))
        N, d = lo.shape
        prod = np.ones((N, bits.shape[0]))
        for j in range(d):
            prod *= np.where(bbool[None, :, j], m1[:, j, None], m0[:, j, None])
        b1 = (prod * coeff).sum(axis=1)
        if fgs is not None:
            b1 = np.minimum(b1, fgs * np.exp(-beta * lo_f.sum(axis=1)))
        out = b1.copy()
        # tangent-plane bound (second-order tight near the optimum), only where b1 cannot prune
        todo = np.nonzero((b1 * (1 + _MARGIN) >= self.best) & ~(lo == hi).all(axis=1))[0]
        if len(todo):
            lo_t, hi_t = lo_f[todo], hi_f[todo]
            centre = (lo_t + hi_t) / 2.0
            safe = np.where(centre > 0, centre, 1.0)
            half = (hi_t - lo_t) / 2.0
            logc_t = logc[todo]
            dead = ~np.isfinite(logc_t) | (bbool[None, :, :] & (hi[todo][:, None, :] == 0)).any(axis=2)
            L = np.where(dead, -np.inf, np.where(dead, 0.0, logc_t) + np.log(safe) @ bits.T - beta * centre.sum(axis=1)[:, None])
            # grad L_A . (vertex - centre) = sum_j (bits[A, j] / centre_j - beta) * sign_vj * half_j, so
            # sum_A exp(L_A + grad.offset) = exp(-beta sum_j sign_vj half_j) * F(z_v), where F is the
            # multilinear polynomial with coefficients exp(L_A) and z_vj = exp(sign_vj half_j / centre_j).
            sign = np.where(vbits, 1.0, -1.0)  # (V, d)
            top = np.max(np.where(np.isfinite(L), L, -1e300), axis=1)
            vals = np.exp(L - top[:, None])[:, None, :]  # (N, 1, T)
            z = np.exp((half / safe)[:, None, :] * sign[None, :, :])  # (N, V, d)
            vals = np.broadcast_to(vals, (len(todo), sign.shape[0], vals.shape[2]))
            for j in range(d - 1, -1, -1):
                h = vals.shape[2] // 2
                vals = vals[:, :, :h] + z[:, :, j, None] * vals[:, :, h:]
            lin = np.exp(-beta * (half[:, None, :] * sign[None, :, :]).sum(axis=2))  # (N, V)
            with np.errstate(under="ignore", over="ignore"):
                b2 = np.exp(top) * (lin * vals[:, :, 0]).max(axis=1)
            out[todo] = np.minimum(b1[todo], b2 * (1 + 1e-12))
        return out


class _Narrowing:
    """Shrink boxes to the coordinates a global maximiser can take (PROOF.md, section 3).

    For fixed other coordinates, h is ``e^{-beta x} min(GS, P_j + Q_j x)`` in x = s_j, where
    ``P_j = f(s with s_j = 0)`` and ``Q_j = df/ds_j`` are multilinear with non-negative
    coefficients in the other coordinates. ``log(P + Q x) - beta x`` is strictly concave when
    Q > 0, so the integer maximisers in x are floor/ceil of ``x* = 1/beta - P/Q`` (0 when x* <= 0;
    when Q = 0, h does not increase in x and 0 is a maximiser), and the cap GS can only move the
    maximiser down. A global maximiser is optimal in each coordinate, so s*_j lies in
    [floor(1/beta - rho_max), ceil(1/beta - rho_min)] (lower end 0 with a cap), where rho = P_j/Q_j
    ranges over the box. rho is linear-fractional in every other coordinate, so where Q_j > 0 on
    the box its range is spanned by the box's vertices; where Q_j(lo) = 0, rho >= P_j(lo)/Q_j(hi)
    (monotonicity). Always rho lies between the min and max of c_B / c_{B+j} over B not
    containing j (a weighted mediant). A box left empty holds no global maximiser.
    """

    def __init__(self, coeff: np.ndarray, d: int, beta: float, *, capped: bool):
        n, T = coeff.shape
        self.n, self.d = n, d
        self.inv = 1.0 / beta
        self.capped = capped
        # columns (problem, j) of P_j and of Q_j in the monomial basis (rows B)
        P = np.zeros((T, n * d))
        Q = np.zeros((T, n * d))
        rmin = np.full((n, d), np.inf)
        rmax = np.zeros((n, d))
        for j in range(d):
            for B in range(T):
                if (B >> j) & 1:
                    continue
                num, den = coeff[:, B], coeff[:, B | (1 << j)]
                P[B, j::d] = num
                Q[B, j::d] = den
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.where(num > 0, np.inf, np.nan))
                # a pair with both coefficients 0 carries no weight (NaN is skipped by fmin/fmax)
                rmin[:, j] = np.fmin(rmin[:, j], ratio)
                rmax[:, j] = np.fmax(rmax[:, j], ratio)
        # per problem: (T, 2d) with columns P_0..P_{d-1}, Q_0..Q_{d-1}
        self.PQ = np.concatenate([P.reshape(T, n, d), Q.reshape(T, n, d)], axis=2).transpose(1, 0, 2).copy()
        self.coeff = coeff
        low = [[B for B in range(T) if not (B >> j) & 1] for j in range(d)]
        self.idx0 = np.array(low, dtype=np.int64).reshape(d, T // 2)
        self.idx1 = self.idx0 | (1 << np.arange(d))[:, None]
        self.rmin, self.rmax = rmin, rmax
        self.bits = np.array([[(B >> j) & 1 for j in range(d)] for B in range(T)], dtype=bool)

    def apply(self, lo: np.ndarray, hi: np.ndarray, which: np.ndarray, rounds: int = NARROW_ROUNDS):
        keep = np.ones(len(which), dtype=bool)
        if not len(which):
            return lo, hi, keep
        d = self.d
        N = len(which)
        # f's coefficients, one copy per j; axis 2 + (d - 1 - l) is coordinate l
        coeff = np.broadcast_to(self.coeff[which][:, None, :], (N, d, 1 << d)).reshape((N, d) + (2,) * d)
        rmin, rmax = self.rmin[which], self.rmax[which]
        big = float(2**53)
        eye = np.eye(d, dtype=bool)
        for _ in range(rounds):
            # P_j and Q_j at every vertex of the box (over the coordinates other than j);
            # rho = P_j / Q_j is linear-fractional in each coordinate, so on a box where Q_j > 0
            # its range is spanned by those vertices. The tensor-product transform
            # [a, b] -> [a + lo_l b, a + hi_l b] along every axis l != j evaluates them;
            # along j's own axis [a, b] = [P_j, Q_j] is kept.
            lo_f, hi_f = lo.astype(float), hi.astype(float)
            t = coeff
            for l in range(d):
                axis = 2 + (d - 1 - l)
                a, b = np.take(t, 0, axis=axis), np.take(t, 1, axis=axis)
                shape = (N, d) + (1,) * (d - 1)
                own = eye[:, l][None, :]  # (1, d): row j == l keeps [a, b]
                l0 = np.where(own, 0.0, lo_f[:, l, None]).reshape(shape)
                l1 = np.where(own, 1.0, hi_f[:, l, None]).reshape(shape)
                a1 = np.where(own, 0.0, 1.0).reshape((1, d) + (1,) * (d - 1))
                t = np.stack([a + l0 * b, a1 * a + l1 * b], axis=axis)
            t = t.reshape(N, d, 1 << d)
            p = np.take_along_axis(t, self.idx0[None], axis=2)  # (N, d, 2^(d-1)): P_j at vertices
            q = np.take_along_axis(t, self.idx1[None], axis=2)  # Q_j at the same vertices
            q_lo, q_hi = q[:, :, 0], q[:, :, -1]  # all-lo and all-hi vertices (Q_j is monotone)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                rho = p / np.where(q > 0, q, 1.0)
                r_low = np.where(q_lo > 0, rho.min(axis=2), p[:, :, 0] / np.where(q_hi > 0, q_hi, 1.0))
                r_high = np.where(q_lo > 0, rho.max(axis=2), np.inf)
                r_low = np.fmax(r_low, rmin)
                r_high = np.fmin(r_high, rmax)
                # floats: widen by a relative 1e-12 and an absolute 1e-9 before rounding outwards
                x_hi = np.ceil(self.inv - r_low * (1 - 1e-12) + 1e-9)
                x_lo = np.floor(self.inv - r_high * (1 + 1e-12) - 1e-9)
            x_hi = np.where(q_hi > 0, np.nan_to_num(x_hi, nan=big), 0.0)  # Q_j = 0 on the box: s*_j = 0
            x_lo = np.where((q_hi > 0) & ~np.isnan(x_lo), x_lo, 0.0)
            if self.capped:
                x_lo = np.zeros_like(x_lo)
            new_lo = np.maximum(lo, np.clip(x_lo, 0, big).astype(np.int64))
            new_hi = np.minimum(hi, np.clip(x_hi, 0, big).astype(np.int64))  # x* <= 0: s*_j = 0
            empty = (new_lo > new_hi).any(axis=1)
            keep &= ~empty
            new_lo[empty], new_hi[empty] = lo[empty], hi[empty]
            if (new_lo == lo).all() and (new_hi == hi).all():
                break
            lo, hi = new_lo, new_hi
        return lo, hi, keep

@dataclass
class _Problem:
    """The polynomial f_i of one private relation i, exact and as scaled floats."""

    others: list[str]
    coeffs: list[int]
    fcoeffs: list[float]
    fgs: float | None
    logc: np.ndarray
    bits: np.ndarray
    vertex_bits: np.ndarray

    @property
    def d(self) -> int:
        return len(self.others)


def maximize_envelope(
    relations: Sequence[str],
    private: Sequence[str],
    te: Mapping[frozenset[str], int],
    beta: float,
    *,
    gs: int | None = None,
) -> Envelope:
    """Exact RS_beta from the T_E values (keys: frozensets of kept aliases; the empty set maps to 1)."""
    started = time.perf_counter()
    beta = check_beta(beta)
    if gs is not None and (not isinstance(gs, int) or gs < 0):
        raise InternalError(f"GS must be a non-negative int or None, got {gs!r}")
    priv = [a for a in relations if a in set(private)]
    if not priv:
        return Envelope(Fraction(0), 0, 0, {}, None, 0, 0, 0, time.perf_counter() - started)
    d = len(priv) - 1
    K = k_max(d, beta)
    search = _Search(beta, gs is not None)
    raw = [_coefficients(relations, priv, i, te) for i in priv]
    top = max(max(c) for _, c in raw) or 1
    bits = np.array([[(mask >> j) & 1 for j in range(d)] for mask in range(1 << d)], dtype=float).reshape(1 << d, d)
    problems: list[_Problem] = []
    for others, coeffs in raw:
        fco = [c / top for c in coeffs]  # int / int is correctly rounded, even for huge ints
        logc = np.array([math.log(c) if c > 0 else -np.inf for c in fco])
        problems.append(_Problem(others, coeffs, fco, None if gs is None else gs / top, logc, bits, bits.astype(bool)))
    search.run_all(problems)

    # Exact choice among near-ties.
    best: tuple[Decimal, int, int, tuple[int, ...], int] | None = None
    for v, which, s in search.candidates:
        if v < search.best * (1 - _MARGIN):
            continue
        inner = _multilinear(problems[which].coeffs, s)
        if gs is not None:
            inner = min(inner, gs)
        k = sum(s)
        with localcontext() as ctx:
            ctx.prec = _PREC
            ctx.rounding = ROUND_CEILING
            value = exp_neg_upper(beta, k) * inner
        key = (value, -k, which, s, inner)
        if best is None or (key[0], key[1]) > (best[0], best[1]):
            best = key
    if best is None:
        raise InternalError("the envelope search found no candidate")
    value, negk, which, s, inner = best
    others = problems[which].others
    s_star = {p: 0 for p in priv}
    for name, x in zip(others, s, strict=True):
        s_star[name] = x
    ls = max(p.coeffs[0] for p in problems)  # T_{E_i}: mask 0
    if gs is not None:
        ls = min(ls, gs)
    return Envelope(
        rs=Fraction(value),
        ls=ls,
        k_star=-negk,
        s_star=s_star,
        argmax=priv[which],
        inner=inner,
        k_bound=K,
        nodes=search.nodes,
        seconds=time.perf_counter() - started,
    )
