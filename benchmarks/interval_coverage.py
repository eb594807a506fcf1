"""Benchmark: coverage and width of the released 95% interval, and what the epsilon share for its RS bound costs.

    python -m benchmarks.interval_coverage [--reps 1000] [--json]

Every smooth-sensitivity release splits its epsilon: ``epsilon_noise = (1 - share) epsilon`` for
the noisy count and ``epsilon_rs_bound = share epsilon`` (custodian's ``[release] rs_bound_share``,
default 0.1) for a DP upper bound of RS, from which the interval is computed, so that the interval
tells nothing about the exact RS (issue 18, finding 1). For each noise law (smooth Laplace with
delta, the quartic law without), epsilon and RS, ``--reps`` seeded releases of a fixed count give

* coverage: the share of intervals that contain the true count (stated: at least 95%, and close
  to it: the interval's quantile is computed over the exact law of the bound, PROOF.md section 8),
  with an exact one-sided 95% lower confidence bound (Clopper-Pearson);
* bound miss: the share of releases whose DP bound fell below RS (stated: at most 1%);
* width / oracle: the mean (and median) released width over the width of the interval one would state
  knowing RS (the noise law's exact 95% quantile at the true scale and FULL epsilon, i.e. the
  interval of the release before the split, which disclosed RS);
* the noise cost of the share: the noise standard deviation at epsilon_noise over that at the
  full epsilon, with RS fixed (scale factor 1/(1 - share)), and on a generated join, RS itself
  recomputed at each beta (a smaller epsilon_noise gives a smaller beta and a larger RS).

The whole request is still charged (epsilon, delta): the share is spent inside it, not on top.
RS values here are inputs (the bound and the noise depend on the data only through RS).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
from scipy import stats

from pimento.engines import open_engine
from pimento.mechanisms.budget import format_number
from pimento.mechanisms.smooth import float_down, laplace_beta, mechanism_for, quartic_beta
from pimento.sensitivity import residual_sensitivity
from pimento.sql import parse_count_query

__all__ = ["coverage_row", "rs_at_both_betas", "run", "main"]

EPSILONS = ("0.1", "0.5", "1", "2")
RS_VALUES = (Fraction(1), Fraction(10), Fraction(1000))
DELTA = "1e-6"
TRUE = 1000
#: The exact 95% quantiles of |X|: Laplace(1) ln 20; density (sqrt 2/pi)/(1+z^4) (brentq on its CDF).
_Q95 = {"laplace": math.log(20), "quartic": 1.7933615767747}
#: E[X^2]: 2 for Laplace(1), 1 for the quartic law.
_VAR = {"laplace": 2.0, "quartic": 1.0}


def _lower_bound(covered: int, n: int, level: float = 0.95) -> float:
    """Exact one-sided Clopper-Pearson lower confidence bound of a proportion."""
    return 0.0 if covered == 0 else float(stats.beta.ppf(1 - level, covered, n - covered + 1))


def coverage_row(law: str, epsilon: str, rs: Fraction, reps: int, *, seed: int = 0) -> dict[str, Any]:
    """``reps`` releases of one (law, epsilon, RS): coverage, bound misses, widths, noise."""
    mech = mechanism_for(epsilon, DELTA if law == "laplace" else None).for_relations(2)
    rng = random.Random(f"{seed}-{law}-{epsilon}-{rs}")
    covered = misses = 0
    widths: list[float] = []
    errors: list[float] = []
    bound_ratio: list[float] = []
    started = time.perf_counter()
    for _ in range(reps):
        release, private = mech.release(TRUE, rs, rng=rng)
        lo, hi = release.interval
        covered += lo <= TRUE <= hi
        misses += private.rs_upper is not None and private.rs_upper < private.rs
        widths.append(float(hi - lo))
        errors.append(float(release.value) - TRUE)
        bound_ratio.append(float(release.noise_scale_upper / private.scale))
    seconds = time.perf_counter() - started
    scale_noise = mech.scale(rs)  # at epsilon_noise
    scale_full = rs * mech._factor / mech.epsilon  # the same law at the full epsilon, same RS (before the split)
    oracle_width = 2 * _Q95[mech.noise] * float(scale_full)
    return {
        "law": mech.name,
        "epsilon": epsilon,
        "delta": DELTA if law == "laplace" else "0",
        "epsilon_rs_bound": format_number(mech.epsilon_rs_bound),
        "rs": float(rs),
        "reps": reps,
        "coverage": covered / reps,
        "coverage_lower_95": _lower_bound(covered, reps),
        "bound_miss": misses / reps,
        "mean_width": statistics.fmean(widths),
        "oracle_width": oracle_width,
        "width_over_oracle": statistics.fmean(widths) / oracle_width,
        "median_width_over_oracle": statistics.median(widths) / oracle_width,
        "median_bound_over_scale": statistics.median(bound_ratio),
        "noise_std_empirical": statistics.pstdev(errors),
        "noise_std_law": math.sqrt(_VAR[mech.noise]) * float(scale_noise),
        "noise_std_at_full_epsilon": math.sqrt(_VAR[mech.noise]) * float(scale_full),
        "noise_cost_same_rs": float(scale_noise / scale_full),
        "ms_per_release": 1000 * seconds / reps,
    }


#: Join counts on the generated database (label, SQL): RS is the largest fan-out for the first two,
#: and for the third (finding 1's form, a small count) max_k e^(-beta k)(max(c, 1) + k), which grows as beta shrinks.
JOINS = (
    ("flu visits with their patient", "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.diagnosis = 'flu'"),
    ("visits of patients born before 1960", "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE p.birth_year < 1960"),
    (
        "one patient's HIV visits",
        "SELECT COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE v.pat_id = 7 AND v.diagnosis = 'hiv'",
    ),
)


def rs_at_both_betas(epsilon: str, *, patients: int = 2000, seed: int = 1) -> list[dict[str, Any]]:
    """RS of two join counts on a generated Patient-Visit database at beta(epsilon_noise) and beta(epsilon).

    The RS is the custodian's quantity; the benchmark prints it to measure the share's cost, never a release.
    """

    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(prefix="pimento-interval-"))
    path = folder / "clinic.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE Patient (pat_id INTEGER PRIMARY KEY, birth_year INTEGER)")
    con.execute("CREATE TABLE Visit (visit_id INTEGER PRIMARY KEY, pat_id INTEGER REFERENCES Patient(pat_id), diagnosis VARCHAR)")
    visits: list[tuple[int, int, str]] = []
    for i in range(patients):  # heavy-tailed fan-out: most patients few visits, a few many
        for _ in range(min(int(rng.paretovariate(1.5)) - 1, 200)):
            visits.append((len(visits), i, rng.choice(("flu", "asthma", "hiv"))))
    rows: dict[str, list[tuple[Any, ...]]] = {"Patient": [(i, rng.randint(1930, 2010)) for i in range(patients)], "Visit": visits}
    for table, data in rows.items():
        csv_path = folder / f"{table}.csv"
        csv_path.write_text("".join(",".join(map(str, r)) + "\n" for r in data))
        con.execute(f"INSERT INTO {table} SELECT * FROM read_csv(?, header = false)", [str(csv_path)])
    con.close()
    engine = open_engine(str(path), read_only=True)
    try:
        catalog = engine.introspect()
        out = []
        for label, sql in JOINS:
            query = parse_count_query(sql, catalog)
            for law in ("laplace", "quartic"):
                mech = mechanism_for(epsilon, DELTA if law == "laplace" else None)
                beta_full = laplace_beta(mech.epsilon, mech.delta) if law == "laplace" else quartic_beta(mech.epsilon)
                rs_noise = Fraction(residual_sensitivity(engine, query, catalog, mech.beta_float(), attribution=False).rs)
                rs_full = Fraction(residual_sensitivity(engine, query, catalog, float_down(beta_full), attribution=False).rs)
                std_ratio = float(mech.scale(rs_noise) / (rs_full * mech._factor / mech.epsilon))
                out.append(
                    {
                        "query": label,
                        "sql": sql,
                        "law": mech.name,
                        "epsilon": epsilon,
                        "beta_noise": float(mech.beta()),
                        "beta_full": float(beta_full),
                        "rs_at_beta_noise": float(rs_noise),
                        "rs_at_beta_full": float(rs_full),
                        "noise_std_ratio": std_ratio,
                    }
                )
        return out
    finally:
        engine.close()
        for child in folder.iterdir():
            child.unlink()
        folder.rmdir()


def _machine() -> str:
    return f"{os.cpu_count()}-core {platform.machine()}, Python {platform.python_version()}, DuckDB {duckdb.__version__}"


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() + (" (uncommitted changes)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def run(*, reps: int = 1000, epsilons: tuple[str, ...] = EPSILONS, rs_values: tuple[Fraction, ...] = RS_VALUES) -> dict[str, Any]:
    rows = [coverage_row(law, eps, rs, reps) for law in ("laplace", "quartic") for eps in epsilons for rs in rs_values]
    betas = [row for eps in epsilons for row in rs_at_both_betas(eps)]
    return {"machine": _machine(), "commit": _commit(), "reps": reps, "rows": rows, "rs_at_beta": betas}


def _markdown(result: dict[str, Any]) -> str:
    lines = [
        f"machine: {result['machine']}; commit {result['commit']}; {result['reps']} releases per row",
        "",
        "| law | epsilon | RS | coverage (lower 95%) | bound miss | width / oracle: mean, median | noise std x (same RS) | ms/release |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['law']} | {r['epsilon']} | {r['rs']:g} | {r['coverage']:.3f} ({r['coverage_lower_95']:.3f}) | {r['bound_miss']:.3f} "
            f"| {r['width_over_oracle']:.2f}, {r['median_width_over_oracle']:.2f} | {r['noise_cost_same_rs']:.3f} | {r['ms_per_release']:.1f} |"
        )
    lines += [
        "",
        "| join count | law | epsilon | RS at beta(eps_noise) | RS at beta(eps) | noise std x |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in result["rs_at_beta"]:
        lines.append(
            f"| {r['query']} | {r['law']} | {r['epsilon']} | {r['rs_at_beta_noise']:.4g} | {r['rs_at_beta_full']:.4g} | {r['noise_std_ratio']:.3f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000, help="releases per (law, epsilon, RS)")
    parser.add_argument("--epsilon", nargs="*", default=list(EPSILONS))
    parser.add_argument("--rs", nargs="*", default=[str(x) for x in RS_VALUES])
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown tables")
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    result = run(reps=args.reps, epsilons=tuple(args.epsilon), rs_values=tuple(Fraction(x) for x in args.rs))
    sys.stdout.write((json.dumps(result, indent=2) if args.json else _markdown(result)) + "\n")


if __name__ == "__main__":
    main()
