"""Time the build of the demo hospital database.

    python -m benchmarks.demo_build --patients 100000 [--seed 0] [--repeat 1] [--out DIR] [--json]

Each repetition builds a fresh database in a temporary folder (or ``--out``) and reports the
wall-clock seconds of :func:`pimento.demo.hospital.create_demo` (sampling with numpy, then loading
into DuckDB with every key and foreign key checked and writing pimento.toml: both shown), the CPU seconds of
this process over the same span (DuckDB's threads included), the row counts, and the file size.
The machine's load average is printed too: on a shared machine other work slows the build down.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import duckdb

from pimento.demo.hospital import create_demo

__all__ = ["main", "measure"]


def measure(patients: int, *, seed: int = 0, folder: Path | None = None) -> dict:
    """Build one demo database of ``patients`` patients; timings, rows and size."""
    with tempfile.TemporaryDirectory(prefix="pimento-demo-bench-") as tmp:
        where = (folder or Path(tmp)) / f"hospital-{patients}.duckdb"
        load_before = os.getloadavg()[0]
        cpu = time.process_time()
        wall = time.perf_counter()
        marks: dict[str, float] = {}

        def progress(step: str, done: int, total: int) -> None:
            if step == "sample" and done == 1:
                marks["sampled"] = time.perf_counter()

        info = create_demo(where, patients=patients, seed=seed, overwrite=True, progress=progress)
        end = time.perf_counter()
        sample_wall = marks["sampled"] - wall
        wall = end - wall
        cpu = time.process_time() - cpu
        return {
            "patients": patients,
            "seed": seed,
            "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2),
            "sample_wall_s": round(sample_wall, 2),
            "load_wall_s": round(wall - sample_wall, 2),
            "rows": info.rows,
            "total_rows": sum(info.rows.values()),
            "file_mb": round(where.stat().st_size / 2**20, 1),
            "load_average_before": round(load_before, 2),
        }


def _machine() -> str:
    mem = ""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            kb = int(fh.readline().split()[1])
        mem = f", {round(kb / 2**20)} GB"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{os.cpu_count()}-core {platform.machine()}{mem}, Python {platform.python_version()}, "
        f"DuckDB {duckdb.__version__}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--patients", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1, help="builds to time (each from scratch)")
    parser.add_argument("--out", type=Path, default=None, help="folder for the databases (default: a temporary one)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    if args.patients <= 0 or args.repeat <= 0:
        parser.error("--patients and --repeat must be positive")
    runs = [measure(args.patients, seed=args.seed, folder=args.out) for _ in range(args.repeat)]
    report = {"machine": _machine(), "runs": runs, "best_wall_s": min(r["wall_s"] for r in runs)}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"machine: {report['machine']}")
    for r in runs:
        print(
            f"{r['patients']:>9,} patients: {r['wall_s']:7.2f} s wall (sampling {r['sample_wall_s']:.2f} s, "
            f"loading {r['load_wall_s']:.2f} s), {r['cpu_s']:7.2f} s CPU, "
            f"{r['total_rows']:,} rows, {r['file_mb']} MB (load average before: {r['load_average_before']})"
        )


if __name__ == "__main__":
    main()
