"""Benchmark (RQ3 of the paper): noise of contextual DP relative to standard DP on the demo hospital.

    python -m pimento.bench.contextual_dp [--patients 2000] [--seed 7] [--epsilon 1] [--delta 1e-6] [--json]

As the paper's Figure "Relative noise required by contextual DP": a fraction f (0, 10, ..., 90%)
of the records of the primary subject relation (``Patient``) is authorized (every boundary cell
of those tuples public in the context; the records chosen by a fixed hash of ``pat_id``), and for
each counting query of a fixed set the ratio CRS / RS is computed on the private database at the
beta the release mechanism uses at (epsilon, delta) (the interval's share taken out, as in
``pimento sql``), add/remove neighbours. The noise scale is proportional to the smooth bound, so
CRS / RS is the relative noise. Reported: the mean ratio over the queries, the minimum, and how
many queries' ratio is below 1, per fraction; never a ratio above 1 (CRS <= RS by construction,
checked here), for the paper's CRS and for the ``tight`` variant (T^c_{E_i}, the residual
multiplicity over boundary values no public tuple occupies, at every distance; never above the
paper's, checked here).

The authorization here is the view itself (a hash predicate), not a compiled policy: the paper's
experiment authorizes records directly. A PNG is written only when matplotlib is installed.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["QUERIES", "main", "run"]

#: Counting queries over the demo hospital that involve the subject relation.
QUERIES = (
    "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id",
    "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.diagnosis = 'Heart failure'",
    "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE p.sex = 'F'",
    "SELECT COUNT(*) FROM Patient p JOIN MedicationOrders m ON p.pat_id = m.pat_id",
    "SELECT COUNT(*) FROM Patient p JOIN Prescription r ON p.pat_id = r.pat_id WHERE r.medication = 'warfarin'",
    "SELECT COUNT(*) FROM Patient p JOIN Discharge d ON p.pat_id = d.pat_id",
    "SELECT COUNT(*) FROM Patient p JOIN StudyPatient s ON p.pat_id = s.pat_id",
    "SELECT COUNT(*) FROM Patient p JOIN TeamAssignment t ON p.pat_id = t.pat_id",
    "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id JOIN MedicationOrders m ON m.visit_id = v.visit_id",
    "SELECT COUNT(*) FROM Patient p JOIN TreatingRelationship t ON p.pat_id = t.pat_id",
)

FRACTIONS = tuple(range(0, 100, 10))


def _view(query: Any, percent: int) -> Any:
    from pimento.sensitivity.contextual import AuthorizationView

    alias = query.alias_of("Patient")
    # a fixed pseudo-random f% of the patients (hash of the key), all their cells authorized
    predicate = f'(hash("{alias}"."pat_id") % 100) < {int(percent)}'
    return AuthorizationView(public={alias: predicate})


def run(db: Path, *, epsilon: str = "1", delta: str | None = "1e-6", fractions=FRACTIONS) -> dict[str, Any]:
    from pimento.engines.database import load_database
    from pimento.mechanisms import mechanism_for
    from pimento.sensitivity.contextual import contextual_sensitivity
    from pimento.sql import parse_count_query

    database = load_database(db, read_only=True)
    try:
        mech = mechanism_for(epsilon, delta, share=database.settings.release.rs_bound_share)
        beta = mech.beta_float()
        catalog = database.catalog
        queries = [parse_count_query(q, catalog) for q in QUERIES]
        rows = []
        started = time.perf_counter()
        for percent in fractions:
            ratios, tight, rules, k0 = [], [], {}, []
            for sql, query in zip(QUERIES, queries, strict=True):
                result = contextual_sensitivity(database.engine, query, catalog, beta, _view(query, percent))
                if result.crs > result.rs:
                    raise AssertionError(f"CRS above RS on {sql}")
                ratio = float(result.crs / result.rs) if result.rs else 1.0
                ratios.append(ratio)
                better = contextual_sensitivity(database.engine, query, catalog, beta, _view(query, percent), variant="tight")
                if better.crs > result.crs:
                    raise AssertionError(f"tight CRS above the paper's on {sql}")
                tight.append(float(better.crs / better.rs) if better.rs else 1.0)
                for r in result.rules:
                    rules[r.rule] = rules.get(r.rule, 0) + 1
                    if r.alias == query.alias_of("Patient") and r.ls:
                        k0.append(r.ell / r.ls)
            rows.append({
                "authorized_percent": percent,
                "mean_crs_over_rs": statistics.fmean(ratios),
                "min_crs_over_rs": min(ratios),
                "mean_tight_over_rs": statistics.fmean(tight),
                "min_tight_over_rs": min(tight),
                "queries_below_1": sum(1 for r in ratios if r < 1 - 1e-12),
                # the distance-0 rule bound of Patient over its LS: what the rules cut at k = 0
                "mean_patient_ell_over_ls": statistics.fmean(k0) if k0 else None,
                "rules": rules,
            })
        seconds = time.perf_counter() - started
    finally:
        database.close()
    return {
        "epsilon": epsilon,
        "delta": delta,
        "beta": beta,
        "queries": list(QUERIES),
        "rows": rows,
        "seconds": round(seconds, 2),
        "machine": f"{platform.machine()} {platform.processor() or ''} {platform.python_version()}".strip(),
        "commit": _commit(),
    }


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def table(result: dict[str, Any]) -> str:
    lines = [
        "| authorized % of Patient | mean CRS/RS | min CRS/RS | queries with CRS < RS | mean ell/LS of Patient (k = 0) "
        "| mean tight/RS | min tight/RS |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        lines.append(f"| {row['authorized_percent']} | {row['mean_crs_over_rs']:.4f} | {row['min_crs_over_rs']:.4f} | "
                     f"{row['queries_below_1']} / {len(result['queries'])} | "
                     + (f"{row['mean_patient_ell_over_ls']:.3f} |" if row["mean_patient_ell_over_ls"] is not None else "- |")
                     + f" {row['mean_tight_over_rs']:.4f} | {row['min_tight_over_rs']:.4f} |")
    return "\n".join(lines)


def _plot(result: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib  # type: ignore[import-not-found]

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found]
    except ImportError:
        return False
    xs = [r["authorized_percent"] for r in result["rows"]]
    plt.figure(figsize=(4, 3))
    plt.plot(xs, [r["mean_crs_over_rs"] for r in result["rows"]], marker="o", label="demo hospital (CRS/RS)")
    plt.ylim(0, 1.05)
    plt.xlabel("authorized % of subject records")
    plt.ylabel("relative noise")
    plt.legend()
    plt.tight_layout()
    plt.savefig(path)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="a demo hospital database (default: build one)")
    parser.add_argument("--patients", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--epsilon", default="1")
    parser.add_argument("--delta", default="1e-6")
    parser.add_argument("--png", help="write the figure here (needs matplotlib)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.db:
        db = Path(args.db)
    else:
        from pimento.demo.hospital import create_demo

        db = Path(tempfile.mkdtemp(prefix="pimento-cdp-")) / "hospital.duckdb"
        create_demo(db, patients=args.patients, seed=args.seed)
    result = run(db, epsilon=args.epsilon, delta=args.delta or None)
    result["patients"] = args.patients if not args.db else None
    if args.png:
        result["png"] = args.png if _plot(result, Path(args.png)) else None
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"epsilon {result['epsilon']}, delta {result['delta']}, beta {result['beta']:.5f}; "
              f"{len(result['queries'])} queries; {result['seconds']} s; commit {result['commit']}")
        print(table(result))
        if args.png and not result.get("png"):
            print("no PNG: matplotlib is not installed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
