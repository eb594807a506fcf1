"""benchmarks/person_unit.py --through-release on a small demo: every formulation is released under both units."""

from __future__ import annotations

from benchmarks.person_unit import through_release


def test_through_release_answers_every_formulation_under_both_units():
    out = through_release(patients=300, draws=1, seed=0, epsilon="1", delta="1e-6")
    assert set(out["summary"]) == {"Patient", "tuple"}
    for name, row in out["rows"].items():
        assert "relative_errors" in row["Patient"] and "relative_errors" in row["tuple"], (name, row)
        assert row["Patient"]["mechanisms"][0] in ("truncated_laplace", "r2t") and row["Patient"]["reason"]
        assert row["tuple"]["mechanisms"][0] in ("smooth_laplace", "global_laplace")
