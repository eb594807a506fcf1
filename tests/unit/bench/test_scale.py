"""bench/scale on a tiny TPC-H: Parquet for Spark written once, DuckDB rows with the fields the docs use."""

from __future__ import annotations

import json
import subprocess
import sys

import duckdb
import pytest

pytest.importorskip("duckdb_extension_tpch")

from benchmarks import child_env, scale  # noqa: E402
from benchmarks.rs_tpch import tpch_database  # noqa: E402
from benchmarks.scale import TABLES, parquet_folder, worker  # noqa: E402


def test_parquet_folder_and_duckdb_worker(tmp_path):
    folder = parquet_folder(0.01, tmp_path)
    assert sorted(p.stem for p in folder.glob("*.parquet")) == sorted(TABLES)
    assert parquet_folder(0.01, tmp_path) == folder  # written once
    rows = worker("duckdb", 0.01, tmp_path, 1, 0.01, 1, "1GB")
    assert [r["relations"] for r in rows] == [3, 4, 5]
    assert len({r["count"] for r in rows}) == 1 and rows[0]["count"] > 0
    for row in rows:
        assert row["rs_s"] > 0 and row["count_s"] > 0 and row["peak_mb"] > 0
        assert row["ratio"] > 0 and row["rs"] > 0


def test_one_chain_and_duckdb_only_run_writes_no_parquet(tmp_path, monkeypatch, capsys):
    rows = worker("duckdb", 0.01, tmp_path, 1, 0.01, 1, "1GB", relations=(4,))
    assert [r["relations"] for r in rows] == [4]
    monkeypatch.setattr(sys, "argv", ["scale", "--sf", "0.01", "--engines", "duckdb", "--folder", str(tmp_path),
                                      "--relations", "3", "--threads", "1", "--memory", "1GB"])
    scale.main()
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [r["relations"] for r in lines if "relations" in r] == [3]
    assert not (tmp_path / "pimento_tpch_sf0.01_parquet").exists()  # DuckDB reads its own file


def test_worker_peak_is_its_own_not_the_parents(tmp_path):
    """A child started after its parent peaked reports its own peak (ru_maxrss would give the parent's)."""
    parent = (
        "import subprocess, sys\n"
        "b = bytearray(400 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096]); del b\n"
        "subprocess.run([sys.executable, '-c', 'from benchmarks.scale import _self_peak_mb; "
        "print(_self_peak_mb())'], check=True)\n"
    )
    out = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, check=True, env=child_env()).stdout
    assert 0 < float(out.split()[-1]) < 300  # the parent's 400 MB is not the child's


def test_an_interrupted_generation_is_not_taken_for_a_database(tmp_path):
    stale = tmp_path / "pimento_tpch_sf0.01.partial"
    stale.write_bytes(b"left by a killed run")
    path = tpch_database(0.01, tmp_path)
    assert not stale.exists() and path.name == "pimento_tpch_sf0.01.duckdb"
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT COUNT(*) FROM lineitem").fetchone()[0] > 0
    finally:
        con.close()
