"""The synthesis passes, in the manner of sqlglot's optimizer rules.

Each pass is ``pass(state, *, only_the_options_it_needs) -> state``: it reads some fields of the
:class:`~pimento.synth._state.SynthState` and fills others (its docstring says which), and
:func:`run_passes` gives it the options its signature names (``engine``: the private database;
``progress``: the progress callback). ``pimento.synth.api.PASSES`` lists them in order; the
order matters, because the noise of the passes that measure comes from one generator.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from pimento.synth._state import SynthState

__all__ = ["Pass", "run_passes"]

Pass = Callable[..., SynthState]


def run_passes(state: SynthState, passes: Iterable[Pass], **options: Any) -> SynthState:
    """Run ``passes`` in order, each with the options its signature names."""
    for step in passes:
        wanted = inspect.signature(step).parameters
        state = step(state, **{k: v for k, v in options.items() if k in wanted})
    return state
