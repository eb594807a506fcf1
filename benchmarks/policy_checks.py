"""`pimento policy compile` on the demo hospital at several sizes: wall time, peak memory, per step.

    python -m benchmarks.policy_checks --workdir /tmp/pc --patients 10000 100000 1000000
    python -m benchmarks.policy_checks --workdir /tmp/pc --patients 10000 --pythonpath OLD/src  # another checkout
    python -m benchmarks.policy_checks --workdir /tmp/pc --patients 1000000 --only-satisfiability

Each size builds (or reuses) ``create_demo(<workdir>/p<N>/hospital.duckdb, patients=N, seed)``,
then runs ``pimento policy compile example:hospital_hipaa`` in a child process (one at a time)
with ``--timeout`` as the per-statement limit and ``--limit`` as the limit of the whole run. It
reports the child's wall time and peak resident memory (``wait4``), the time of each step from
the command's progress lines (compile, implication, redundancy, the satisfiability search per
norm, unresolved subjects), the size of the database's temporary-file folder afterwards, and
the load average before and after. ``--pythonpath`` runs another checkout's ``src`` (for a
before/after comparison on the same databases). ``--only-satisfiability`` runs, instead of the
command, only compilation and the satisfiability search (:func:`pimento.policy.satisfiability.satisfiability`),
for sizes where another check does not fit.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import child_env
from pimento.demo.hospital import create_demo
from pimento.engines.database import load_database
from pimento.policy import compile_policy, example_policy_path, load_policy
from pimento.policy.satisfiability import satisfiability

__all__ = ["main", "measure", "parse_progress"]

_LINE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?) s  (.*)$")


def parse_progress(stderr: str) -> list[tuple[str, float]]:
    """``(step, seconds)`` for each progress line of ``pimento policy compile``: the time until
    the next line (the last step, ``done``, has none and is left out).

    >>> parse_progress("   0.0 s  compiling x\\n   1.5 s  redundancy\\n   4.0 s  done\\n")
    [('compiling x', 1.5), ('redundancy', 2.5)]
    """
    marks = [(float(m.group(1)), m.group(2).strip()) for m in map(_LINE.match, stderr.splitlines()) if m]
    return [(text, round(nxt - t, 2)) for (t, text), (nxt, _) in zip(marks, marks[1:])]


def _demo(workdir: Path, patients: int, seed: int) -> Path:
    path = workdir / f"p{patients}" / "hospital.duckdb"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        create_demo(path, patients=patients, seed=seed)
    return path


def _tmp_size(db: Path) -> int:
    """Bytes under DuckDB's temporary folder beside ``db`` (``<db>.tmp``), where it spills."""
    tmp = Path(f"{db}.tmp")
    return sum(f.stat().st_size for f in tmp.rglob("*") if f.is_file()) if tmp.exists() else 0


def _satisfiability_only(db: str, statement_timeout: float) -> None:
    """Compile the shipped policy on ``db`` and run only the satisfiability search, printing
    progress lines on stderr as ``pimento policy compile`` does and the witnesses on stdout."""
    started = time.perf_counter()

    def progress(text: str) -> None:
        print(f"{time.perf_counter() - started:6.1f} s  {text}", file=sys.stderr, flush=True)

    database = load_database(db)
    try:
        if hasattr(database.engine, "timeout_s"):
            database.engine.timeout_s = statement_timeout
        progress("compiling")
        compiled = compile_policy(load_policy(example_policy_path()), database.catalog, database.engine)
        result = satisfiability(compiled, database.engine, progress)
        progress("done")
    finally:
        database.close()
    for norm in result["witnesses"]:
        print(f"satisfiable: {norm} permits")
    for norm, reason in result["unsatisfied"].items():
        print(f"unsatisfied: {norm}: {reason}")


