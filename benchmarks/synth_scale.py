"""Time and memory of the synthetic copy of the demo hospital at scale (docs/benchmarks.md,
"Synthetic database", "At scale").

Usage::

    python -m benchmarks.synth_scale --patients 1000000 [--workdir DIR] [--epsilon 1.6]
        [--delta 1e-6] [--seed 0] [--noise-seed 0] [--spark] [--counts-in-memory] [--json OUT]

Builds the demo database of N patients (:func:`pimento.demo.hospital.create_demo`, seed 0) in
one child process, unless ``--workdir`` already holds it, then synthesizes it (with the
declarations of its ``pimento.toml``, as ``pimento synth`` does) in another child process, so
that each peak RSS is that step's own (``resource.getrusage`` in the child: ``ru_maxrss``). The
synthesis child also records the wall time, the process's resident memory after each pass, and
the largest RSS reached up to each pass. ``--noise-seed`` fixes the noise (for comparing two
versions of the synthesizer on the same draws; never on real data). ``--counts-in-memory`` counts
every model's marginals in Python instead of by a GROUP BY in the engine (the same vectors).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import child_env

__all__ = ["main", "build", "synthesize_once"]


def _rss_gb() -> float:
    """The current resident set size of this process, in GB (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 1e9
    except (OSError, ValueError):
        return 0.0


def _peak_gb() -> float:
    """The peak resident set size of this process so far, in GB (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def build(patients: int, path: str, seed: int = 0) -> dict[str, Any]:
    """Build the demo database at ``path`` (in this process); time, peak RSS and rows."""
    from pimento.demo.hospital import create_demo

    t0 = time.monotonic()
    info = create_demo(path, patients=patients, seed=seed, overwrite=True)
    return {
        "build_seconds": round(time.monotonic() - t0, 1),
        "build_peak_rss_gb": round(_peak_gb(), 2),
        "source_rows": info.rows,
        "source_total_rows": int(sum(info.rows.values())),
    }


def synthesize_once(
    real: str, out: str, epsilon: str, delta: str, seed: int, noise_seed: int | None, counts_in_engine: bool = True
) -> dict[str, Any]:
    """Synthesize ``real`` into ``out`` (in this process); time, peak RSS and memory per pass."""
    import pimento.synth.api as api
    from pimento.engines.database import load_database

    passes: list[dict[str, Any]] = []
    started = time.monotonic()

    def traced(step: Any) -> Any:
        @functools.wraps(step)
        def run(*args: Any, **kwargs: Any) -> Any:
            t = time.monotonic()
            result = step(*args, **kwargs)
            record = {"pass": step.__name__, "seconds": round(time.monotonic() - t, 1), "rss_gb": round(_rss_gb(), 2), "peak_gb": round(_peak_gb(), 2)}
            passes.append(record)
            print(json.dumps(record), file=sys.stderr, flush=True)  # kept if the run is killed
            return result

        return run

    api.PASSES = tuple(traced(p) for p in api.PASSES)  # the child's own copy: timing only
    db = load_database(real)
    declared = db.settings.synth
    t0 = time.monotonic()
    result = api.synthesize(
        db.engine, db.catalog, out, epsilon, delta, root=db.settings.privacy.root, seed=seed,
        link_context=declared.link_context, public_values=declared.public_values, caps=dict(declared.caps) or None,
        overwrite=True, _noise_seed=noise_seed, _counts_in_engine=counts_in_engine,
    )
    seconds = time.monotonic() - t0
    report = {
        "synth_seconds": round(seconds, 1),
        "synth_peak_rss_gb": round(_peak_gb(), 2),
        "synthetic_rows": result.rows,
        "synthetic_total_rows": int(sum(result.rows.values())),
        "passes": passes,
        "counted_in_engine": list(result.details.get("counted_in_engine") or []),
        "write_seconds": round(seconds - sum(p["seconds"] for p in passes), 1),
        "engine": getattr(db.engine, "name", ""),
        "total_seconds": round(time.monotonic() - started, 1),
    }
    result.engine.close()
    db.engine.close()
    return report


def _child(argv: list[str]) -> dict[str, Any]:
    """Run this module in a child process for one step; its JSON report."""
    proc = subprocess.run([sys.executable, "-m", "benchmarks.synth_scale", *argv], stdout=subprocess.PIPE, text=True, env=child_env())
    if proc.returncode != 0:
        raise SystemExit(f"child step {argv[:2]} failed with exit status {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--patients", type=int, default=100_000)
    ap.add_argument("--epsilon", default="1.6")
    ap.add_argument("--delta", default="1e-6")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--noise-seed", type=int, default=None)
    ap.add_argument("--workdir", help="folder for the demo (DIR/demo-N/hospital.duckdb, reused if present) and the copy (kept)")
    ap.add_argument("--spark", action="store_true", help="synthesize from a Spark deployment of the demo (DIR/spark-N, written if absent)")
    ap.add_argument("--counts-in-memory", action="store_true", help="count the models' marginals in Python, not in the engine")
    ap.add_argument("--json", help="write the report here")
    ap.add_argument("--step", choices=["build", "synth"], help=argparse.SUPPRESS)
    ap.add_argument("--real", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.step == "build":
        step = build(args.patients, args.real, seed=0)
        print(json.dumps(step))
        return step
    if args.step == "synth":
        step = synthesize_once(args.real, args.out, args.epsilon, args.delta, args.seed, args.noise_seed, not args.counts_in_memory)
        print(json.dumps(step))
        return step
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="pimento-synth-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    real = work / f"demo-{args.patients}" / "hospital.duckdb"  # beside the pimento.toml create_demo writes
    report: dict[str, Any] = {
        "patients": args.patients,
        "epsilon": args.epsilon,
        "delta": args.delta,
        "seed": args.seed,
        "noise_seed": args.noise_seed,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average_before": round(os.getloadavg()[0], 2),
    }
    if not real.exists():
        report.update(_child(["--step", "build", "--patients", str(args.patients), "--real", str(real)]))
    source = real
    if args.spark:
        from pimento.engines.spark_engine import write_spark_deployment

        source = work / f"spark-{args.patients}"
        if not source.exists():
            write_spark_deployment(real, source)
        report["source"] = f"spark:{source}"
    synth_args = ["--step", "synth", "--real", str(source), "--out", str(work / f"synthetic-{args.patients}.duckdb")]
    synth_args += ["--epsilon", args.epsilon, "--delta", args.delta, "--seed", str(args.seed)]
    if args.noise_seed is not None:
        synth_args += ["--noise-seed", str(args.noise_seed)]
    if args.counts_in_memory:
        synth_args.append("--counts-in-memory")
        report["counts_in_memory"] = True
    report.update(_child(synth_args))
    report["load_average_after"] = round(os.getloadavg()[0], 2)
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return report


if __name__ == "__main__":
    main()
