"""Noisy in-degree profiles of the links to private tables (PRIVACY.md, "Link in-degrees")."""

from __future__ import annotations

import math

import numpy as np

from pimento.synth._budget import SHARE_LINKS
from pimento.synth._entity_rows import per_unit_sample
from pimento.synth._rows import key_tuples, lookup, match_keys
from pimento.synth._state import LinkDegrees, SynthState

__all__ = ["measure_link_degrees", "degree_profile", "link_sensitivity", "LINK_ROWS_PER_UNIT", "LINK_TOP_K"]

#: Link rows of one unit counted in the in-degree measurement (a random choice).
LINK_ROWS_PER_UNIT = 1
#: Largest in-degrees measured per link-context cell (sorted, descending).
LINK_TOP_K = 8


def degree_profile(deg: np.ndarray, cell: np.ndarray, n_cells: int, k: int = LINK_TOP_K) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest in-degrees of each cell (descending, zero-padded) and each cell's total.

    ``deg[i]`` is the in-degree of key ``i`` and ``cell[i]`` its context cell. One link row more
    or less changes one key's degree by 1: in its cell the sorted sequence changes in exactly one
    position by 1 (the first, resp. last, position holding the old value) and the total by 1.
    """
    top = np.zeros((n_cells, k))
    total = np.zeros(n_cells)
    for c in np.unique(cell):
        d = np.sort(deg[cell == c])[::-1][:k]
        top[c, : d.size] = d
        total[c] = float(deg[cell == c].sum())
    return top, total


def link_sensitivity(m: int) -> float:
    """L2 sensitivity of :func:`degree_profile` when one unit with at most ``m`` counted link
    rows is replaced: m removals and m additions, each of L2 norm sqrt 2 (PRIVACY.md)."""
    return 2.0 * m * math.sqrt(2.0)


def _non_increasing(y: np.ndarray) -> np.ndarray:
    """Least-squares non-increasing fit of ``y`` (pool adjacent violators): post-processing."""
    vals: list[float] = []
    counts: list[int] = []
    for v in y.tolist():
        vals.append(float(v))
        counts.append(1)
        while len(vals) > 1 and vals[-2] < vals[-1]:
            c = counts[-2] + counts[-1]
            vals[-2] = (vals[-2] * counts[-2] + vals[-1] * counts[-1]) / c
            counts[-2] = c
            vals.pop()
            counts.pop()
    return np.repeat(np.array(vals), counts) if vals else np.zeros(0)


def measure_link_degrees(state: SynthState) -> SynthState:
    """For every link to a private table: the noisy LINK_TOP_K largest in-degrees and the noisy
    number of link rows, per context cell of the referenced row (PRIVACY.md, "Link in-degrees").

    Each unit counts at most LINK_ROWS_PER_UNIT of its (valid, capped) link rows, chosen at
    random. One counted row changes one key's in-degree by 1, which changes the sorted
    in-degree sequence of its cell in one position by 1 and the cell's total by 1 (L2 sqrt 2);
    replacing a unit removes and adds at most m rows each: L2 sensitivity 2 m sqrt 2.
    Only the owning component's data is read (the key values of its rows), plus the declared
    link context of the referenced rows, which is public.
    """
    for comp in state.forest.components:
        links = state.private_links(comp)
        if not links:
            continue
        state.acc.scope = comp
        rho_link = state.acc.rho_total * SHARE_LINKS / len(links)
        for t, fk in links:
            ref = fk.ref_table
            ctx_cols = state.link_context_of(ref)
            encs = [state.enc[(ref, c)] for c in ctx_cols]
            sizes = [e.size for e in encs]
            n_cells = int(np.prod(sizes)) if sizes else 1
            rows = np.flatnonzero(state.valid[t])
            m = min(LINK_ROWS_PER_UNIT, state.unit_rows[t])
            own = state.data[t]
            if len(fk.columns) == 1 and own[fk.columns[0]].values.dtype.kind in "iu":
                # One integer column: the same counts without a Python tuple per row.
                col = own[fk.columns[0]]
                rows = rows[~col.null[rows]]
                chosen = per_unit_sample(state, t, rows, m)
                ukeys, key_id = np.unique(col.values[rows[chosen]], return_inverse=True)
                n_keys = len(ukeys)
                key_rows = rows[chosen][np.unique(key_id, return_index=True)[1]] if n_keys else rows[:0]
            else:
                keys = key_tuples(own, fk.columns, rows)
                has_key = np.array([k is not None for k in keys], dtype=bool)
                rows = rows[has_key]
                keys = [k for k in keys if k is not None]
                # At most m counted rows per unit, in a random order (independent of other units).
                chosen = per_unit_sample(state, t, rows, m)
                kept_keys = [keys[i] for i in chosen.tolist()]
                # Key identities (values of the foreign key) and their context cell.
                uniq: dict[tuple, int] = {}
                key_id = np.fromiter((uniq.setdefault(k, len(uniq)) for k in kept_keys), dtype=np.int64, count=len(kept_keys))
                n_keys = len(uniq)
                key_rows = None
            deg = np.bincount(key_id, minlength=n_keys)
            cell = np.zeros(n_keys, dtype=np.int64)
            if ctx_cols and n_keys:
                rdata = state.data[ref]
                if key_rows is not None:
                    ridx = match_keys(rdata, fk.ref_columns, own, fk.columns, key_rows)
                else:
                    ridx = lookup(key_tuples(rdata, fk.ref_columns), list(uniq))
                for c, enc in zip(ctx_cols, encs):
                    col = rdata[c].take(np.maximum(ridx, 0))
                    code = enc.encode(col)
                    code = np.where(ridx >= 0, code, enc.null_code if enc.nullable else 0)
                    cell = cell * enc.size + code
            top, total = degree_profile(deg, cell, n_cells)
            sens = link_sensitivity(m)
            sigma = state.acc.sigma(sensitivity=sens, rho=rho_link)
            noisy = state.acc.gaussian(
                np.concatenate([top.ravel(), total]), sensitivity=sens, rho=rho_link, what=f"in-degrees of {t}.{','.join(fk.columns)}"
            )
            ntop = noisy[: top.size].reshape(top.shape)
            ntotal = noisy[top.size :]
            ntop = np.array([_non_increasing(np.clip(r, 0.0, None)) for r in ntop]) if ntop.size else ntop
            state.link_degrees[(t, str(fk))] = LinkDegrees(t, fk, ctx_cols, encs, ntop, np.clip(ntotal, 0.0, None), sigma)
            state.report.setdefault("link_degrees", {})[f"{t}.{','.join(fk.columns)}"] = {
                "context": [f"{ref}.{c}" for c in ctx_cols],
                "sigma": round(sigma, 2),
                "largest": [round(float(x), 1) for x in np.sort(ntop[:, 0])[::-1][:4]] if ntop.size else [],
            }
    return state
