"""DP test of what modelled columns hold where the declared type does not settle it; then every modelled column is coerced to its family."""

from __future__ import annotations

from typing import Any

import numpy as np

from pimento.engines.base import Engine
from pimento.synth._budget import SHARE_TYPES
from pimento.synth._entity_rows import per_unit_sample
from pimento.synth._rows import read_check_domains
from pimento.synth._state import SynthState
from pimento.synth._types import TYPE_SENSITIVITY, classes_for, coerce, decide_family, value_classes

__all__ = ["decide_column_types", "TYPED_ENGINES"]

#: Engines whose declared column types are enforced on every stored value.
TYPED_ENGINES = ("duckdb", "postgres")


def decide_column_types(state: SynthState, *, engine: Engine) -> SynthState:
    """DP test of what modelled columns hold, where the declared type does not settle it
    (PRIVACY.md, "Column types"): TEXT columns (numbers only?) and, for engines that do not
    enforce types, DATE/TIMESTAMP columns (dates, numbers or text?). Then every modelled
    column is coerced to its family; values that do not fit become NULL.

    Fills ``check_domains`` (CHECK ``col IN (literal, ...)`` constraints: public domains, DuckDB
    only), ``family`` and ``type_tests``.
    """
    state.check_domains = read_check_domains(engine, state.cat)
    loose = getattr(engine, "name", "") not in TYPED_ENGINES
    for comp in state.forest.components:
        state.acc.scope = comp
        tables = state.component_tables(comp)
        todo = []
        for t, c in state.modelled_columns(tables):
            state.family[(t, c.name)] = c.type
            if c.type == "boolean" or state.declared_domain(t, c.name):
                continue
            if c.type == "text" or (loose and c.type in ("date", "timestamp")):
                todo.append((t, c))
        state.type_tests[comp] = len(todo)
        if todo:
            rho = state.acc.rho_total * SHARE_TYPES / len(todo)
            sigma = state.acc.sigma(sensitivity=TYPE_SENSITIVITY, rho=rho)
            for t, c in todo:
                col = state.data[t][c.name]
                rows = np.flatnonzero(state.valid[t] & ~col.null)
                # One value per unit, chosen in a random order independent of other units.
                kept = rows[per_unit_sample(state, t, rows, 1)]
                classes = classes_for(c.type)
                cls = value_classes(col.values[kept], c.type)
                hist = np.array([float(np.sum(cls == k)) for k in classes])
                noisy = state.acc.gaussian(hist, sensitivity=TYPE_SENSITIVITY, rho=rho, what=f"type of {t}.{c.name}")
                fam = decide_family(c.type, dict(zip(classes, noisy.tolist())), sigma)
                state.family[(t, c.name)] = fam
                if fam != c.type:
                    state.report["column_types"][f"{t}.{c.name}"] = fam
        for t in tables:
            for c in state.cat.table(t).columns:
                decided = state.family.get((t, c.name))
                if decided is not None:
                    state.data[t][c.name] = coerce(state.data[t][c.name], decided)
    return state
