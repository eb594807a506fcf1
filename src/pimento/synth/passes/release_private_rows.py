"""Release the private rows once every measurement is made: sampling is post-processing only."""

from __future__ import annotations

from pimento.synth._state import SynthState

__all__ = ["release_private_rows"]


def release_private_rows(state: SynthState) -> SynthState:
    """Empties ``data``, ``parent_idx``, ``valid`` and ``unit`` (the private rows and what was
    derived from them row by row): the passes after it read only the models, the encodings, the
    noisy link profiles and the declared-public directory, so the sampled rows provably do not
    touch the private rows, and the memory they held is free for sampling and writing
    (docs/benchmarks.md, "At scale")."""
    state.data = {}
    state.parent_idx = {}
    state.valid = {}
    state.unit = {}
    return state
