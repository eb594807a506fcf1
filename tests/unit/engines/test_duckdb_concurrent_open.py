"""Threads opening one DuckDB file read-only at the same time all get a hardened connection.

Connections to one file in one process share a DuckDB instance; without a process-wide lock
around the lock check and the SETs, the second thread's SET failed with "the configuration
has been locked" (found by the service's load test: 31 requests answered 503).
"""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb

from pimento.engines.duckdb_engine import DuckDBEngine


def test_concurrent_first_opens_of_one_file_all_succeed(tmp_path: Path) -> None:
    path = tmp_path / "x.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (a INTEGER)")
    con.close()
    errors: list[str] = []
    for _ in range(10):
        engines: list[DuckDBEngine] = []
        barrier = threading.Barrier(8)

        def open_one() -> None:
            barrier.wait()
            try:
                engines.append(DuckDBEngine(path, read_only=True))
            except Exception as exc:  # noqa: BLE001 - the test collects every failure
                errors.append(repr(exc))

        threads = [threading.Thread(target=open_one) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for engine in engines:
            assert engine.execute("SELECT current_setting('enable_external_access')").scalar() is False
            engine.close()
    assert errors == []
