"""The exact context codes of component roots whose columns are declared link context (no budget)."""

from __future__ import annotations

from pimento.synth._entity_rows import attr_codes, entity_row_index
from pimento.synth._state import SynthState, col_name

__all__ = ["read_public_directory"]


def read_public_directory(state: SynthState) -> SynthState:
    """Exact context codes of component roots whose columns are declared link context.

    Declaring ``T.c`` link context makes the directory of ``T`` public: which rows exist and
    their context values (a staff directory listing each employee's role and specialty). No
    budget is spent; the synthetic table gets the same number of rows per context tuple, with
    fresh keys, and its other attributes are drawn from the model given the context.
    """
    for e, info in state.entities.items():
        tp = state.forest.tables[e]
        if tp.parent is not None:
            continue
        names = {col_name(e, c) for c in state.link_context_of(e)}
        attrs = [a for a in info.attrs if a.kind == "col" and a.table == e and a.name in names and a.tied_to is None]
        if not attrs:
            continue
        rows = entity_row_index(state, e)
        state.directory[e] = {a.name: attr_codes(state, e, a, rows) for a in attrs}
        state.report.setdefault("public_directory", {})[e] = {"rows": int(len(rows[e])), "columns": [a.column for a in attrs]}
    return state
