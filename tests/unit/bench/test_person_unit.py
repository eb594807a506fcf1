"""benchmarks/person_unit.py on a small demo: every formulation is answered and the summary has its shape."""

from __future__ import annotations

from benchmarks.person_unit import EPSILONS, run


def test_person_unit_benchmark_runs_on_a_small_demo():
    out = run(patients=300, draws=5, gs=32, seed=0)
    assert out["refused"] == [] and out["questions"] >= 1
    assert set(out["summary"]) == {f"{e} {m}" for e in EPSILONS for m in ("r2t", "truncation", "auto")}
    distinct = next(r for r in out["rows"] if r["query"].startswith("A warfarin"))
    assert distinct["gs"] == 1 and distinct["largest"] == 1  # one patient counts once
    assert all(0 <= v["median"] <= v["p90"] for v in out["summary"].values())
