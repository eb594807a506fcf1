"""Read every private table into ``state.data`` (public tables are read by ``read_public_tables``)."""

from __future__ import annotations

from typing import Any

from pimento.engines.base import Engine
from pimento.synth._rows import read_table
from pimento.synth._state import Progress, SynthState

__all__ = ["read_tables"]


def read_tables(state: SynthState, *, engine: Engine, progress: Progress) -> SynthState:
    """Fills ``state.data``."""
    names = [t for t in state.forest.tables if state.forest.tables[t].kind != "public"]
    for i, t in enumerate(state.forest.order):
        state.data[t] = read_table(engine, state.cat, t)
        progress("read", i + 1, len(names))
    return state
