"""MST-style marginal selection and an mbi 2.0 graphical model for one table's rows.

Budget rho is split in three parts, 20% / 20% / 60% (``SPLIT``; McKenna, Miklau, Sheldon 2021
use equal thirds): noisy 1-way marginals;
a maximum spanning tree of attribute pairs picked with the exponential mechanism (score: L1
distance between the true 2-way marginal and the product of the noisy 1-ways); noisy 2-way
marginals of the picked pairs. ``unit_rows`` (N) is the most rows one privacy unit holds in this
table: a marginal then has squared L2 sensitivity 2 N^2 under replacement of a unit (two
non-negative vectors of L1 norm at most N), and the score has sensitivity 2 N.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from pimento.extras import require_extra

__all__ = ["TableModel", "fit_table_model"]

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")

MAX_PAIR_CELLS = 20_000
#: Split of a model's rho between 1-way marginals, pair selection and 2-way marginals.
SPLIT = (0.2, 0.2, 0.6)


def _mbi():
    """The mbi package (with jax in 64-bit mode), or the error naming the `synth` extra."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jax = require_extra("jax", "synth", "the synthetic copy")
        jax.config.update("jax_enable_x64", True)
        return require_extra("mbi", "synth", "the synthetic copy")


@dataclass
class TableModel:
    columns: list[str]
    sizes: list[int]
    model: Any  # mbi MarkovRandomField, or None for a table with no attributes
    total: float
    pairs: list[tuple[str, str]]

    def sample(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        if n <= 0:
            return {c: np.zeros(0, dtype=np.int64) for c in self.columns}
        if self.model is None:
            return {c: np.zeros(n, dtype=np.int64) for c in self.columns}
        state = np.random.get_state()
        np.random.seed(int(rng.integers(0, 2**31 - 1)))
        try:
            data = self.model.synthetic_data(rows=n, method="sample")
        finally:
            np.random.set_state(state)
        return {c: np.asarray(data.data[c]).astype(np.int64) for c in self.columns}


def fit_table_model(
    codes: dict[str, np.ndarray],
    sizes: dict[str, int],
    *,
    rho: float,
    unit_rows: int,
    accountant: Any,
    what: str,
    iters: int = 300,
    n_rows: int | None = None,
    weights: np.ndarray | None = None,
) -> TableModel:
    """Fit an MST-selected graphical model to integer-coded columns under rho-zCDP.

    ``n_rows`` is the number of rows (needed when no column is modelled). ``weights``: each
    entry of ``codes`` stands for that many rows (a joint table counted by the engine); the
    marginals are the same sums as over the rows themselves."""
    cols = [c for c in codes if sizes[c] >= 1]
    if n_rows is None:
        n_rows = int(weights.sum()) if weights is not None else len(next(iter(codes.values()))) if codes else 0
    if not cols:
        accountant.spend(f"{what}: count", rho)
        sigma = accountant.sigma(sensitivity=math.sqrt(2.0) * unit_rows, rho=rho)
        total = n_rows + float(accountant.normal(1, sigma)[0])
        return TableModel([], [], None, max(total, 0.0), [])
    mbi = _mbi()
    d = len(cols)
    n_pairs_max = d - 1
    # Shares of rho: 1-way marginals, pair selection, 2-way marginals (the 2-ways carry the
    # correlations the sampler needs, so they get the largest share).
    if n_pairs_max > 0:
        rho_one, rho_select, rho_two = rho * SPLIT[0], rho * SPLIT[1], rho * SPLIT[2]
    else:
        rho_one, rho_select, rho_two = rho, 0.0, 0.0
    sens = math.sqrt(2.0) * unit_rows
    # 1-way marginals.
    sigma1 = sens * math.sqrt(d / (2.0 * rho_one))
    accountant.spend(f"{what}: 1-way marginals", rho_one)
    one_way = {}
    for c in cols:
        counts = np.bincount(codes[c], weights=weights, minlength=sizes[c]).astype(float)
        one_way[c] = counts + accountant.normal(len(counts), sigma1)
    measurements = [mbi.LinearMeasurement(one_way[c], (c,), stddev=sigma1) for c in cols]
    pairs: list[tuple[str, str]] = []
    if n_pairs_max > 0:
        total_est = max(float(np.mean([v.sum() for v in one_way.values()])), 1.0)
        est = {c: np.clip(one_way[c], 0, None) for c in cols}
        candidates = []
        scores = []
        for i in range(d):
            for j in range(i + 1, d):
                a, b = cols[i], cols[j]
                if sizes[a] * sizes[b] > MAX_PAIR_CELLS:
                    continue
                real = np.bincount(codes[a] * sizes[b] + codes[b], weights=weights, minlength=sizes[a] * sizes[b]).astype(float)
                pa = est[a] / max(est[a].sum(), 1e-9)
                pb = est[b] / max(est[b].sum(), 1e-9)
                indep = np.outer(pa, pb).ravel() * total_est
                candidates.append((a, b))
                scores.append(np.abs(real - indep).sum())
        # Kruskal with the exponential mechanism (Gumbel-max form), d - 1 rounds at most.
        rounds = n_pairs_max
        eps_round = math.sqrt(8.0 * rho_select / rounds)
        accountant.spend(f"{what}: pair selection", rho_select)
        comp = {c: c for c in cols}

        def find(x: str) -> str:
            while comp[x] != x:
                comp[x] = comp[comp[x]]
                x = comp[x]
            return x

        scores_arr = np.array(scores, dtype=float)
        for _ in range(rounds):
            live = [k for k, (a, b) in enumerate(candidates) if find(a) != find(b)]
            if not live:
                break
            s = scores_arr[live]
            g = eps_round * s / (2.0 * 2.0 * unit_rows) + accountant.gumbel(len(live))
            k = live[int(np.argmax(g))]
            a, b = candidates[k]
            pairs.append((a, b))
            comp[find(a)] = find(b)
        # 2-way marginals of the picked pairs.
        if pairs:
            sigma2 = sens * math.sqrt(len(pairs) / (2.0 * rho_two))
            accountant.spend(f"{what}: 2-way marginals", rho_two)
            for a, b in pairs:
                real = np.bincount(codes[a] * sizes[b] + codes[b], weights=weights, minlength=sizes[a] * sizes[b]).astype(float)
                noisy = real + accountant.normal(len(real), sigma2)
                measurements.append(mbi.LinearMeasurement(noisy, (a, b), stddev=sigma2))
        else:
            accountant.spend(f"{what}: 2-way marginals (unused)", rho_two)
    domain = mbi.Domain(cols, [sizes[c] for c in cols])
    total = max(float(np.mean([v.sum() for v in one_way.values()])), 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbi.estimation.MirrorDescent().estimate(domain, measurements, known_total=total, iters=iters)
    return TableModel(cols, [sizes[c] for c in cols], model, total, pairs)
