"""The context benchmark runs end to end on a small demo hospital and finds no leak."""

from __future__ import annotations

from benchmarks.ci_context import run


def test_context_benchmark_small(hospital_path) -> None:
    result = run(str(hospital_path), pairs=18, seed=1)
    assert result["pairs"] == 18
    assert result["leakage_rate"] == 0.0
    assert result["cell_recall"] == 1.0
    assert result["exact_answers"] == 1.0
    assert result["contexts_with_authorized_data"] > 0
