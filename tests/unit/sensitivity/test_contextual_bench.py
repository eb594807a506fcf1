"""Smoke test of python -m benchmarks.contextual_dp: ratios in (0, 1], the table renders."""

from __future__ import annotations

from benchmarks.contextual_dp import QUERIES, main, run, table


def test_bench_runs_and_never_reports_a_ratio_above_one(tmp_path, capsys):
    from pimento.demo.hospital import create_demo

    db = tmp_path / "h.duckdb"
    create_demo(db, patients=150, seed=3)
    result = run(db, epsilon="10", delta="1e-6", fractions=(0, 90))
    assert [r["authorized_percent"] for r in result["rows"]] == [0, 90]
    for row in result["rows"]:
        assert 0 < row["min_crs_over_rs"] <= row["mean_crs_over_rs"] <= 1
    assert result["rows"][0]["queries_below_1"] == 0  # nothing authorized: CRS = RS
    assert result["rows"][1]["mean_subject_ell_over_ls"] <= 1
    assert str(len(QUERIES)) in table(result)
    assert main(["--db", str(db), "--domains", "hospital", "--epsilon", "1", "--fractions", "0,90", "--no-png"]) == 0
    assert "mean CRS/RS" in capsys.readouterr().out
