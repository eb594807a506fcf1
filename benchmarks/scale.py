"""Benchmark: residual sensitivity at scale, on DuckDB and on Spark SQL (local mode).

    python -m benchmarks.scale --sf 1 3                     # both engines, chains of 3, 4, 5
    python -m benchmarks.scale --sf 1 --engines spark --threads 2
    python -m benchmarks.scale --sf 10 --engines duckdb --folder /tmp/tpch   # data generated once, reused
    python -m benchmarks.scale --sf 10 --engines spark --relations 3 --folder /tmp/tpch

TPC-H is generated with DuckDB's tpch extension (offline: the ``duckdb-extension-tpch`` wheel, as
:mod:`benchmarks.rs_tpch` does), kept as a DuckDB file for the DuckDB runs and written to a
folder of Parquet files (``region``, ``nation``, ``customer``, ``orders``, ``lineitem``) for the
Spark runs (``spark:/folder``; written only when Spark runs). Both are reused from ``--folder``, so
the data is generated once and each engine (or each chain, ``--relations``) can run separately.
The chains are rs_tpch's (3: customer - orders - lineitem, up to 5: region - ... - lineitem),
every relation private, no key declared and no catalog passed, so nothing is trusted to be unique
(the T_E statement checks uniqueness on the data itself).

Each (scale factor, engine) runs in its own process so its memory peak is its own: DuckDB's is
the process's peak resident set; Spark's is the Python driver's plus the JVM's (``VmHWM``).
Ratio = time of ``residual_sensitivity`` (all T_E, envelope, Shapley) / time of the COUNT, both
medians of ``--repeat`` runs after one warm-up run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import duckdb

from benchmarks import child_env
from benchmarks.rs_tpch import DBGEN_MEMORY_LIMIT, chain_query, median_time as _median, tpch_database
from pimento.engines import open_engine
from pimento.sensitivity import residual_sensitivity

TABLES = ("region", "nation", "customer", "orders", "lineitem")


def parquet_folder(sf: float, folder: Path) -> Path:
    """The TPC-H tables of ``sf`` as ``NAME.parquet`` files (written once from the DuckDB file)."""
    out = folder / f"pimento_tpch_sf{sf:g}_parquet"
    if (out / "lineitem.parquet").exists():
        return out
    source = tpch_database(sf, folder)
    partial = out.with_name(out.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(source), read_only=True, config={"memory_limit": DBGEN_MEMORY_LIMIT})
    try:
        for table in TABLES:
            con.execute(f"COPY {table} TO '{partial / (table + '.parquet')}' (FORMAT parquet)")
    finally:
        con.close()
    partial.rename(out)
    return out


def _self_peak_mb() -> float:
    """This process's own peak resident memory (``VmHWM``), in MB.

    Not ``ru_maxrss``: a process started with ``subprocess`` inherits its parent's peak there (the
    kernel keeps the larger across fork/vfork and exec), so a worker started after the parent wrote
    the Parquet files would report the parent's peak. ``ru_maxrss`` only without /proc.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _jvm_peak_mb() -> float:
    """Peak resident memory (VmHWM) of this process's java children, in MB (0 without /proc)."""
    total = 0.0
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = stat[stat.rindex(")") + 2 :].split()[1]
            if ppid != me:
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1]) / 1024
        except (OSError, ValueError, IndexError):
            continue
    return total


def worker(engine_name: str, sf: float, folder: Path, repeat: int, beta: float, threads: int, memory: str,
           relations: tuple[int, ...] = (3, 4, 5)) -> list[dict]:
    """One engine at one scale factor, the chains of ``relations`` relations, in this process (see the module docstring)."""
    started = time.perf_counter()
    if engine_name == "spark":
        engine = open_engine(f"spark:{parquet_folder(sf, folder)}", threads=threads, memory_limit=memory)
    else:
        engine = open_engine(str(tpch_database(sf, folder)), engine="duckdb", threads=threads, memory_limit=memory)
    opened_s = time.perf_counter() - started
    rows = []
    for length in relations:
        query = chain_query(length)
        sql = query.to_sql(engine.dialect)
        count = engine.execute(sql).scalar()
        t_count = _median(lambda sql=sql: engine.execute(sql), repeat)
        results = []
        t_rs = _median(lambda query=query: results.append(residual_sensitivity(engine, query, None, beta)), repeat)
        last = results[-1]
        rows.append(
            {
                "sf": sf,
                "engine": engine_name,
                "relations": length,
                "count": count,
                "count_s": round(t_count, 3),
                "rs_s": round(t_rs, 3),
                "ratio": round(t_rs / t_count, 2),
                "rs": last.rs_float,
                "open_s": round(opened_s, 1),
                "load": round(os.getloadavg()[0], 2),
            }
        )
    python_mb = _self_peak_mb()
    jvm_mb = _jvm_peak_mb() if engine_name == "spark" else 0.0
    for row in rows:
        row["peak_mb"] = round(python_mb + jvm_mb)
    engine.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, nargs="+", default=[1.0])
    parser.add_argument("--engines", nargs="+", choices=["duckdb", "spark"], default=["duckdb", "spark"])
    parser.add_argument("--folder", default=os.environ.get("TMPDIR", "/tmp"))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--beta", type=float, default=0.01)
    parser.add_argument("--threads", type=int, default=2, help="DuckDB threads; Spark local[N]")
    parser.add_argument("--memory", default="8GB", help="DuckDB memory_limit; Spark driver memory")
    parser.add_argument("--relations", type=int, nargs="+", choices=[3, 4, 5], default=[3, 4, 5],
                        help="the chains to run (relations per chain)")
    parser.add_argument("--worker", choices=["duckdb", "spark"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    folder = Path(args.folder)
    if args.worker:
        for row in worker(args.worker, args.sf[0], folder, args.repeat, args.beta, args.threads, args.memory,
                          tuple(args.relations)):
            print(json.dumps(row), flush=True)
        return
    print(json.dumps({
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 1024**3:.0f} GiB, Python {platform.python_version()}, "
        f"DuckDB {duckdb.__version__}",
        "command": " ".join(sys.argv),
    }), flush=True)
    for sf in args.sf:
        started = time.perf_counter()
        if "spark" in args.engines:
            parquet_folder(sf, folder)
        else:  # DuckDB reads its own file: no Parquet copy
            tpch_database(sf, folder)
        print(json.dumps({"sf": sf, "data_s": round(time.perf_counter() - started, 1),
                          "load": round(os.getloadavg()[0], 2)}), flush=True)
        for engine in args.engines:
            command = [sys.executable, "-m", "benchmarks.scale", "--worker", engine, "--sf", str(sf),
                       "--folder", str(folder), "--repeat", str(args.repeat), "--beta", str(args.beta),
                       "--threads", str(args.threads), "--memory", args.memory,
                       "--relations", *(str(n) for n in args.relations)]
            done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False, env=child_env())
            for line in done.stdout.splitlines():
                if line.startswith("{"):
                    print(line, flush=True)
            if done.returncode != 0:
                print(json.dumps({"sf": sf, "engine": engine, "failed": done.returncode}), flush=True)


if __name__ == "__main__":
    main()
