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
``h_i(s) = e^{-beta |s|} min(GS, f_i(s))`` over the integer points of the orthant.
Writing ``e^{-beta|s|} = prod_j e^{-beta s_j}``, every term of h_i is a product of one-variable
functions ``psi1(x) = x e^{-beta x}`` (j in A) and ``psi0(x) = e^{-beta x}`` (j not in A). On a box
``[lo, hi]`` each factor is bounded by its maximum over the interval (psi1 peaks at 1/beta,
psi0 at lo), which bounds h_i on the box. A best-first branch and bound over boxes (split the
widest side in two) therefore finds the exact integer maximiser: a box is discarded only when
its bound is below the best value found times ``1 - 1e-9`` (a margin far above float error),
leaves are single integer points, and the final choice among the surviving near-ties is made
on exact integers with directed-rounding decimal arithmetic. No enumeration of the simplex.

Numbers. ``f_i(s)`` is an exact Python int. ``e^{-beta k}`` is computed with ``decimal`` at 60
significant digits (correctly rounded by ``Decimal.exp``) and then moved up by one unit in the
last place, so it is an upper bound; products are taken with ``ROUND_CEILING``. The result is a
``Fraction`` that is never below the true RS (and above it by less than 1e-55 relative).
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext
from fractions import Fraction

import numpy as np

from pimento.errors import InternalError, PrivacyParameterError

