"""DP tests of ties (a column that copies a parent's or an earlier column's value) and of total participation of 1:1 extensions."""

from __future__ import annotations

import math
from typing import cast

import numpy as np

from pimento.synth._budget import SHARE_TIES
from pimento.synth._encode import Encoding
from pimento.synth._entity_rows import entity_row_index, partner_values, raw_attr
from pimento.synth._rows import norm
from pimento.synth._state import Attr, SynthState

__all__ = ["detect_ties", "TIE_MISMATCH", "TOTAL_PARTICIPATION"]

#: A tie (copy a parent's value) is declared when the noisy mismatch share is at most this.
TIE_MISMATCH = 0.02
#: A 1:1 extension present in at least this noisy share of parent rows is always generated.
TOTAL_PARTICIPATION = 0.97


def detect_ties(state: SynthState) -> SynthState:
    """Sets ``Attr.tied_to`` of the tied attributes (charges the ties' share, per component)."""
    ents = [e for e in state.forest.order if e in state.entities]
    # Ties are tested per component with a shared budget share.
    for comp in state.forest.components:
        state.acc.scope = comp
        comp_ents = [e for e in ents if state.forest.tables[e].component == comp]
        if not comp_ents:
            continue
        candidates: list[tuple[str, Attr, str | None]] = []
        for e in comp_ents:
            info = state.entities[e]
            parent_ent = state.forest.entity_of(state.forest.parent_of(e)) if state.forest.tables[e].parent else None
            parent_attrs = state.entities[parent_ent].attrs if parent_ent else []
            for i, a in enumerate(info.attrs):
                if a.kind == "has":
                    candidates.append((e, a, None))
                    continue
                if a.kind not in ("col", "link", "ctx"):
                    continue
                partner = _partner(a, info.attrs[:i], parent_attrs)
                if partner is not None:
                    candidates.append((e, a, partner))
        rho_tie = state.acc.rho_total * SHARE_TIES / len(candidates) if candidates else 0.0
        rows_cache = {e: entity_row_index(state, e) for e in comp_ents}
        for e, a, partner in candidates:
            rows = rows_cache[e]
            n_rows = state.entities[e].unit_rows
            sens = math.sqrt(2.0) * n_rows
            if a.kind == "has":
                base_present = np.ones(len(rows[e]), dtype=bool)
                parent_tab = state.forest.tables[a.table].parent
                if parent_tab in rows:
                    base_present = rows[parent_tab] >= 0
                stats = np.array([float((rows[a.table] >= 0).sum()), float(base_present.sum())])
                noisy = state.acc.gaussian(stats, sensitivity=sens, rho=rho_tie, what=f"participation of {a.table}")
                sigma = state.acc.sigma(sensitivity=sens, rho=rho_tie)
                if noisy[1] > 0 and noisy[0] >= TOTAL_PARTICIPATION * noisy[1] - 2.0 * sigma:
                    a.tied_to = "=1"
                    state.report["ties"].append(f"{a.table} present for every parent row")
                continue
            assert partner is not None  # only participation ("has") candidates have none
            mine, present = raw_attr(state, e, a, rows)
            theirs = partner_values(state, e, partner, rows)
            mism = float(np.sum(present & np.array([norm(x) != norm(y) for x, y in zip(mine.tolist(), theirs.tolist())], dtype=bool)))
            stats = np.array([mism, float(present.sum())])
            noisy = state.acc.gaussian(stats, sensitivity=sens, rho=rho_tie, what=f"tie {a.name}")
            sigma = state.acc.sigma(sensitivity=sens, rho=rho_tie)
            if noisy[1] > 0 and noisy[0] <= TIE_MISMATCH * noisy[1] + 2.0 * sigma:
                a.tied_to = partner
                state.report["ties"].append(f"{a.name} = {partner}")
    return state


def _partner(a: Attr, earlier: list[Attr], parent_attrs: list[Attr]) -> str | None:
    def same(b: Attr) -> bool:
        if b.kind != a.kind or b is a:
            return False
        if a.kind == "col":
            return (
                cast(str, b.column).lower() == cast(str, a.column).lower()
                and b.table != a.table
                and cast(Encoding, b.encoding).family == cast(Encoding, a.encoding).family
            )
        assert a.fk is not None and b.fk is not None  # link and context attributes follow a foreign key
        return b.fk.ref_table == a.fk.ref_table and b.ref_column == a.ref_column

    for b in earlier:
        if same(b):
            return b.name
    for b in parent_attrs:
        if same(b):
            return "^" + b.name
    return None
