"""The rows of an entity model: which row of each table belongs to each entity row, and the
values and codes of its attributes (queries over the state, shared by the passes that measure)."""

from __future__ import annotations

import numpy as np

from pimento.synth._encode import ColumnData
from pimento.synth._rows import key_tuples, match_keys, norm
from pimento.synth._state import Attr, SynthState
from pimento.synth._types import to_datetime64

__all__ = ["attr_codes", "entity_row_index", "parent_entity_pos", "partner_values", "per_unit_sample", "raw_attr"]


def entity_row_index(state: SynthState, e: str) -> dict[str, np.ndarray]:
    """For each table of entity ``e``: the row of that table for each valid entity row (-1: none)."""
    info = state.entities[e]
    base = np.flatnonzero(state.valid[e])
    out = {e: base}
    pos_of: dict[str, np.ndarray] = {}
    n_e = state.n(e)
    inv = np.full(n_e, -1, dtype=np.int64)
    inv[base] = np.arange(base.size)
    pos_of[e] = inv
    for tt in info.tables[1:]:
        parent = state.forest.tables[tt].parent
        assert parent is not None
        valid = np.flatnonzero(state.valid[tt])
        pos = pos_of[parent][state.parent_idx[tt][valid]]
        arr = np.full(base.size, -1, dtype=np.int64)
        ok = pos >= 0
        arr[pos[ok]] = valid[ok]
        out[tt] = arr
        inv_t = np.full(state.n(tt), -1, dtype=np.int64)
        inv_t[valid[ok]] = pos[ok]
        pos_of[tt] = inv_t
    return out


#: SQL NULL in an object array (``np.where(mask, _NULL, values)``; numpy's stubs read a bare None as
#: the one-argument form of ``np.where``).
_NULL = np.array(None, dtype=object)


def raw_attr(state: SynthState, e: str, a: Attr, rows: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Comparable raw values of attribute ``a`` for each valid entity row (None where its row is
    absent: never the value of another row), and a presence mask."""
    r = rows[a.table]
    present = r >= 0
    safe = np.maximum(r, 0)
    vals: np.ndarray
    if a.kind == "col":
        assert a.column is not None  # a column attribute names its column
        col = state.data[a.table][a.column]
        vals = np.where(col.null[safe] | ~present, _NULL, col.values[safe].astype(object))
        return vals, present
    if a.kind in ("link", "ctx"):
        fk = a.fk
        assert fk is not None  # link and context attributes follow a foreign key
        if a.kind == "link":
            keys = key_tuples(state.data[a.table], fk.columns, safe)
            vals = np.array([k[0] if k is not None else None for k in keys], dtype=object)
            return np.where(present, vals, _NULL), present
        ref = fk.ref_table
        rdata = state.data[ref]
        ridx = match_keys(rdata, fk.ref_columns, state.data[a.table], fk.columns, safe)
        assert a.ref_column is not None  # a context attribute names the referenced column
        col = rdata[a.ref_column]
        vals = np.where(ridx >= 0, np.where(col.null[np.maximum(ridx, 0)], _NULL, col.values[np.maximum(ridx, 0)].astype(object)), _NULL)
        return np.where(present, vals, _NULL), present
    return np.zeros(len(r), dtype=object), present


def attr_codes(state: SynthState, e: str, a: Attr, rows: dict[str, np.ndarray]) -> np.ndarray:
    r = rows[a.table]
    present = r >= 0
    safe = np.maximum(r, 0)
    n = len(r)
    if a.kind == "has":
        return present.astype(np.int64)
    if a.kind == "deg":
        child = a.child
        assert child is not None  # a degree attribute names its child table
        pidx = state.parent_idx[child][state.valid[child]]
        deg = np.bincount(pidx, minlength=state.n(a.table))
        return np.where(present, np.minimum(deg[safe], state.caps[child]), 0).astype(np.int64)
    if a.kind == "linknull":
        assert a.column is not None  # a link-null attribute names its column
        col = state.data[a.table][a.column]
        return np.where(present, col.null[safe], 1).astype(np.int64)
    enc = a.encoding
    assert enc is not None
    if a.kind == "col":
        assert a.column is not None
        col = state.data[a.table][a.column].take(safe)
        codes = enc.encode(col)
    else:
        vals, _ = raw_attr(state, e, a, rows)
        null = np.array([v is None for v in vals], dtype=bool)
        fam = enc.family if a.kind == "ctx" else "key"
        if a.kind == "link":
            index = {k: i for i, k in enumerate(enc.keys)}
            codes = np.array([index.get(norm(v), enc.null_code if enc.nullable else 0) for v in vals], dtype=np.int64)
        else:
            values = vals.copy()
            if fam in ("integer", "real"):
                values = np.array([0 if v is None else v for v in vals], dtype=float)
            elif fam in ("date", "timestamp"):
                values, bad = to_datetime64(vals)
                null = null | bad
            codes = enc.encode(ColumnData(fam, values, null))
    # A row whose table row is absent (no extension row) gets a fixed code: NULL, or 0 where the
    # encoding has no NULL (never the code of row 0 of the table, another unit's value).
    codes = np.where(present, codes, enc.null_code if enc.nullable else 0)
    return codes.astype(np.int64)


def per_unit_sample(state: SynthState, table: str, rows: np.ndarray, m: int) -> np.ndarray:
    """Positions (in ``rows``, rows of ``table``) of at most ``m`` rows per unit: the first in the
    random row order (``_rank``), which depends on nothing outside the unit."""
    if rows.size == 0:
        return np.zeros(0, dtype=np.int64)
    unit = state.unit[table][rows]
    perm = state.order_in(table, unit, rows)
    u = unit[perm]
    starts = np.r_[0, np.flatnonzero(np.diff(u)) + 1]
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(u)]))
    rank = np.arange(len(u)) - starts[group]
    return np.sort(perm[rank < m])


def parent_entity_pos(state: SynthState, e: str) -> np.ndarray:
    """For each valid row of entity ``e``: the position of its parent entity row (among valid rows)."""
    parent = state.forest.parent_of(e)
    pent = state.forest.entity_of(parent)
    prows = entity_row_index(state, pent)
    inv = np.full(state.n(parent), -1, dtype=np.int64)
    arr = prows[parent]
    ok = arr >= 0
    inv[arr[ok]] = np.flatnonzero(ok)
    mine = state.parent_idx[e][state.valid[e]]
    return inv[mine]


def partner_values(state: SynthState, e: str, partner: str, rows: dict[str, np.ndarray]) -> np.ndarray:
    if partner.startswith("^"):
        pent = state.forest.entity_of(state.forest.parent_of(e))
        pinfo = state.entities[pent]
        pa = next(a for a in pinfo.attrs if a.name == partner[1:])
        vals, _ = raw_attr(state, pent, pa, entity_row_index(state, pent))
        return vals[parent_entity_pos(state, e)]
    info = state.entities[e]
    pa = next(a for a in info.attrs if a.name == partner)
    vals, _ = raw_attr(state, e, pa, rows)
    return vals


