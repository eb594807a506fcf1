"""Sampling (pure post-processing of the fitted models): parents then children, fresh keys,
foreign keys from the structural tree, links matched on context, FDs and keys repaired.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pimento.synth._encode import PLACEHOLDER, ColumnData, _default
from pimento.synth._core import Synthesizer, _norm
from pimento.synth._types import to_datetime64

__all__ = ["sample_database"]

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


def link_weights(s: Synthesizer, t: str, fk: Any, src: dict[str, np.ndarray], n_ref: int, rng: np.random.Generator) -> np.ndarray | None:
    """A weight for every synthetic row of the referenced table, from the noisy in-degree profile
    of the link (post-processing): in each context cell, LINK_TOP_K random rows of the cell get
    the noisy largest in-degrees; the others share the rest of the cell's noisy total equally."""
    prof = s.link_degrees.get((t, str(fk)))
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


def sample_database(s: Synthesizer) -> Sampled:
    rng = s.rng
    out = Sampled()
    plan = s.plan
    for e in [t for t in plan.order if t in s.entities]:
        info = s.entities[e]
        model = s.models[e]
        tp = plan.tables[e]
        if tp.parent is None and e in s.directory:
            # Public directory (declared link context): the exact context tuples, other
            # attributes drawn from the model given them.
            exact = s.directory[e]
            names = list(exact)
            n = len(exact[names[0]])
            shuffle = rng.permutation(n)
            want = [exact[a][shuffle] for a in names]
            pool_n = max(2 * n, 500) if n else 0
            pool = model.sample(pool_n, rng)
            pick = _match([pool[a] for a in names], want, rng, m=n, n_pool=pool_n) if n else np.zeros(0, dtype=np.int64)
            codes = {k: v[pick] for k, v in pool.items()}
            for a, w in zip(names, want):
                codes[a] = w
            ppos = np.full(n, -1, dtype=np.int64)
        elif tp.parent is None:
            n = max(int(round(model.total)), 0)
            codes = model.sample(n, rng)
            ppos = np.full(n, -1, dtype=np.int64)
        else:
            parent = tp.parent
            pent = plan.entity_of(parent)
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
            a = next(x for x in info.attrs if x.name == f"has:{tt}")
            if a.tied_to == "=1" or a.name not in ent_codes:
                has = np.ones(n, dtype=bool)
            else:
                has = ent_codes[a.name] == 1
            present[tt] = has & present[plan.tables[tt].parent]
        for tt in info.tables:
            rows = np.flatnonzero(present[tt])
            out.n[tt] = rows.size
            out.ent_pos[tt] = rows
            if tt == e:
                out.parent[tt] = ppos  # index into the parent table's sampled rows
            else:
                par = plan.tables[tt].parent
                inv = np.full(n, -1, dtype=np.int64)
                inv[out.ent_pos[par]] = np.arange(out.n[par])
                out.parent[tt] = inv[rows]
            cols: dict[str, np.ndarray] = {}
            for c in s.cat.table(tt).columns:
                cols[c.name] = np.full(rows.size, None, dtype=object)
            out.cols[tt] = cols
        # Decode modelled and tied column attributes.
        parent_rows = None
        if tp.parent is not None:
            parent_rows = out.ent_pos[tp.parent][ppos] if n else np.zeros(0, dtype=np.int64)
        for a in info.attrs:
            if a.kind != "col":
                continue
            col = s.cat.table(a.table).column(a.column)
            if a.tied_to is None:
                v = a.encoding.decode(ent_codes[a.name], rng, not_null=not col.nullable)
            elif a.tied_to.startswith("^"):
                pent = plan.entity_of(tp.parent)
                v = out.vals[pent][a.tied_to[1:]][parent_rows]
            else:
                v = vals[a.tied_to].copy()
            if not col.nullable:
                bad = np.array([x is None for x in v], dtype=bool)
                if bad.any():
                    fam = s.column_family(a.table, a.column)
                    v[bad] = _default(fam) if fam != "text" else PLACEHOLDER
            vals[a.name] = v
            out.cols[a.table][a.column] = v[out.ent_pos[a.table]]
        # Free-text and unmodelled columns: a constant placeholder (or NULL where allowed).
        for tt in info.tables:
            fk_cols = s._fk_columns(tt)
            minted = s._minted(tt)
            for c in s.cat.table(tt).columns:
                if c.name in fk_cols or c.name in minted:
                    continue
                enc = s.enc.get((tt, c.name))
                if enc is not None and enc.kind == "cat":
                    continue
                fam = s.column_family(tt, c.name)
                fill = PLACEHOLDER if fam == "text" else (None if c.nullable else _default(fam))
                out.cols[tt][c.name][:] = fill
    return out


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


