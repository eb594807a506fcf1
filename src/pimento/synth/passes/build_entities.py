"""The attributes of every entity model: columns, extension presence, fan-out degrees, links and their context."""

from __future__ import annotations

from typing import Any

from pimento.engines.base import Engine
from pimento.synth._encode import Encoding, public_encoding
from pimento.synth._rows import public_keys
from pimento.synth._state import Attr, EntityInfo, SynthState, col_name

__all__ = ["build_entities"]


def build_entities(state: SynthState, *, engine: Engine) -> SynthState:
    """Fills ``entities`` (no budget; public link keys are read from public tables)."""
    for t in state.forest.order:
        if state.forest.tables[t].kind != "entity":
            continue
        info = EntityInfo(t, state.entity_tables(t), unit_rows=state.unit_rows[t])
        for tt in info.tables:
            tp = state.forest.tables[tt]
            if tt != t:
                info.attrs.append(Attr(f"has:{tt}", "has", tt, size=2))
            minted = state.minted(tt)
            fkcols = state.fk_columns(tt)
            for c in state.cat.table(tt).columns:
                if c.name in fkcols or c.name in minted:
                    continue
                enc = state.enc[(tt, c.name)]
                if enc.kind != "cat":
                    continue
                info.attrs.append(Attr(col_name(tt, c.name), "col", tt, c.name, enc.size, enc))
            for fk in tp.links:
                ref = state.cat.table(fk.ref_table)
                nullable = any(state.cat.table(tt).column(c).nullable for c in fk.columns)
                if not ref.private and len(fk.columns) == 1:
                    keys = public_keys(engine, ref.name, fk.ref_columns[0])
                    if keys is not None:
                        enc = public_encoding("key", keys, nullable)
                        info.attrs.append(Attr(f"link:{tt}.{fk.columns[0]}", "link", tt, fk.columns[0], enc.size, enc, fk, fk.ref_columns[0]))
                        continue
                ctx_cols = state.link_context.get(ref.name, []) if ref.private else []
                for rc in ctx_cols:
                    ctx_enc = state.enc.get((ref.name, rc))
                    if ctx_enc is None or ctx_enc.kind != "cat":
                        continue
                    enc2 = Encoding(ctx_enc.family, "cat", ctx_enc.level, ctx_enc.keys, ctx_enc.weights, ctx_enc.has_other, True)
                    info.attrs.append(Attr(f"ctx:{tt}.{fk.columns[0]}.{rc}", "ctx", tt, fk.columns[0], enc2.size, enc2, fk, rc))
                if nullable and not (ctx_cols):
                    info.attrs.append(Attr(f"linknull:{tt}.{fk.columns[0]}", "linknull", tt, fk.columns[0], 2, fk=fk))
            for child in tp.children:
                info.attrs.append(Attr(f"deg:{child}", "deg", tt, size=state.caps[child] + 1, child=child))
        state.entities[t] = info
    return state
