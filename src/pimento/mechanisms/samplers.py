"""Exact noise samplers that do not leak through floating point (Mironov 2012).

Both samplers return the *rounded* value of an ideal continuous noise variable: an
integer ``m`` such that ``scale * X`` lies in ``[(m - 1/2) * grid, (m + 1/2) * grid)``,
where ``X`` is an exact draw from the continuous law (Laplace(1), or the law with density
proportional to ``1 / (1 + z^4)``) and ``grid`` is a data-independent resolution (1 for
counts). No real number is ever approximated: every decision compares integers or
Fractions, and the uniform variables are revealed lazily, bit by bit, from a random source.
So the released value ``true + m * grid`` has exactly the law of the ideal continuous
mechanism's output rounded to a fixed grid, which is post-processing of that mechanism
(see ``PROOF.md``). The noise is symmetric, so ``E[m] = 0``: an integer count released with
``grid = 1`` is an integer and unbiased.

The random source is any object with ``getrandbits(k)`` and ``randrange(n)``. Every release
draws from :func:`default_rng`, the OS CSPRNG; no release path chooses it (tests that need
reproducible noise use :func:`fixed_noise_for_tests`, at the end of this module).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Protocol

from pimento.errors import InternalError

__all__ = [
    "RandomSource",
    "bernoulli_exp",
    "bernoulli_fraction",
    "default_rng",
    "fixed_noise_for_tests",
    "geometric_exp",
    "rounded_laplace",
    "rounded_quartic",
]

#: Bits revealed per refinement step of a lazy uniform variable.
_CHUNK = 32


class RandomSource(Protocol):
    def getrandbits(self, k: int, /) -> int: ...

    def randrange(self, stop: int, /) -> int: ...


def default_rng() -> RandomSource:
    """The noise source of every release: the OS CSPRNG (in tests only, :func:`fixed_noise_for_tests`'s)."""
    return secrets.SystemRandom() if _TEST_NOISE is None else _TEST_NOISE()


# --------------------------------------------------------------------------------------
# Bernoulli and geometric variables with rational parameters (Canonne, Kamath, Steinke 2020)
# --------------------------------------------------------------------------------------


def bernoulli_fraction(p: Fraction, rng: RandomSource) -> bool:
    """True with probability exactly ``p`` (a Fraction in [0, 1])."""
    if not 0 <= p <= 1:
        raise InternalError(f"bernoulli_fraction: p={p} outside [0, 1]")
    return rng.randrange(p.denominator) < p.numerator


# proof: cks-bernoulli-geometric
def bernoulli_exp(x: Fraction, rng: RandomSource) -> bool:
    """True with probability exactly ``exp(-x)`` for a Fraction ``x >= 0`` (CKS20, Algorithm 1)."""
    if x < 0:
        raise InternalError(f"bernoulli_exp: x={x} < 0")
    return _bernoulli_exp_ints(x.numerator, x.denominator, rng)


# proof: bernoulli-exp-ints
def _bernoulli_exp_ints(n: int, d: int, rng: RandomSource) -> bool:
    # exp(-n/d) = exp(-1)^floor(n/d) * exp(-frac(n/d)); each factor by _bernoulli_exp_unit.
    whole, rest = divmod(n, d)
    for _ in range(whole):
        if not _bernoulli_exp_unit(1, 1, rng):
            return False
    return _bernoulli_exp_unit(rest, d, rng)


# proof: bernoulli-exp-unit
def _bernoulli_exp_unit(n: int, d: int, rng: RandomSource) -> bool:
    # For g = n/d in [0, 1]: K = first k with Bernoulli(g/k) = 0; P(K odd) = exp(-g).
    k = 1
    while rng.randrange(d * k) < n:
        k += 1
    return k % 2 == 1


# proof: geometric-exp
def geometric_exp(x: Fraction, rng: RandomSource) -> int:
    """G >= 0 with P(G >= g) = exp(-x * g) exactly, for a Fraction ``x > 0`` (CKS20, Algorithm 2).

    Expected cost O(1) Bernoulli draws whatever ``x``.
    """
    if x <= 0:
        raise InternalError(f"geometric_exp: x={x} <= 0")
    n, d = x.numerator, x.denominator
    # proof: geometric-rejection
    while True:  # U uniform on {0..d-1}, kept with probability exp(-U/d)
        u = rng.randrange(d)
        if _bernoulli_exp_unit(u, d, rng):
            break
    v = 0
    # proof: geometric-v
    while _bernoulli_exp_unit(1, 1, rng):
        v += 1
    # X = U + d V has P(X >= k) = exp(-k/d); floor(X / n) has P(. >= g) = exp(-g n / d).
    return (u + d * v) // n


def _sign(rng: RandomSource) -> int:
    return 1 if rng.getrandbits(1) else -1


# --------------------------------------------------------------------------------------
# Laplace
# --------------------------------------------------------------------------------------


# proof: rounded-laplace
def rounded_laplace(scale: Fraction, grid: Fraction, rng: RandomSource) -> int:
    """``m = round(scale * L / grid)`` for L ~ Laplace(1), exactly.

    With ``t = grid / scale``: ``|scale L| / grid`` is exponential with rate ``t``, so
    ``P(|m| = 0) = 1 - exp(-t/2)`` and, given ``|m| >= 1``, ``|m| - 1`` is geometric with
    ``P(. >= g) = exp(-t g)`` (memorylessness). The sign is an independent fair bit.
    """
    if scale < 0 or grid <= 0:
        raise InternalError(f"rounded_laplace: scale={scale}, grid={grid}")
    if scale == 0:
        return 0
    t = grid / scale
    # proof: laplace-zero
    if not _bernoulli_exp_ints(t.numerator, 2 * t.denominator, rng):
        return 0
    # proof: laplace-geometric
    return _sign(rng) * (1 + geometric_exp(t, rng))


# --------------------------------------------------------------------------------------
# Density proportional to 1 / (1 + z^4)
# --------------------------------------------------------------------------------------


class _LazyUniform:
    """A uniform variable on [0, 1) revealed in chunks of bits: known to lie in [a/2^n, (a+1)/2^n)."""

    __slots__ = ("a", "n", "rng")

    def __init__(self, rng: RandomSource) -> None:
        self.rng = rng
        self.a = 0
        self.n = 0

    # proof: lazy-uniform-refine
    def refine(self) -> None:
        self.a = (self.a << _CHUNK) | self.rng.getrandbits(_CHUNK)
        self.n += _CHUNK


# proof: rounded-quartic
def rounded_quartic(scale: Fraction, grid: Fraction, rng: RandomSource, *, max_rounds: int = 10_000) -> int:
    """``m = round(scale * Z / grid)`` for Z with density ``(sqrt(2)/pi) / (1 + z^4)``, exactly.

    ``|Z|`` is drawn by rejection (von Neumann) from the proposal "U with probability 1/2,
    1/U with probability 1/2" (U uniform on [0, 1)), whose density ``g`` on [0, inf) is
    1/2 on [0, 1) and ``1/(2 z^2)`` beyond, with ``1/(1+z^4) <= 2 g(z)``. The acceptance test
    ``V < 1/(1+z^4) / (2 g(z))`` is ``V < 1/(1+U^4)`` in the first branch and
    ``V < U^2/(1+U^4)`` in the second; both sides are monotone in U, so revealing U and V
    lazily decides it exactly. The accepted ``|Z|`` is then located in its grid cell, again
    by revealing U until the whole interval of possible ``|Z|`` lies in one cell.
    """
    if scale < 0 or grid <= 0:
        raise InternalError(f"rounded_quartic: scale={scale}, grid={grid}")
    if scale == 0:
        return 0
    ratio = scale / grid  # m = round(ratio * |Z|) = floor(ratio * |Z| + 1/2)
    rn, rd = ratio.numerator, ratio.denominator
    for _ in range(max_rounds):
        tail = bool(rng.getrandbits(1))
        u = _LazyUniform(rng)
        v = _LazyUniform(rng)
        decided = None
        while decided is None:
            u.refine()
            v.refine()
            decided = _accept(tail, u, v)
        if not decided:
            continue
        while True:
            cell = _cell(tail, u, rn, rd)
            if cell is not None:
                # proof: quartic-sign
                return _sign(rng) * cell if cell else 0
            u.refine()
    raise InternalError("rounded_quartic: rejection sampler did not accept in 10,000 rounds")  # pragma: no cover


# proof: quartic-accept
def _accept(tail: bool, u: _LazyUniform, v: _LazyUniform) -> bool | None:
    """Decide ``V < h(U)`` if the revealed bits suffice, else None.

    Body: h(u) = 1/(1+u^4) = N^4/(N^4 + a^4) at u = a/N, decreasing in u.
    Tail: h(u) = u^2/(1+u^4) = a^2 N^2/(N^4 + a^4), increasing on [0, 1].
    With V in [b/M, (b+1)/M): accept if (b+1)/M <= min h, reject if b/M >= max h.
    """
    n_u, n_v = 1 << u.n, 1 << v.n
    lo, hi = u.a, u.a + 1  # U in [lo/N, hi/N]
    b = v.a
    if tail:
        h_min = (lo * lo * n_u * n_u, n_u**4 + lo**4)
        h_max = (hi * hi * n_u * n_u, n_u**4 + hi**4)
    else:
        h_min = (n_u**4, n_u**4 + hi**4)
        h_max = (n_u**4, n_u**4 + lo**4)
    if (b + 1) * h_min[1] <= h_min[0] * n_v:
        return True
    if b * h_max[1] >= h_max[0] * n_v:
        return False
    return None


# proof: quartic-cell
def _cell(tail: bool, u: _LazyUniform, rn: int, rd: int) -> int | None:
    """The grid cell ``floor(ratio |Z| + 1/2)`` if all |Z| compatible with U's bits agree, else None."""
    n_u = 1 << u.n
    lo, hi = u.a, u.a + 1
    if tail:  # |Z| = 1/U in (N/hi, N/lo]
        if lo == 0:
            return None
        k_lo = (2 * rn * n_u + rd * hi) // (2 * rd * hi)
        k_hi = (2 * rn * n_u + rd * lo) // (2 * rd * lo)
    else:  # |Z| = U in [lo/N, hi/N]
        k_lo = (2 * rn * lo + rd * n_u) // (2 * rd * n_u)
        k_hi = (2 * rn * hi + rd * n_u) // (2 * rd * n_u)
    return k_lo if k_lo == k_hi else None


# --------------------------------------------------------------------------------------
# Tests only: a fixed noise source
# --------------------------------------------------------------------------------------

#: Set only inside :func:`fixed_noise_for_tests`: what :func:`default_rng` returns instead of the CSPRNG.
_TEST_NOISE: Callable[[], RandomSource] | None = None


@contextlib.contextmanager
def fixed_noise_for_tests(source: RandomSource | Callable[[], RandomSource]) -> Iterator[None]:
    """FOR TESTS ONLY: while inside, :func:`default_rng` returns ``source`` instead of the CSPRNG.

    ``source`` is a random source (every release draws from it in turn) or a function of no
    argument returning one (each release draws from a fresh one: ``lambda: random.Random(0)``).
    The setting is a module global of this process: it holds in every thread (a test client's
    service threads included) and in no other process, and it is restored on exit (nesting
    allowed). No release path (``Session``, the CLI, the service) takes or sets a noise source:
    a source that draws 0 would release exact counts, so this hook is for reproducible tests.
    """
    global _TEST_NOISE
    previous = _TEST_NOISE
    if callable(source):
        _TEST_NOISE = source
    else:
        fixed = source
        _TEST_NOISE = lambda: fixed  # noqa: E731
    try:
        yield
    finally:
        _TEST_NOISE = previous
