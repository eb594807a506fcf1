"""Parents of every row, fan-out caps chosen with DP top-down, and the unit of every kept row."""

from __future__ import annotations

import math

import numpy as np

from pimento.errors import ConfigError
from pimento.synth._budget import SHARE_CAPS
from pimento.synth._rows import keys_agree, match_keys
from pimento.synth._state import SynthState

__all__ = ["cap_fanout", "MAX_CAP", "CAP_BINS", "MAX_UNIT_ROWS", "CAP_QUANTILE"]

#: Largest fan-out a cap may take, and most rows one unit may hold in any table.
MAX_CAP = 64
CAP_BINS = np.array([0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64])
MAX_UNIT_ROWS = 4096
#: Cap quantile: the cap covers this share of the (noisy) parents' degrees.
CAP_QUANTILE = 0.95


def cap_fanout(state: SynthState) -> SynthState:
    """Fills ``parent_idx``, ``valid``, ``unit``, ``unit_rows`` and ``caps`` (charges the caps' share)."""
    for t in state.forest.order:
        _rank_rows(state, t)
    for comp in state.forest.components:
        state.acc.scope = comp
        tables = state.component_tables(comp)
        edges = [t for t in tables if state.forest.tables[t].kind == "entity" and state.forest.tables[t].parent]
        rho_comp = state.acc.rho_total
        rho_cap = rho_comp * SHARE_CAPS / max(len(edges), 1) if edges else 0.0
        for t in tables:
            tp = state.forest.tables[t]
            n = state.n(t)
            if tp.parent is None:
                state.parent_idx[t] = np.full(n, -1, dtype=np.int64)
                state.valid[t] = np.ones(n, dtype=bool)
                state.unit[t] = np.arange(n, dtype=np.int64)
                state.unit_rows[t] = 1
                continue
            fk = tp.parent_fk
            assert fk is not None
            pidx = match_keys(state.data[tp.parent], fk.ref_columns, state.data[t], fk.columns)
            ok = pidx >= 0
            ok[ok] &= state.valid[tp.parent][pidx[ok]]
            # Derived keys must agree with the ancestor they copy (else the row is dropped).
            for dfk, anc in tp.derived:
                anc_idx = pidx.copy()
                cur = tp.parent
                while cur != anc:
                    up = state.parent_idx[cur]
                    anc_idx = np.where(anc_idx >= 0, up[np.maximum(anc_idx, 0)], -1)
                    cur = state.forest.parent_of(cur)
                ok &= keys_agree(state.data[anc], dfk.ref_columns, anc_idx, state.data[t], dfk.columns)
            if tp.kind == "extension":
                cap = 1
                user = state.user_caps.get(t.lower())
                if user is not None and user != 1:
                    raise ConfigError(
                        f"impossible cap {user} for {t}: its foreign key {fk} is unique, so each parent has at most one",
                        hint=f"use cap 1 for {t} or leave it out",
                    )
                # Uniqueness holds in valid data; keep the first row per parent to be safe.
                ok = _truncate(state, t, ok, pidx, 1)
            else:
                cap = _choose_cap(state, t, pidx, ok, rho_cap)
                ok = _truncate(state, t, ok, pidx, cap)
            state.caps[t] = cap
            state.report["caps"][t] = cap
            state.parent_idx[t] = np.where(ok, pidx, -1)
            state.valid[t] = ok
            state.unit[t] = np.where(ok, state.unit[tp.parent][np.maximum(pidx, 0)], -1)
            state.unit_rows[t] = state.unit_rows[tp.parent] * cap
            if state.unit_rows[t] > MAX_UNIT_ROWS:
                raise ConfigError(
                    f"impossible cap: one unit may hold {state.unit_rows[t]} rows of {t} (caps along the path multiply)",
                    hint=f"lower the caps on the path to {t} so that their product stays at most {MAX_UNIT_ROWS}",
                )
    return state


def _rank_rows(state: SynthState, table: str) -> None:
    """The random order of ``table``'s rows inside their parent and unit (``_rank``): the keyed
    hash of the row's integer key, else (no key declared INTEGER) a random permutation."""
    keys = state.row_key(table)
    state.rank_keys[table] = keys
    if keys is not None:
        state.rank[table] = state.row_hash.values([state.key_integers(table, c) for c in keys])
    else:
        state.rank[table] = state.order_rng.permutation(state.n(table)).astype(np.int64)


def _truncate(state: SynthState, table: str, ok: np.ndarray, pidx: np.ndarray, cap: int) -> np.ndarray:
    """Keep at most ``cap`` rows per parent, the first in the random row order (``_rank``; the
    order of a parent's children depends on nothing outside its unit)."""
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        return ok
    perm = idx[state.order_in(table, pidx[idx], idx)]
    p = pidx[perm]
    starts = np.r_[0, np.flatnonzero(np.diff(p)) + 1]
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(p)]))
    rank = np.arange(len(p)) - starts[group]
    out = np.zeros_like(ok)
    out[perm[rank < cap]] = True
    return out


def _choose_cap(state: SynthState, table: str, pidx: np.ndarray, ok: np.ndarray, rho: float) -> int:
    tp = state.forest.tables[table]
    parent = tp.parent
    assert parent is not None
    user = state.user_caps.get(table.lower())
    if user is not None:
        if not isinstance(user, int) or user < 1 or user > MAX_CAP:
            raise ConfigError(f"impossible cap {user!r} for {table}", hint=f"caps are integers from 1 to {MAX_CAP}")
        return user
    n_parent = state.n(parent)
    deg = np.bincount(pidx[ok], minlength=n_parent)[state.valid[parent]]
    # Geometric bins: bin i holds degrees in (CAP_BINS[i-1], CAP_BINS[i]].
    which = np.searchsorted(CAP_BINS, np.minimum(deg, MAX_CAP), side="left")
    hist = np.bincount(which, minlength=len(CAP_BINS)).astype(float)
    sens = math.sqrt(2.0) * state.unit_rows[parent]
    sigma = state.acc.sigma(sensitivity=sens, rho=rho)
    noisy = state.acc.gaussian(hist, sensitivity=sens, rho=rho, what=f"cap of {table}")
    # Only bins whose noisy count is clearly above noise count; the cap is the smallest bin
    # edge that leaves at most 1 - CAP_QUANTILE of the (significant) parents above it.
    # (3 sigma: with 13 bins a 2-sigma threshold lets a spurious high bin through in about
    # a quarter of the choices, which made caps of 64 on tables of a few dozen rows.)
    sig = np.where(noisy > 3.0 * sigma, noisy, 0.0)
    total = sig.sum()
    if total <= 0:
        return 1
    above = total - np.cumsum(sig)
    i = int(np.flatnonzero(above <= (1 - CAP_QUANTILE) * total)[0])
    cap = max(1, int(CAP_BINS[i]))
    return max(1, min(cap, MAX_CAP, MAX_UNIT_ROWS // max(state.unit_rows[parent], 1)))
