"""``benchmarks.ci_context.latency`` (the CI authorization latency of docs/benchmarks.md, section
"Scale"): its fields, with and without the witness search, on a small DuckDB demo; the Spark copy
it measures is the one tests/unit/policy/test_ci_spark.py checks for parity."""

from __future__ import annotations

from benchmarks.ci_context import QUERIES, latency
from pimento.demo.hospital import create_demo


def test_latency_reports_each_query_and_the_context(tmp_path) -> None:
    path = tmp_path / "h" / "hospital.duckdb"
    create_demo(path, patients=150, seed=2)
    fast = latency(str(path), repeats=1, search=False)
    assert fast["engine"] == "duckdb" and fast["patients"] == 150 and fast["witness_search"] is False
    assert fast["samples"] == len(QUERIES) and set(fast["p50_ms_per_query"]) == set(QUERIES)
    assert 0 < fast["p50_ms"] <= fast["p99_ms"] <= fast["max_ms"]
    searched = latency(str(path), repeats=1)
    assert searched["witness_search"] is True and searched["context"]["purpose"] == "treatment"