def measure(db: Path, *, statement_timeout: float, limit: float, pythonpath: str | None = None,
            only_satisfiability: bool = False) -> dict[str, Any]:
    """Run ``pimento policy compile`` (or only the satisfiability search) on ``db`` in a child process and measure it."""
    out = db.parent / "compiled.json"
    cmd = [sys.executable, "-c", "from pimento.cli.app import main; main()", "policy", "compile",
           "example:hospital_hipaa", "--db", str(db), "--out", str(out), "--timeout", str(statement_timeout)]
    if only_satisfiability:
        cmd = [sys.executable, "-m", "benchmarks.policy_checks", "--child-satisfiability", str(db),
               "--timeout", str(statement_timeout)]
    env = child_env(*([pythonpath] if pythonpath else []))
    load_before = os.getloadavg()
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        stdout, stderr = proc.communicate(timeout=limit)
        timed_out = False
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        timed_out = True
    wall = time.perf_counter() - started
    # the child is reaped by communicate(); its peak RSS is in RUSAGE_CHILDREN only as a maximum
    # over all children so far, so each size runs in its own child of a fresh measuring process
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    steps = parse_progress(stderr)
    witnesses = re.findall(r"satisfiable: (\S+) permits", stdout)
    return {
        "db": str(db),
        "run": "satisfiability only" if only_satisfiability else "policy compile",
        "wall_s": round(wall, 1),
        "timed_out": timed_out,
        "returncode": proc.returncode,
        "peak_rss_mb": round(peak_kib / 1024),
        "steps": steps,
        "satisfiability_s": round(sum(s for name, s in steps if name.startswith("satisfiability")), 1),
        "witnesses": witnesses,
        "spilled_mb": round(_tmp_size(db) / 2**20),
        "load_before": [round(x, 1) for x in load_before],
        "load_after": [round(x, 1) for x in os.getloadavg()],
        "error": None if proc.returncode == 0 else (stderr.strip().splitlines() or [""])[-1][:300],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="bench-policy-checks", help="where the demo databases are built/reused")
    parser.add_argument("--patients", type=int, nargs="+", default=[10000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=600, help="per-statement limit of the checks, seconds")
    parser.add_argument("--limit", type=float, default=900, help="limit of one whole compile, seconds")
    parser.add_argument("--pythonpath", default=None, help="run the CLI from this src folder (another checkout)")
    parser.add_argument("--only-satisfiability", action="store_true",
                        help="run only compilation and the satisfiability search, not the whole command")
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # internal: measure one size
    parser.add_argument("--child-satisfiability", default=None, help=argparse.SUPPRESS)  # internal: the measured child
    parser.add_argument("--out", default=None, help="append the results (JSON lines) here")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir)
    if args.child_satisfiability is not None:
        _satisfiability_only(args.child_satisfiability, args.timeout)
        return
    if args.one is not None:
        db = _demo(workdir, args.one, args.seed)
        result = measure(db, statement_timeout=args.timeout, limit=args.limit, pythonpath=args.pythonpath,
                         only_satisfiability=args.only_satisfiability)
        print(json.dumps({"patients": args.one, **result}))
        return
    for n in args.patients:
        db = _demo(workdir, n, args.seed)  # built outside the measured child
        shutil.rmtree(f"{db}.tmp", ignore_errors=True)
        # one measuring process per size, so that its children's peak RSS is this size's
        argv_one = [sys.executable, "-m", "benchmarks.policy_checks", "--workdir", str(workdir), "--one", str(n),
                    "--seed", str(args.seed), "--timeout", str(args.timeout), "--limit", str(args.limit)]
        if args.pythonpath:
            argv_one += ["--pythonpath", args.pythonpath]
        if args.only_satisfiability:
            argv_one.append("--only-satisfiability")
        line = subprocess.run(argv_one, check=True, capture_output=True, text=True, env=child_env()).stdout.strip().splitlines()[-1]
        result = json.loads(line)
        print(json.dumps(result), flush=True)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as f:
                f.write(json.dumps(result) + "\n")
        shutil.rmtree(f"{db}.tmp", ignore_errors=True)


if __name__ == "__main__":
    main()
