"""Fresh keys, foreign keys copied along the structural tree, and links matched on context."""

from __future__ import annotations

import datetime
from typing import Any

import numpy as np

from pimento.synth._rows import norm
from pimento.synth._sample import Sampled, _encode_values, _match, _weighted_pick, link_weights
from pimento.synth._state import SynthState

__all__ = ["mint_keys_and_links", "minted_values"]


def mint_keys_and_links(state: SynthState) -> SynthState:
    """Fresh keys, structural and derived foreign keys, then links (tables in forest order): fills
    the key columns of ``sampled`` and ``link_target``."""
    out = state.sampled
    assert out is not None
    public_rows = state.public_rows
    rng = state.rng
    forest = state.forest
    cat = state.cat
    for t in forest.order:
        n = out.size(t)
        for c in state.minted(t):
            out.cols[t][c] = minted_values(t, cat.table(t).column(c).type, n)
    link_target: dict[tuple[str, str], np.ndarray] = {}
    for t in forest.order:
        tp = forest.tables[t]
        n = out.size(t)
        if tp.parent_fk is not None:
            fk = tp.parent_fk
            pidx = out.parent[t]
            for c, rc in zip(fk.columns, fk.ref_columns):
                out.cols[t][c] = out.cols[fk.ref_table][rc][pidx] if n else np.zeros(0, dtype=object)
        for fk, anc in tp.derived:
            idx = np.arange(n)
            cur = t
            while cur != anc:
                idx = out.parent[cur][idx]
                cur = forest.parent_of(cur)
            for c, rc in zip(fk.columns, fk.ref_columns):
                out.cols[t][c] = out.cols[anc][rc][idx] if n else np.zeros(0, dtype=object)
        for fk in tp.links:
            target = _resolve_link(state, out, t, fk, public_rows, rng)
            link_target[(t, str(fk))] = target
            ref = fk.ref_table
            src = public_rows[ref] if not cat.table(ref).private else out.cols[ref]
            for c, rc in zip(fk.columns, fk.ref_columns):
                linked = np.full(n, None, dtype=object)
                ok = target >= 0
                linked[ok] = src[rc][target[ok]]
                out.cols[t][c] = linked
    state.link_target = link_target
    return state


#: The first minted value of a DATE or TIMESTAMP key (the next ones are a day or a second apart).
_FIRST_DATE = datetime.date(2000, 1, 1)


def minted_values(table: str, family: str, n: int) -> np.ndarray:
    """``n`` distinct fresh values for a single-column key of type ``family``: 1..n for numbers, consecutive
    days or seconds from 2000-01-01 for dates and timestamps, microseconds from midnight for times (ISO text,
    cast by the writer), ``<table>_<i>`` for text. A key's values are public structure only: nothing of the source is read."""
    if family == "integer":
        return np.arange(1, n + 1, dtype=np.int64).astype(object)
    if family == "real":
        return np.arange(1, n + 1, dtype=float).astype(object)
    if family == "date":
        first = max(1, min(_FIRST_DATE.toordinal(), datetime.date.max.toordinal() - n + 1))  # n days fit before 9999-12-31
        return np.array([datetime.date.fromordinal(first + i).isoformat() for i in range(n)], dtype=object)
    if family == "timestamp":
        start = datetime.datetime.combine(_FIRST_DATE, datetime.time())
        return np.array([(start + datetime.timedelta(seconds=i)).isoformat(sep=" ") for i in range(n)], dtype=object)
    if family == "time":
        midnight = datetime.datetime.combine(_FIRST_DATE, datetime.time())
        return np.array([(midnight + datetime.timedelta(microseconds=i)).time().isoformat() for i in range(n)], dtype=object)
    return np.array([f"{table}_{i}" for i in range(1, n + 1)], dtype=object)


def _resolve_link(state: SynthState, out: Sampled, t: str, fk: Any, public_rows: dict, rng: np.random.Generator) -> np.ndarray:
    """Row of the referenced table chosen for every sampled row of ``t`` (-1: NULL)."""
    forest = state.forest
    cat = state.cat
    n = out.size(t)
    ref = fk.ref_table
    e = forest.entity_of(t)
    info = state.entities[e]
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
            values = _partner_link_values(state, out, e, link_attr.tied_to)[ent_rows]
        else:
            assert enc is not None  # a modelled link attribute has its key encoding
            codes = out.codes[e][link_attr.name][ent_rows]
            keys = np.array(list(enc.keys) + [None, None], dtype=object)
            values = keys[np.minimum(codes, len(enc.keys) + 1)]
            if not nullable:
                bad = np.array([v is None for v in values], dtype=bool)
                if bad.any():
                    values[bad] = rng.choice(np.array(enc.keys, dtype=object), size=int(bad.sum()))
        index = {norm(v): i for i, v in enumerate(src[fk.ref_columns[0]].tolist())}
        target = np.fromiter((index.get(norm(v), -1) if v is not None else -1 for v in values.tolist()), dtype=np.int64, count=n)
        out.vals[e][link_attr.name] = _scatter(out.vals[e].get(link_attr.name), ent_rows, values, len(out.codes[e][next(iter(out.codes[e]))]) if out.codes[e] else n)
        return target
    ctx_attrs = [a for a in attrs if a.kind == "ctx"]
    if ctx_attrs and ref_private:
        ctx_attrs.sort(key=lambda a: a.tied_to is None)
        want = []
        pool = []
        for a in ctx_attrs:
            assert a.encoding is not None and a.ref_column is not None  # a context attribute has both
            ref_codes = _encode_values(a.encoding, a.encoding.family, src[a.ref_column])
            pool.append(ref_codes)
            if a.tied_to is not None:
                w = _partner_link_values(state, out, e, a.tied_to)[ent_rows]
            else:
                w = out.codes[e][a.name][ent_rows]
            want.append(np.asarray(w, dtype=np.int64))
        target = _match(pool, want, rng, m=n, n_pool=n_ref, weights=link_weights(state, t, fk, src, n_ref, rng))
        for a, pc in zip(ctx_attrs, pool):
            got = pc[target]
            total = len(next(iter(out.codes[e].values()))) if out.codes[e] else n
            out.vals[e][a.name] = _scatter(out.vals[e].get(a.name), ent_rows, got, total)
        return target
    weights = link_weights(state, t, fk, src, n_ref, rng) if ref_private else None
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


def _partner_link_values(state: SynthState, out: Sampled, e: str, partner: str) -> np.ndarray:
    """Actual values (link keys or context codes) of a partner attribute, per entity row of ``e``."""
    forest = state.forest
    if partner.startswith("^"):
        parent = forest.parent_of(e)
        pent = forest.entity_of(parent)
        pv = out.vals[pent][partner[1:]]
        prow = out.ent_pos[parent][out.parent[e]]
        return pv[prow]
    return out.vals[e][partner]
