"""One marginal model per entity, fitted with DP on its untied attributes and its parent's context."""

from __future__ import annotations

from typing import cast

import numpy as np

from pimento.synth._budget import SHARE_CAPS, SHARE_SELECT, SHARE_TIES
from pimento.synth._entity_rows import attr_codes, entity_row_index, parent_entity_pos, per_unit_sample
from pimento.synth._mst import fit_table_model
from pimento.synth._state import Progress, SynthState

__all__ = ["fit_models", "MODEL_ROWS_PER_UNIT"]

#: Rows of one unit counted in the marginals of an entity model (a random choice): the noise
#: scales with this bound, not with the product of the caps (PRIVACY.md, "Models").
MODEL_ROWS_PER_UNIT = 1


def fit_models(state: SynthState, *, progress: Progress) -> SynthState:
    """Fills ``models`` and ``EntityInfo.ctx`` (charges the models' share)."""
    ents = [e for e in state.forest.order if e in state.entities]
    # Fit one model per entity.
    for i, e in enumerate(ents):
        comp = cast(str, state.forest.tables[e].component)  # every entity table belongs to a component
        rho_model = state.acc.rho_total * (
            1 - SHARE_CAPS - SHARE_SELECT - SHARE_TIES - state.share_links(comp) - state.share_types(comp)
        )
        info = state.entities[e]
        state.acc.scope = comp
        comp_ents = [x for x in ents if state.forest.tables[x].component == state.forest.tables[e].component]
        rows = entity_row_index(state, e)
        codes: dict[str, np.ndarray] = {}
        sizes: dict[str, int] = {}
        for a in info.attrs:
            if a.tied_to is not None:
                continue
            codes[a.name] = attr_codes(state, e, a, rows)
            sizes[a.name] = a.size
        parent = state.forest.tables[e].parent
        if parent is not None:
            pent = state.forest.entity_of(parent)
            pinfo = state.entities[pent]
            pmodelled = [a for a in pinfo.attrs if a.tied_to is None and a.kind in ("col", "link", "ctx", "has") and a.size > 1]
            preferred = {p.lstrip("^") for a in info.attrs if isinstance(a.tied_to, str) for p in [a.tied_to] if p.startswith("^")}
            pmodelled.sort(key=lambda a: (a.name not in preferred, a.size))
            info.ctx = [a.name for a in pmodelled[:3]]
            if info.ctx:
                prow = parent_entity_pos(state, e)
                prows = entity_row_index(state, pent)
                for name in info.ctx:
                    pa = next(a for a in pinfo.attrs if a.name == name)
                    pc = attr_codes(state, pent, pa, prows)
                    codes["^" + name] = pc[prow]
                    sizes["^" + name] = pa.size
        # At most MODEL_ROWS_PER_UNIT rows of each unit enter the marginals (random choice,
        # independent of other units): the sensitivity is that bound, not the cap product.
        model_rows = min(info.unit_rows, MODEL_ROWS_PER_UNIT)
        n_rows = len(rows[e])
        if model_rows < info.unit_rows:
            keep = per_unit_sample(state, state.unit[e][state.valid[e]], model_rows)
            codes = {k: v[keep] for k, v in codes.items()}
            n_rows = len(keep)
        model = fit_table_model(
            codes, sizes, rho=rho_model / len(comp_ents), unit_rows=model_rows, accountant=state.acc, what=f"model {e}",
            n_rows=n_rows,
        )
        state.models[e] = model
        state.report["models"][e] = {"attributes": len(model.columns), "pairs": [list(p) for p in model.pairs]}
        progress("fit", i + 1, len(ents))
    return state
