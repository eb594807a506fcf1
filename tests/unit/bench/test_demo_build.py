"""The demo build benchmark runs end to end on a tiny size and reports what docs/benchmarks.md quotes."""

from __future__ import annotations

import json

import pytest

from benchmarks import demo_build


def test_measure_reports_timings_rows_and_size() -> None:
    result = demo_build.measure(60, seed=1)
    assert result["patients"] == 60 and result["rows"]["Patient"] == 60
    assert result["total_rows"] == sum(result["rows"].values())
    assert 0 <= result["sample_wall_s"] <= result["wall_s"]
    assert result["load_wall_s"] == pytest.approx(result["wall_s"] - result["sample_wall_s"], abs=0.02)
    assert result["file_mb"] > 0


def test_main_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    demo_build.main(["--patients", "40", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["machine"].startswith(f"{__import__('os').cpu_count()}-core")
    assert [r["patients"] for r in report["runs"]] == [40]


def test_main_rejects_non_positive_sizes() -> None:
    with pytest.raises(SystemExit):
        demo_build.main(["--patients", "0"])
