"""Repairs: functional dependencies enforced, rows that break a key or point at a dropped row dropped."""

from __future__ import annotations

import numpy as np

from pimento.synth._rows import norm
from pimento.synth._sample import Sampled
from pimento.synth._state import Progress, SynthState

__all__ = ["repair_constraints"]


def _enforce_fds(state: SynthState, out: Sampled) -> None:
    for t in state.forest.order:
        for fd in state.cat.dependencies_of(t):
            n = out.size(t)
            if n == 0:
                continue
            lhs = [out.cols[t][c] for c in fd.lhs]
            first: dict[tuple, int] = {}
            src = np.empty(n, dtype=np.int64)
            for i in range(n):
                k = tuple(norm(a[i]) for a in lhs)
                src[i] = first.setdefault(k, i)
            for c in fd.rhs:
                out.cols[t][c] = out.cols[t][c][src]


def repair_constraints(state: SynthState, *, progress: Progress) -> SynthState:
    """Enforce FDs, then drop rows that break a composite key or point at a dropped row
    (cascading): fills ``dropped``."""
    out = state.sampled
    assert out is not None
    _enforce_fds(state, out)
    keep = {t: np.ones(out.size(t), dtype=bool) for t in state.forest.order}
    dropped = {t: 0 for t in state.forest.order}
    minted = {t: state.minted(t) for t in state.forest.order}
    changed = True
    while changed:
        changed = False
        for t in state.forest.order:
            tp = state.forest.tables[t]
            k = keep[t]
            if tp.parent is not None:
                par = out.parent[t]
                pk = keep[tp.parent]
                ok = (par >= 0) & pk[np.maximum(par, 0)] if len(par) and len(pk) else np.zeros(len(par), dtype=bool)
                if np.any(k & ~ok):
                    k &= ok
                    changed = True
            for fk in tp.links:
                tgt = state.link_target.get((t, str(fk)))
                if tgt is None or not state.cat.table(fk.ref_table).private:
                    continue
                ref_keep = keep[fk.ref_table]
                bad = np.zeros(len(tgt), dtype=bool)
                if len(ref_keep):
                    bad = (tgt >= 0) & ~ref_keep[np.maximum(tgt, 0)]
                nullable = any(state.cat.table(t).column(c).nullable for c in fk.columns)
                if np.any(bad & k):
                    if nullable:
                        tgt[bad] = -1
                        for c in fk.columns:
                            out.cols[t][c][bad] = None
                    else:
                        k &= ~bad
                    changed = True
                missing = (tgt < 0) & np.array([any(out.cols[t][c][i] is None for c in fk.columns) for i in range(len(tgt))], dtype=bool) if not nullable else None
                if missing is not None and np.any(missing & k):
                    k &= ~missing
                    changed = True
            table = state.cat.table(t)
            for key in [table.primary_key, *table.unique]:
                if not key or (len(key) == 1 and key[0] in minted[t]):
                    continue
                seen: set[tuple] = set()
                arrays = [out.cols[t][c] for c in key]
                for i in np.flatnonzero(k):
                    tup = tuple(norm(a[i]) for a in arrays)
                    if any(v is None for v in tup):
                        if any(c in table.primary_key for c in key) and key == table.primary_key:
                            k[i] = False
                            changed = True
                        continue
                    if tup in seen:
                        k[i] = False
                        changed = True
                    else:
                        seen.add(tup)
            keep[t] = k
    # Compact, remapping parent indices and link targets.
    remap = {}
    for t in state.forest.order:
        idx = np.flatnonzero(keep[t])
        new = np.full(out.size(t), -1, dtype=np.int64)
        new[idx] = np.arange(idx.size)
        remap[t] = new
        dropped[t] = int(out.size(t) - idx.size)
        for c in out.cols[t]:
            out.cols[t][c] = out.cols[t][c][idx]
        out.n[t] = idx.size
    for t in state.forest.order:
        tp = state.forest.tables[t]
        idx = np.flatnonzero(keep[t])
        if tp.parent is not None:
            out.parent[t] = remap[tp.parent][out.parent[t][idx]]
    state.dropped = dropped
    progress("sample", 1, 1)
    return state
