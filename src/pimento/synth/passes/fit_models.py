"""One marginal model per entity, fitted with DP on its untied attributes and its parent's context."""

from __future__ import annotations

from typing import cast

import numpy as np

from pimento.engines.base import Engine
from pimento.synth._budget import SHARE_CAPS, SHARE_SELECT, SHARE_TIES
from pimento.synth._engine_counts import EngineCounts
from pimento.synth._entity_rows import attr_codes, entity_row_index, parent_entity_pos, per_unit_sample
from pimento.synth._mst import fit_table_model
from pimento.synth._state import Progress, SynthState

__all__ = ["fit_models", "MODEL_ROWS_PER_UNIT", "context_attributes", "model_code_names", "model_code_sizes", "model_codes"]

#: Rows of one unit counted in the marginals of an entity model (a random choice): the noise
#: scales with this bound, not with the product of the caps (PRIVACY.md, "Models").
MODEL_ROWS_PER_UNIT = 1


def fit_models(state: SynthState, *, engine: Engine, progress: Progress) -> SynthState:
    """Fills ``models`` and ``EntityInfo.ctx`` (charges the models' share). The exact counts come
    from one ``GROUP BY`` in the engine where SQL can choose and code the rows identically
    (``_engine_counts``, ``state.counts_in_engine``), else from the rows in memory."""
    ents = [e for e in state.forest.order if e in state.entities]
    counter = EngineCounts(state, engine) if state.counts_in_engine else None
    for i, e in enumerate(ents):
        comp = cast(str, state.forest.tables[e].component)  # every entity table belongs to a component
        rho_model = state.acc.rho_total * (
            1 - SHARE_CAPS - SHARE_SELECT - SHARE_TIES - state.share_links(comp) - state.share_types(comp)
        )
        info = state.entities[e]
        state.acc.scope = comp
        comp_ents = [x for x in ents if state.forest.tables[x].component == state.forest.tables[e].component]
        info.ctx = context_attributes(state, e)
        # At most MODEL_ROWS_PER_UNIT rows of each unit enter the marginals (random choice,
        # independent of other units): the sensitivity is that bound, not the cap product.
        model_rows = min(info.unit_rows, MODEL_ROWS_PER_UNIT)
        counted = counter.model_counts(e, model_code_names(state, e), model_rows) if counter is not None else None
        sizes = model_code_sizes(state, e)
        weights: np.ndarray | None
        if counted is not None:
            codes, weights = counted
            n_rows = int(weights.sum())
            state.report.setdefault("counted_in_engine", []).append(e)
        else:
            codes, n_rows = model_codes(state, e, model_rows)
            weights = None
        model = fit_table_model(
            codes, sizes, rho=rho_model / len(comp_ents), unit_rows=model_rows, accountant=state.acc, what=f"model {e}",
            n_rows=n_rows, weights=weights,
        )
        state.models[e] = model
        state.report["models"][e] = {"attributes": len(model.columns), "pairs": [list(p) for p in model.pairs]}
        progress("fit", i + 1, len(ents))
    return state


def context_attributes(state: SynthState, e: str) -> list[str]:
    """The parent entity's attributes that entity ``e``'s model takes as context (at most 3)."""
    info = state.entities[e]
    parent = state.forest.tables[e].parent
    if parent is None:
        return []
    pinfo = state.entities[state.forest.entity_of(parent)]
    pmodelled = [a for a in pinfo.attrs if a.tied_to is None and a.kind in ("col", "link", "ctx", "has") and a.size > 1]
    preferred = {p.lstrip("^") for a in info.attrs if isinstance(a.tied_to, str) for p in [a.tied_to] if p.startswith("^")}
    pmodelled.sort(key=lambda a: (a.name not in preferred, a.size))
    return [a.name for a in pmodelled[:3]]


def model_code_names(state: SynthState, e: str) -> list[str]:
    """The codes entity ``e``'s model counts: its untied attributes, then ``^name`` for each context attribute."""
    info = state.entities[e]
    return [a.name for a in info.attrs if a.tied_to is None] + ["^" + n for n in info.ctx]


def model_code_sizes(state: SynthState, e: str) -> dict[str, int]:
    info = state.entities[e]
    sizes = {a.name: a.size for a in info.attrs if a.tied_to is None}
    if info.ctx:
        pinfo = state.entities[state.forest.entity_of(state.forest.parent_of(e))]
        sizes.update({"^" + a.name: a.size for a in pinfo.attrs if a.name in info.ctx})
    return sizes


def model_codes(state: SynthState, e: str, model_rows: int) -> tuple[dict[str, np.ndarray], int]:
    """The codes of entity ``e``'s model for its counted rows, in memory (one entry per row), and the number of rows."""
    info = state.entities[e]
    rows = entity_row_index(state, e)
    codes: dict[str, np.ndarray] = {}
    for a in info.attrs:
        if a.tied_to is None:
            codes[a.name] = attr_codes(state, e, a, rows)
    if info.ctx:
        pent = state.forest.entity_of(state.forest.parent_of(e))
        pinfo = state.entities[pent]
        prow = parent_entity_pos(state, e)
        prows = entity_row_index(state, pent)
        for name in info.ctx:
            pa = next(a for a in pinfo.attrs if a.name == name)
            codes["^" + name] = attr_codes(state, pent, pa, prows)[prow]
    n_rows = len(rows[e])
    if model_rows < info.unit_rows:
        keep = per_unit_sample(state, e, np.flatnonzero(state.valid[e]), model_rows)
        codes = {k: v[keep] for k, v in codes.items()}
        n_rows = len(keep)
    return codes, n_rows
