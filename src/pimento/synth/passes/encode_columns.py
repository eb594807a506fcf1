"""An encoding for every modelled column: declared and CHECK domains as they are, other categories selected with DP."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pimento.engines.base import Engine
from pimento.errors import ConfigError
from pimento.synth._budget import SHARE_SELECT
from pimento.synth._encode import KEYS_PER_UNIT, MIN_COVERAGE, Encoding, bucket_keys, public_encoding, select_keys, selection_sensitivity_sq
from pimento.synth._rows import public_keys
from pimento.synth._state import Progress, SynthState

__all__ = ["encode_columns", "MAX_PUBLIC_VALUES"]

#: A public value set (declared or a link context) larger than this is refused.
MAX_PUBLIC_VALUES = 1000


def encode_columns(state: SynthState, *, engine: Engine, progress: Progress) -> SynthState:
    """Fills ``enc`` (charges the selection share)."""
    for comp in state.forest.components:
        state.acc.scope = comp
        todo = []
        for t, c in state.modelled_columns(state.component_tables(comp)):
            fam = state.column_family(t, c.name)
            domain = state.check_domains.get((t, c.name))
            if domain is None and (c.name in state.link_context.get(t, []) or (t, c.name) in state.public_values):
                # Declared public value sets and link context: the set of values is read
                # without budget (PRIVACY.md, "Declared public values").
                domain = public_keys(engine, t, c.name, limit=MAX_PUBLIC_VALUES)
                if domain is None:
                    raise ConfigError(
                        f"{t}.{c.name} has more than {MAX_PUBLIC_VALUES} distinct values: too many for a public value set",
                        hint=f"remove {t}.{c.name} from [synth] public_values / link_context (it is then selected with DP)",
                    )
            if fam == "boolean":
                state.enc[(t, c.name)] = public_encoding("boolean", [False, True], c.nullable)
            elif domain is not None:
                state.enc[(t, c.name)] = public_encoding(fam, domain, c.nullable)
            elif fam in ("text", "integer", "real", "date", "timestamp"):
                todo.append((t, c))
            else:
                state.enc[(t, c.name)] = Encoding(fam, "free", nullable=c.nullable)
        if not todo:
            continue
        fams = [state.column_family(t, c.name) for t, c in todo]
        weights = [2 if f in ("integer", "real", "date", "timestamp") else 1 for f in fams]
        rho_unit = state.acc.rho_total * SHARE_SELECT / sum(weights)
        delta_col = state.acc.delta_selection / sum(weights)
        for i, ((t, c), fam) in enumerate(zip(todo, fams)):
            col = state.data[t][c.name].take(np.flatnonzero(state.valid[t]))
            unit = state.unit[t][state.valid[t]]
            present = ~col.null
            m = min(KEYS_PER_UNIT, state.unit_rows[t])
            sens = math.sqrt(selection_sensitivity_sq(m))
            levels = ["fine", "coarse"] if fam in ("integer", "real", "date", "timestamp") else ["fine"]
            chosen = None
            for level in levels:
                sigma = state.acc.sigma(sensitivity=sens, rho=rho_unit)
                state.acc.spend(f"selection {t}.{c.name} ({level})", rho_unit, delta_col)
                keys = bucket_keys(col, level)
                kept, weights_kept, coverage = select_keys(
                    keys, present, unit, sigma=sigma, delta_column=delta_col, keys_per_unit=m,
                    noise=lambda size, s=sigma: state.acc.normal(size, s), order_rng=state.order_rng,
                )
                if kept and (coverage >= MIN_COVERAGE or level == "coarse"):
                    chosen = Encoding(fam, "cat", level, kept, weights_kept, True, c.nullable)
                    break
            if chosen is None:
                chosen = Encoding(fam, "free", nullable=c.nullable)
                state.report["free_text"].append(f"{t}.{c.name}")
            state.enc[(t, c.name)] = chosen
            progress("encode", i + 1, len(todo))
    return state
