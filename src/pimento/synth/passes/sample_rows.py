"""Sample the rows of every entity from its model: parents then children, the public directory copied."""

from __future__ import annotations

import numpy as np

from pimento.synth._encode import PLACEHOLDER, _default
from pimento.synth._sample import Sampled, _match
from pimento.synth._state import Progress, SynthState

__all__ = ["sample_rows"]


def sample_rows(state: SynthState, *, progress: Progress) -> SynthState:
    """Fills ``sampled``: entity rows drawn from the models, parents before children (sampling
    randomness only: post-processing of the fitted models)."""
    progress("sample", 0, 1)
    rng = state.rng
    out = Sampled()
    forest = state.forest
    for e in [t for t in forest.order if t in state.entities]:
        info = state.entities[e]
        model = state.models[e]
        tp = forest.tables[e]
        if tp.parent is None and e in state.directory:
            # Public directory (declared link context): the exact context tuples, other
            # attributes drawn from the model given them.
            exact = state.directory[e]
            names = list(exact)
            n = len(exact[names[0]])
            shuffle = rng.permutation(n)
            want = [exact[a][shuffle] for a in names]
            pool_n = max(2 * n, 500) if n else 0
            pool = model.sample(pool_n, rng)
            pick = _match([pool[a] for a in names], want, rng, m=n, n_pool=pool_n) if n else np.zeros(0, dtype=np.int64)
            codes = {k: v[pick] for k, v in pool.items()}
            for name, w in zip(names, want):
                codes[name] = w
            ppos = np.full(n, -1, dtype=np.int64)
        elif tp.parent is None:
            n = max(int(round(model.total)), 0)
            codes = model.sample(n, rng)
            ppos = np.full(n, -1, dtype=np.int64)
        else:
            parent = tp.parent
            pent = forest.entity_of(parent)
            p_ent_rows = out.ent_pos.get(parent, np.zeros(0, dtype=np.int64))
            deg_all = out.codes[pent].get(f"deg:{e}")
            deg = deg_all[p_ent_rows] if deg_all is not None else np.zeros(len(p_ent_rows), dtype=np.int64)
            ppos = np.repeat(np.arange(len(p_ent_rows)), deg)
            n = len(ppos)
            pool_n = max(2 * n, 500) if n else 0
            pool = model.sample(pool_n, rng)
            want = [out.codes[pent][name][p_ent_rows[ppos]] for name in info.ctx]
            keys = [pool["^" + name] for name in info.ctx] if pool_n else []
            pick = _match(keys, want, rng, m=n, n_pool=pool_n) if n else np.zeros(0, dtype=np.int64)
            codes = {k: v[pick] for k, v in pool.items()}
        ent_codes = {k: v for k, v in codes.items() if not k.startswith("^")}
        out.codes[e] = ent_codes
        vals: dict[str, np.ndarray] = {}
        out.vals[e] = vals
        # Presence of each table of the entity.
        present: dict[str, np.ndarray] = {e: np.ones(n, dtype=bool)}
        for tt in info.tables[1:]:
            has_attr = next(x for x in info.attrs if x.name == f"has:{tt}")
            if has_attr.tied_to == "=1" or has_attr.name not in ent_codes:
                has = np.ones(n, dtype=bool)
            else:
                has = ent_codes[has_attr.name] == 1
            present[tt] = has & present[forest.parent_of(tt)]
        for tt in info.tables:
            rows = np.flatnonzero(present[tt])
            out.n[tt] = rows.size
            out.ent_pos[tt] = rows
            if tt == e:
                out.parent[tt] = ppos  # index into the parent table's sampled rows
            else:
                par = forest.parent_of(tt)
                inv = np.full(n, -1, dtype=np.int64)
                inv[out.ent_pos[par]] = np.arange(out.n[par])
                out.parent[tt] = inv[rows]
            cols: dict[str, np.ndarray] = {}
            for c in state.cat.table(tt).columns:
                cols[c.name] = np.full(rows.size, None, dtype=object)
            out.cols[tt] = cols
        # Decode modelled and tied column attributes.
        parent_rows = None
        if tp.parent is not None:
            parent_rows = out.ent_pos[tp.parent][ppos] if n else np.zeros(0, dtype=np.int64)
        for a in info.attrs:
            if a.kind != "col":
                continue
            assert a.column is not None  # a column attribute names its column
            col = state.cat.table(a.table).column(a.column)
            if a.tied_to is None:
                assert a.encoding is not None  # a modelled column attribute has its encoding
                v = a.encoding.decode(ent_codes[a.name], rng, not_null=not col.nullable)
            elif a.tied_to.startswith("^"):
                pent = forest.entity_of(forest.parent_of(e))
                v = out.vals[pent][a.tied_to[1:]][parent_rows]
            else:
                v = vals[a.tied_to].copy()
            if not col.nullable:
                bad = np.array([x is None for x in v], dtype=bool)
                if bad.any():
                    fam = state.column_family(a.table, a.column)
                    v[bad] = _default(fam) if fam != "text" else PLACEHOLDER
            vals[a.name] = v
            out.cols[a.table][a.column] = v[out.ent_pos[a.table]]
        # Free-text and unmodelled columns: a constant placeholder (or NULL where allowed).
        for tt in info.tables:
            fk_cols = state.fk_columns(tt)
            minted = state.minted(tt)
            for c in state.cat.table(tt).columns:
                if c.name in fk_cols or c.name in minted:
                    continue
                enc = state.enc.get((tt, c.name))
                if enc is not None and enc.kind == "cat":
                    continue
                fam = state.column_family(tt, c.name)
                fill = PLACEHOLDER if fam == "text" else (None if c.nullable else _default(fam))
                out.cols[tt][c.name][:] = fill
    state.sampled = out
    return state
