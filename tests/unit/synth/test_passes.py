"""The synthesis is a sequence of passes over one explicit state (pimento.synth.passes)."""

from __future__ import annotations

import inspect

import pytest

from pimento.synth.api import PASSES
from pimento.synth.passes import run_passes

OPTIONS = {"engine", "progress"}


@pytest.mark.parametrize("step", PASSES, ids=lambda p: p.__name__)
def test_each_pass_has_its_own_module_and_names_only_the_options_it_needs(step):
    assert step.__module__ == f"pimento.synth.passes.{step.__name__}"
    params = list(inspect.signature(step).parameters.values())
    assert params[0].name == "state" and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:])
    assert {p.name for p in params[1:]} <= OPTIONS
    assert step.__doc__


def test_the_measuring_passes_come_before_the_post_processing():
    names = [p.__name__ for p in PASSES]
    assert names.index("fit_models") < names.index("sample_rows")
    assert names[-1] == "repair_constraints" and names[0] == "read_tables"
    # Everything after the release is post-processing: it cannot read the private rows.
    assert names.index("release_private_rows") == names.index("sample_rows") - 1
    assert names.index("release_private_rows") > max(names.index(n) for n in ("fit_models", "read_public_directory", "detect_ties"))


def test_run_passes_hands_each_pass_only_the_options_it_names():
    seen: list[tuple[str, dict]] = []

    def one(state, *, engine):
        seen.append(("one", {"engine": engine}))
        return state + 1

    def two(state):
        seen.append(("two", {}))
        return state * 10

    assert run_passes(1, (one, two), engine="E", progress=print) == 20
    assert seen == [("one", {"engine": "E"}), ("two", {})]
