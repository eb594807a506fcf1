"""Read the public tables, which the copy holds verbatim (declared public: no budget)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pimento.engines.base import Engine
from pimento.sql.quote import quote_identifier, quote_identifiers
from pimento.synth._state import SynthState

__all__ = ["read_public_tables"]


def read_public_tables(state: SynthState, *, engine: Engine) -> SynthState:
    """Fills ``public_rows``."""
    state.public_rows = {name: _read_public(engine, state.cat, name) for name, tp in state.forest.tables.items() if tp.kind == "public"}
    return state


def _read_public(engine: Engine, catalog: Any, table: str) -> dict[str, np.ndarray]:
    t = catalog.table(table)
    cols = [c.name for c in t.columns]
    dialect = getattr(engine, "dialect", "duckdb")
    rows = engine.execute(f"SELECT {quote_identifiers(cols, dialect)} FROM {quote_identifier(t.name, dialect)}").rows
    out = {}
    for i, c in enumerate(cols):
        arr = np.empty(len(rows), dtype=object)
        arr[:] = [r[i] for r in rows]
        out[c] = arr
    return out
