"""Sampling helpers (pure post-processing of the fitted models): the sampled rows, matching rows
on context, and link weights from the noisy in-degree profiles. The passes that use them are
``passes.sample_rows`` and ``passes.mint_keys_and_links``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pimento.synth._encode import ColumnData
from pimento.synth._state import SynthState
from pimento.synth._types import to_datetime64

__all__ = ["Sampled", "link_weights"]

#: Top in-degrees are shrunk towards the cell mean by this many noise standard deviations.
SHRINK_SIGMAS = 1.5


class Sampled:
    def __init__(self) -> None:
        self.cols: dict[str, dict[str, np.ndarray]] = {}  # table -> column -> object array
        self.parent: dict[str, np.ndarray] = {}  # table -> index into parent table's rows
        self.ent_pos: dict[str, np.ndarray] = {}  # table -> row of its entity's sample
        self.codes: dict[str, dict[str, np.ndarray]] = {}  # entity -> attr -> codes per entity row
        self.vals: dict[str, dict[str, np.ndarray]] = {}  # entity -> attr -> raw values per entity row
        self.n: dict[str, int] = {}

    def size(self, t: str) -> int:
        return self.n.get(t, 0)


def _weighted_pick(n_pool: int, size: int, weights: np.ndarray | None, rng: np.random.Generator) -> np.ndarray:
    if weights is None:
        return rng.integers(0, n_pool, size=size)
    cum = np.cumsum(weights)
    return np.minimum(np.searchsorted(cum, rng.random(size) * cum[-1], "right"), n_pool - 1)


def _match(
    pool_keys: list[np.ndarray],
    want: list[np.ndarray],
    rng: np.random.Generator,
    *,
    m: int,
    n_pool: int,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """For each of ``m`` wanted context tuples, a random row among ``n_pool`` with equal context
    (backing off one context column at a time, the last first), drawn uniformly or, with
    ``weights`` (positive, one per pool row), in proportion to the weights."""
    out = np.full(m, -1, dtype=np.int64)
    if weights is not None:
        weights = np.asarray(weights, dtype=float)
    if not want:
        return _weighted_pick(n_pool, m, weights, rng) if n_pool else out
    todo = np.arange(m)
    for j in range(len(want), -1, -1):
        if todo.size == 0:
            break
        if j == 0:
            out[todo] = _weighted_pick(n_pool, todo.size, weights, rng)
            break
        pk = np.zeros(n_pool, dtype=np.int64)
        wk = np.zeros(todo.size, dtype=np.int64)
        for c in range(j):
            base = int(max(pool_keys[c].max(initial=0), want[c].max(initial=0))) + 1
            pk = pk * base + pool_keys[c]
            wk = wk * base + want[c][todo]
        order = np.argsort(pk, kind="stable")
        spk = pk[order]
        lo = np.searchsorted(spk, wk, "left")
        hi = np.searchsorted(spk, wk, "right")
        hit = hi > lo
        u = rng.random(int(hit.sum()))
        if weights is None:
            pick = lo[hit] + (u * (hi[hit] - lo[hit])).astype(np.int64)
        else:
            cum = np.r_[0.0, np.cumsum(weights[order])]
            a, b = cum[lo[hit]], cum[hi[hit]]
            pick = np.searchsorted(cum, a + u * (b - a), "right") - 1
            pick = np.clip(pick, lo[hit], hi[hit] - 1)
        out[todo[hit]] = order[pick]
        todo = todo[~hit]
    return out


def link_weights(state: SynthState, t: str, fk: Any, src: dict[str, np.ndarray], n_ref: int, rng: np.random.Generator) -> np.ndarray | None:
    """A weight for every synthetic row of the referenced table, from the noisy in-degree profile
    of the link (post-processing): in each context cell, LINK_TOP_K random rows of the cell get
    the noisy largest in-degrees; the others share the rest of the cell's noisy total equally."""
    prof = state.link_degrees.get((t, str(fk)))
    if prof is None or n_ref == 0:
        return None
    cell = np.zeros(n_ref, dtype=np.int64)
    for c, enc in zip(prof.context, prof.encodings):
        codes = _encode_values(enc, enc.family, src[c])
        cell = cell * enc.size + codes
    weights = np.zeros(n_ref)
    floor = 1e-6
    for c_ in np.unique(cell):
        rows = np.flatnonzero(cell == c_)
        rows = rows[rng.permutation(rows.size)]
        top = prof.top[c_] if c_ < len(prof.top) else np.zeros(0)
        total = float(prof.total[c_]) if c_ < len(prof.total) else 0.0
        k = min(len(top), rows.size)
        # Shrink the top degrees towards the cell's mean: only the excess beyond SHRINK_SIGMAS
        # noise standard deviations is kept (the largest of K noisy equal degrees exceeds their
        # mean by about 1.4 sigma, which would make a flat profile look heavy-tailed).
        mean = total / rows.size
        top_w = mean + np.maximum(top[:k] - mean - SHRINK_SIGMAS * prof.sigma, 0.0)
        rest_n = rows.size - k
        rest_mass = max(total - float(top_w.sum()), 0.0)
        rest = rest_mass / rest_n if rest_n else 0.0
        w = np.full(rows.size, max(rest, floor))
        w[:k] = np.maximum(top_w, max(rest, floor))
        weights[rows] = w
    return weights


def _encode_values(enc: Any, family: str, values: np.ndarray) -> np.ndarray:
    null = np.array([v is None for v in values], dtype=bool)
    if family in ("integer", "real"):
        arr = np.array([0 if v is None else v for v in values], dtype=float)
    elif family in ("date", "timestamp"):
        arr, bad = to_datetime64(values)
        null = null | bad
    else:
        arr = values
    return enc.encode(ColumnData(family, arr, null))
