"""bench/synth_scale builds the demo and synthesizes it in child processes and reports each pass."""

from __future__ import annotations

import json

import pytest

from benchmarks import synth_scale
from pimento.synth.api import PASSES


@pytest.mark.slow
def test_synth_scale_reports_time_memory_and_every_pass(tmp_path):
    out = tmp_path / "report.json"
    report = synth_scale.main(["--patients", "40", "--workdir", str(tmp_path), "--noise-seed", "3", "--json", str(out)])
    assert json.loads(out.read_text()) == report
    assert [p["pass"] for p in report["passes"]] == [p.__name__ for p in PASSES]
    assert report["source_rows"]["Patient"] == 40 and report["build_peak_rss_gb"] > 0
    assert 0 < report["synth_peak_rss_gb"] and report["synth_seconds"] > 0
    assert all(p["peak_gb"] <= report["synth_peak_rss_gb"] for p in report["passes"])
    assert report["synthetic_rows"]["Patient"] > 0 and (tmp_path / "synthetic-40.duckdb").exists()