__all__ = [
    "Envelope",
    "beta_from_epsilon",
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


def check_beta(beta: float) -> float:
    """``beta`` as a positive finite float, or a PrivacyParameterError."""
    try:
        value = float(beta)
    except (TypeError, ValueError):
        raise PrivacyParameterError(f"beta must be a number, got {beta!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise PrivacyParameterError(
            f"beta must be positive and finite, got {beta!r}",
            hint="use --beta B > 0, or --epsilon E [--delta D] to derive it",
        )
    return value


def _dec(x: float | int | str | Fraction | Decimal) -> Decimal:
    if isinstance(x, Fraction):
        return Decimal(x.numerator) / Decimal(x.denominator)
    return Decimal(x)  # exact for floats, ints and decimal strings


def beta_from_epsilon(epsilon: float | str | Decimal, delta: float | str | Decimal | None = None) -> float:
    """Smoothing parameter for a release, rounded DOWN to a float.

    ``eps / (2 ln(2/delta))`` for (eps, delta)-DP with Laplace noise, ``eps / 10`` for pure eps-DP
    (ARCHITECTURE.md, "Privacy model"). A smaller beta only makes RS larger (safe).

    >>> beta_from_epsilon("1")
    0.1
    >>> round(beta_from_epsilon("1", "1e-6"), 6)
    0.034486
    """
    with localcontext() as ctx:
        ctx.prec = _PREC
        eps = Decimal(str(epsilon)) if isinstance(epsilon, float) else Decimal(epsilon)
        if not eps.is_finite() or eps <= 0:
            raise PrivacyParameterError(f"epsilon must be positive and finite, got {epsilon!r}")
        if delta is None:
            ctx.rounding = ROUND_FLOOR
            beta = eps / 10
        else:
            dlt = Decimal(str(delta)) if isinstance(delta, float) else Decimal(delta)
            if not dlt.is_finite() or not (0 < dlt < 1):
                raise PrivacyParameterError(f"delta must lie strictly between 0 and 1, got {delta!r}")
            # ln is correctly rounded half-even: add one ulp to make it an upper bound
            log = (Decimal(2) / dlt).ln().next_plus().next_plus()
            ctx.rounding = ROUND_CEILING
            denominator = 2 * log
            ctx.rounding = ROUND_FLOOR
            beta = eps / denominator
    return _float_down(beta)


def _float_down(value: Decimal) -> float:
    f = float(value)
    if Decimal(f) > value:
        f = math.nextafter(f, -math.inf)
    return f


def round_up_float(value: Fraction | Decimal | int) -> float:
    """The smallest float not below ``value``."""
    d = _dec(value) if not isinstance(value, Decimal) else value
    with localcontext() as ctx:
        ctx.prec = _PREC
        f = float(d)
        if _dec(f) < d:
            f = math.nextafter(f, math.inf)
    return f


def exp_neg_upper(beta: float, k: int) -> Decimal:
    """An upper bound of e^{-beta k} (60 digits, at most 2 ulps above the true value; exactly 1 at k = 0)."""
    if k == 0:
        return Decimal(1)
    with localcontext() as ctx:
        ctx.prec = _PREC + 20
        exponent = -(Decimal(beta) * k)  # exact: beta is a binary float, k an int
        ctx.prec = _PREC
        return exponent.exp().next_plus()


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
    """Best-first branch and bound for max over integer s in [0, U]^d of e^{-beta|s|} min(GS, f(s)).

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

    def psi1_max(self, lo: int, hi: int) -> float:
        peak = 1.0 / self.beta
        if lo <= peak <= hi:
            return peak * math.exp(-1.0)
        x = hi if hi < peak else lo
        return x * math.exp(-self.beta * x)

    def bound(self, prob: _Problem, lo: tuple[int, ...], hi: tuple[int, ...]) -> float:
        """An upper bound of h on the box: the smaller of two valid bounds.

        (1) term by term: each term is a product of one-variable factors, bounded by their maxima.
        (2) tangent planes: log of each term L_A(s) = log c_A + sum_A log s_j - beta|s| is concave,
            so L_A(s) <= L_A(m) + grad L_A(m).(s - m) at the box centre m; the sum of the
            exponentials of these planes is convex in s, so its maximum over the box is at a
            vertex. This bound is exact to second order, which is what prunes the flat optimum.
        """
        beta = self.beta
        d = len(lo)
        m0 = [math.exp(-beta * l) for l in lo]
        m1 = [self.psi1_max(l, h) for l, h in zip(lo, hi, strict=True)]
        prod0 = math.prod(m0)
        b1 = prod0 * _multilinear_f(prob.fcoeffs, [a / b for a, b in zip(m1, m0, strict=True)])
        if d and any(h > l for l, h in zip(lo, hi, strict=True)):
            centre = np.array([(l + h) / 2.0 for l, h in zip(lo, hi, strict=True)])
            alive = prob.logc > -np.inf
            bits = prob.bits
            # terms that need a coordinate fixed at 0 vanish on the box
            zero = np.array([h == 0 for h in hi])
            if zero.any():
                alive = alive & ~(bits[:, zero].any(axis=1))
            if alive.any():
                safe = np.where(centre > 0, centre, 1.0)
                logs = np.log(safe)
                L = prob.logc[alive] + bits[alive] @ logs - beta * centre.sum()
                G = bits[alive] / safe - beta
                offsets = np.where(prob.vertex_bits, np.array(hi) - centre, np.array(lo) - centre)
                expo = L[:, None] + G @ offsets.T
                top = expo.max()
                b2 = float(np.exp(top) * np.exp(expo - top).sum(axis=0).max())
                b1 = min(b1, b2 * (1 + 1e-12))
        if prob.fgs is not None:
            b1 = min(b1, prob.fgs * math.exp(-beta * sum(lo)))
        return b1

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

    def incumbent(self, prob: _Problem, which: int) -> None:
        """Coordinate ascent from a few starts: a good lower bound makes the search prune early."""
        d = prob.d
        peak = min(self.U, round(1 / self.beta))
        starts = [tuple([peak] * d), tuple([0] * d)]
        for start in starts:
            s = list(start)
            current = self.value(prob, tuple(s))
            for _ in range(100):
                improved = False
                for j in range(d):
                    s0 = s.copy()
                    s0[j] = 0
                    b = _multilinear_f(prob.fcoeffs, s0)
                    s0[j] = 1
                    a = _multilinear_f(prob.fcoeffs, s0) - b
                    options = {0, s[j]}
                    if a > 0:
                        xs = [1 / self.beta - b / a]
                        if prob.fgs is not None:
                            xs.append((prob.fgs - b) / a)
                        for x in xs:
                            if x > 0:
                                options |= {min(self.U, math.floor(x)), min(self.U, math.ceil(x))}
                    for x in options:
                        trial = s.copy()
                        trial[j] = x
                        v = self.value(prob, tuple(trial))
                        if v > current * (1 + 1e-12):
                            s, current, improved = trial, v, True
                if not improved:
                    break
            self.offer(current, which, tuple(s))

    def run_all(self, problems: list[_Problem]) -> None:
        """Branch and bound over all problems at once, one batched bound evaluation per round.

        Each round splits every live box along its widest side, bounds the children (vectorised
        with numpy), records single-point boxes as candidates and drops every box whose bound is
        below the best value found (with a 1e-9 relative margin). The bounds are those of
        :meth:`bound`; a single-point box's bound is the value of h there.
        """
        d = problems[0].d
        if d == 0:
            for which, prob in enumerate(problems):
                self.offer(self.value(prob, ()), which, ())
            return
        U = self.U
        beta = self.beta
        n = len(problems)
        coeff = np.array([p.fcoeffs for p in problems])  # (n, T)
        logc = np.array([p.logc for p in problems])
        fgs = problems[0].fgs
        bits = problems[0].bits  # (T, d)
        bbool = bits.astype(bool)
        vbits = bbool  # vertices of a box use the same 0/1 patterns
        lo = np.zeros((n, d), dtype=np.int64)
        hi = np.full((n, d), U, dtype=np.int64)
        which = np.arange(n)
        peak = 1.0 / beta
        while len(which):
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
            widths = hi - lo
            j = widths.argmax(axis=1)
            rows = np.arange(len(which))
            mid = (lo[rows, j] + hi[rows, j]) // 2
            lo_a, hi_a = lo.copy(), hi.copy()
            hi_a[rows, j] = mid
            lo_b, hi_b = lo.copy(), hi.copy()
            lo_b[rows, j] = mid + 1
            lo = np.concatenate([lo_a, lo_b])
            hi = np.concatenate([hi_a, hi_b])
            which = np.concatenate([which, which])

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
    for which, prob in enumerate(problems):
        search.incumbent(prob, which)
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
            best = key  # type: ignore[assignment]
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