def mint_and_link(s: Synthesizer, out: Sampled, public_rows: dict[str, dict[str, np.ndarray]]) -> None:
    """Fresh keys, structural and derived foreign keys, then links (tables in plan order)."""
    rng = s.rng
    plan = s.plan
    cat = s.cat
    for t in plan.order:
        n = out.size(t)
        for c in s._minted(t):
            col = cat.table(t).column(c)
            if col.type == "integer":
                out.cols[t][c] = np.arange(1, n + 1, dtype=np.int64).astype(object)
            elif col.type == "real":
                out.cols[t][c] = np.arange(1, n + 1, dtype=float).astype(object)
            else:
                out.cols[t][c] = np.array([f"{t}_{i}" for i in range(1, n + 1)], dtype=object)
    link_target: dict[tuple[str, str], np.ndarray] = {}
    for t in plan.order:
        tp = plan.tables[t]
        n = out.size(t)
        if tp.parent_fk is not None:
            fk = tp.parent_fk
            pidx = out.parent[t]
            for c, rc in zip(fk.columns, fk.ref_columns):
                out.cols[t][c] = out.cols[tp.parent][rc][pidx] if n else np.zeros(0, dtype=object)
        for fk, anc in tp.derived:
            idx = np.arange(n)
            cur = t
            while cur != anc:
                idx = out.parent[cur][idx]
                cur = plan.tables[cur].parent
            for c, rc in zip(fk.columns, fk.ref_columns):
                out.cols[t][c] = out.cols[anc][rc][idx] if n else np.zeros(0, dtype=object)
        for fk in tp.links:
            target = _resolve_link(s, out, t, fk, public_rows, rng)
            link_target[(t, str(fk))] = target
            ref = fk.ref_table
            src = public_rows[ref] if not cat.table(ref).private else out.cols[ref]
            for c, rc in zip(fk.columns, fk.ref_columns):
                col = np.full(n, None, dtype=object)
                ok = target >= 0
                col[ok] = src[rc][target[ok]]
                out.cols[t][c] = col
    s.link_target = link_target


def _resolve_link(s: Synthesizer, out: Sampled, t: str, fk: Any, public_rows: dict, rng: np.random.Generator) -> np.ndarray:
    """Row of the referenced table chosen for every sampled row of ``t`` (-1: NULL)."""
    plan = s.plan
    cat = s.cat
    n = out.size(t)
    ref = fk.ref_table
    e = plan.entity_of(t)
    info = s.entities[e]
    ent_rows = out.ent_pos[t]
    nullable = any(cat.table(t).column(c).nullable for c in fk.columns)
    ref_private = cat.table(ref).private
    src = public_rows[ref] if not ref_private else out.cols[ref]
    n_ref = len(next(iter(src.values()))) if src else 0
    target = np.full(n, -1, dtype=np.int64)
    if n == 0 or n_ref == 0:
        return target
    attrs = [a for a in info.attrs if a.fk is not None and a.table == t and a.fk == fk]
    link_attr = next((a for a in attrs if a.kind == "link"), None)
    if link_attr is not None:
        enc = link_attr.encoding
        if link_attr.tied_to is not None:
            values = _partner_link_values(s, out, e, link_attr.tied_to)[ent_rows]
        else:
            codes = out.codes[e][link_attr.name][ent_rows]
            keys = np.array(list(enc.keys) + [None, None], dtype=object)
            values = keys[np.minimum(codes, len(enc.keys) + 1)]
            if not nullable:
                bad = np.array([v is None for v in values], dtype=bool)
                if bad.any():
                    values[bad] = rng.choice(np.array(enc.keys, dtype=object), size=int(bad.sum()))
        index = {_norm(v): i for i, v in enumerate(src[fk.ref_columns[0]].tolist())}
        target = np.fromiter((index.get(_norm(v), -1) if v is not None else -1 for v in values.tolist()), dtype=np.int64, count=n)
        out.vals[e][link_attr.name] = _scatter(out.vals[e].get(link_attr.name), ent_rows, values, len(out.codes[e][next(iter(out.codes[e]))]) if out.codes[e] else n)
        return target
    ctx_attrs = [a for a in attrs if a.kind == "ctx"]
    if ctx_attrs and ref_private:
        ctx_attrs.sort(key=lambda a: a.tied_to is None)
        want = []
        pool = []
        for a in ctx_attrs:
            ref_codes = _encode_values(a.encoding, a.encoding.family, src[a.ref_column])
            pool.append(ref_codes)
            if a.tied_to is not None:
                w = _partner_link_values(s, out, e, a.tied_to)[ent_rows]
            else:
                w = out.codes[e][a.name][ent_rows]
            want.append(np.asarray(w, dtype=np.int64))
        target = _match(pool, want, rng, m=n, n_pool=n_ref, weights=link_weights(s, t, fk, src, n_ref, rng))
        for a, pc in zip(ctx_attrs, pool):
            got = pc[target]
            total = len(next(iter(out.codes[e].values()))) if out.codes[e] else n
            out.vals[e][a.name] = _scatter(out.vals[e].get(a.name), ent_rows, got, total)
        return target
    weights = link_weights(s, t, fk, src, n_ref, rng) if ref_private else None
    target = _weighted_pick(n_ref, n, weights, rng)
    null_attr = next((a for a in attrs if a.kind == "linknull"), None)
    if null_attr is not None and null_attr.tied_to is None and nullable:
        isnull = out.codes[e][null_attr.name][ent_rows] == 1
        target[isnull] = -1
    return target


def _scatter(existing: np.ndarray | None, rows: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    arr = existing if existing is not None else np.full(n, None, dtype=object)
    if arr.dtype != object:
        arr = arr.astype(object)
    arr[rows] = values
    return arr


def _partner_link_values(s: Synthesizer, out: Sampled, e: str, partner: str) -> np.ndarray:
    """Actual values (link keys or context codes) of a partner attribute, per entity row of ``e``."""
    plan = s.plan
    if partner.startswith("^"):
        parent = plan.tables[e].parent
        pent = plan.entity_of(parent)
        pv = out.vals[pent][partner[1:]]
        prow = out.ent_pos[parent][out.parent[e]]
        return pv[prow]
    return out.vals[e][partner]
