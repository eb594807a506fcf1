"""Time how fast the CLI answers: ``pimento --help`` and the refusal of bad arguments in each command.

    python -m benchmarks.cli_startup [--repeat 5] [--pimento PATH] [--json]

Each case runs ``pimento ARGS`` in a fresh process (``--repeat`` times) and reports the median and the
largest wall time of the process, the median CPU time it used (user + system: less sensitive than the
wall time to other work on a shared machine), its exit status and the first line it printed on stderr. A refusal is
decided from the arguments alone (a database file that does not exist, an epsilon that is not a
number, an empty question, an output that exists), so it should answer well under 0.5 s (issue 28). The
cases run in a temporary folder holding an empty ``exists.duckdb`` (a file that exists: the refusal must
come before anything opens it). The machine's load average is printed too: on a shared machine other
work slows every process down.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["CASES", "main", "measure"]

#: (name, arguments): ``{db}`` is an existing (empty) file, ``{missing}`` a path that does not exist.
CASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("--help", ("--help",)),
    ("--version", ("--version",)),
    ("sql: missing database", ("sql", "--db", "{missing}", "--sql", "SELECT COUNT(*) FROM t", "--epsilon", "1")),
    ("sql: bad epsilon", ("sql", "--db", "{db}", "--sql", "SELECT COUNT(*) FROM t", "--epsilon", "abc")),
    ("sql: unknown mode", ("sql", "--db", "{db}", "--sql", "SELECT COUNT(*) FROM t", "--epsilon", "1", "--mode", "bogus")),
    ("ask: empty question", ("ask", "", "--db", "{db}", "--epsilon", "1")),
    ("ask: unknown variant", ("ask", "How many?", "--db", "{db}", "--epsilon", "1", "--variant", "bogus")),
    ("search: empty question", ("search", "", "--db", "{db}")),
    ("synth: bad epsilon", ("synth", "--db", "{db}", "--out", "{missing}", "--epsilon", "abc", "--delta", "1e-6")),
    ("synth: existing output", ("synth", "--db", "{db}", "--out", "{db}", "--epsilon", "1", "--delta", "1e-6")),
    ("budget: missing database", ("budget", "--db", "{missing}")),
    ("audit show: missing database", ("audit", "show", "--db", "{missing}")),
    ("catalog: missing database", ("catalog", "--db", "{missing}")),
    ("keys list: missing database", ("keys", "list", "--db", "{missing}")),
    ("serve: missing database", ("serve", "--db", "{missing}")),
    ("translate: missing database", ("translate", "How many?", "--db", "{missing}")),
    ("sensitivity: beta and epsilon", ("sensitivity", "--db", "{db}", "--sql", "SELECT COUNT(*) FROM t", "--beta", "1", "--epsilon", "1")),
    ("demo run: bad --patients", ("demo", "run", "--patients", "0")),
    ("usage error: no --db", ("sql", "--sql", "SELECT 1")),
)


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _one(pimento: str, args: list[str], cwd: Path) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds, exit status, first stderr line) of one run of ``pimento ARGS``."""
    cpu = _cpu_of_children()
    started = time.perf_counter()
    proc = subprocess.run([pimento, *args], capture_output=True, text=True, cwd=cwd, timeout=120,
                          env={**os.environ, "COLUMNS": "100"})
    wall = time.perf_counter() - started
    first = next((line.strip() for line in proc.stderr.splitlines() if line.strip()), "")
    return wall, _cpu_of_children() - cpu, proc.returncode, first


def measure(pimento: str, repeat: int = 5) -> list[dict]:
    """Every case of :data:`CASES`, ``repeat`` times each: median and largest wall seconds, median CPU seconds, exit status,
    first stderr line."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="pimento-cli-startup-") as tmp:
        folder = Path(tmp)
        (folder / "exists.duckdb").write_bytes(b"")
        names = {"db": str(folder / "exists.duckdb"), "missing": str(folder / "typo.duckdb")}
        for name, template in CASES:
            args = [a.format(**names) for a in template]
            _one(pimento, args, folder)  # warm the file cache: the figures are for a warm start
            runs = [_one(pimento, args, folder) for _ in range(repeat)]
            walls = [w for w, _, _, _ in runs]
            rows.append({
                "case": name,
                "median_s": round(statistics.median(walls), 3),
                "max_s": round(max(walls), 3),
                "cpu_s": round(statistics.median(c for _, c, _, _ in runs), 3),
                "exit": runs[-1][2],
                "says": runs[-1][3][:90],
            })
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="Runs per case (the median is reported).")
    parser.add_argument("--pimento", default=None, help="The pimento executable (default: the one beside this Python).")
    parser.add_argument("--json", action="store_true", help="Print JSON.")
    args = parser.parse_args(argv)
    pimento = args.pimento or str(Path(sys.executable).with_name("pimento"))
    if not Path(pimento).exists():
        pimento = shutil.which("pimento") or pimento
    load = os.getloadavg()
    rows = measure(pimento, args.repeat)
    meta = {"python": platform.python_version(), "cpus": os.cpu_count(), "load_average_before": round(load[0], 2),
            "load_average_after": round(os.getloadavg()[0], 2), "repeat": args.repeat}
    if args.json:
        print(json.dumps({"machine": meta, "cases": rows}, indent=2))
        return
    print(f"python {meta['python']}, {meta['cpus']} CPUs, load average {meta['load_average_before']} -> "
          f"{meta['load_average_after']}, {args.repeat} runs per case (median, max), wall time of the process")
    print(f"| {'case':<32} | median s | max s | CPU s | exit | first line on stderr |")
    print(f"|{'-' * 34}|---------:|------:|------:|-----:|----------------------|")
    for r in rows:
        print(f"| {r['case']:<32} | {r['median_s']:8.2f} | {r['max_s']:5.2f} | {r['cpu_s']:5.2f} | {r['exit']:4d} | {r['says']} |")


if __name__ == "__main__":
    main()
