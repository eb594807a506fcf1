"""Shared by the Spark tests: why Spark cannot run here (or None), and Parquet folders built with DuckDB.

Outside CI, a machine without pyspark or Java skips the Spark tests with the reason; under
``CI=true`` :data:`SPARK_MARKS` fails them instead (``.ci/run`` installs Java, the test extra
installs pyspark).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest


def spark_missing() -> str | None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install 'pimento-dp[spark]')"
    if shutil.which("java") is None:
        return "no Java runtime (Spark needs Java 17)"
    try:
        subprocess.run(["java", "-version"], capture_output=True, check=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "java -version fails"
    return None


MISSING = spark_missing()
os.environ.setdefault("PIMENTO_SPARK_MASTER", "local[2]")  # the tests' Spark: two threads
if MISSING and os.environ.get("CI", "").lower() == "true":
    raise RuntimeError(f"the Spark tests must run under CI: {MISSING}")

#: pytestmark of a Spark test module.
SPARK_MARKS = [
    pytest.mark.skipif(MISSING is not None, reason=MISSING or ""),
    # py4j closes its per-thread sockets to the JVM when garbage collected
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


def write_parquet_folder(folder: Path, statements) -> str:
    """Run ``statements`` in an in-memory DuckDB and write each table as ``NAME.parquet`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    try:
        for statement in statements:
            con.execute(statement)
        for (table,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
            con.execute(f"COPY \"{table}\" TO '{folder / (table + '.parquet')}' (FORMAT parquet)")
    finally:
        con.close()
    return f"spark:{folder}"
