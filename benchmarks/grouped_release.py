"""Wall time and noise of grouped releases against one scalar count, on the demo hospital (issue 25).

Run: ``python -m benchmarks.grouped_release [--patients 10000] [--repeats 5]``

Builds the demo hospital (seed 1) in a temporary folder, with its ``[bounds]`` and ``[domains]``,
and releases each query ``--repeats`` times at epsilon 1, delta 1e-6, each time for another analyst
(no cached answer). Prints, per query, the median wall time of ``Session.release_sql`` and the
median of the published DP bounds of the noise scale (per group; for an AVG, its SUM's; itself a
noisy draw, hence the median).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from pimento.demo.hospital import create_demo
from pimento.release import Session

CASES = {
    "scalar COUNT, Visit JOIN DxCategory": (
        "SELECT COUNT(*) FROM Visit v JOIN DxCategory d ON v.diagnosis = d.diagnosis WHERE d.category = 'Neoplasms'"
    ),
    "COUNT per category (14 groups), Visit JOIN DxCategory": (
        "SELECT d.category, COUNT(*) FROM Visit v JOIN DxCategory d ON v.diagnosis = d.diagnosis GROUP BY d.category"
    ),
    "COUNT per department (18 groups), Employee JOIN Visit": (
        "SELECT e.department, COUNT(*) FROM Employee e JOIN Visit v ON e.employee_id = v.attending_id GROUP BY e.department"
    ),
    "AVG(dose_mg) per sex (2 groups), Patient JOIN MedicationOrders": (
        "SELECT p.sex, AVG(m.dose_mg) FROM Patient p JOIN MedicationOrders m ON p.pat_id = m.pat_id GROUP BY p.sex"
    ),
    "COUNT per diagnosis (44 groups), Visit": "SELECT v.diagnosis, COUNT(*) FROM Visit v GROUP BY v.diagnosis",
}


def run(patients: int, repeats: int) -> list[tuple[str, float, float]]:
    """(query, median seconds, median published noise-scale bound) per case."""
    out = []
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "hospital.duckdb"
        create_demo(db, patients=patients, seed=1)
        with open(Path(folder) / "pimento.toml", "a", encoding="utf-8") as fh:
            fh.write('\n[ledger]\nepsilon_cap = "1000"\ndelta_cap = "0.001"\nanalyst_share = "1"\n')
        with Session(db) as session:
            for name, sql in CASES.items():
                times, scales = [], []
                for i in range(repeats):
                    start = time.perf_counter()
                    answer = session.release_sql(sql, "1", "1e-6", analyst=f"bench{i}")
                    times.append(time.perf_counter() - start)
                    data = answer.to_dict()
                    scales.append(float(data["noise_scale_upper"] if "noise_scale_upper" in data
                                        else max(p["noise_scale_upper"] for p in data["releases"])))
                out.append((name, statistics.median(times), statistics.median(scales)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patients", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print("| query | median wall time | median noise scale bound (per group) |")
    print("|---|---|---|")
    for name, seconds, scale in run(args.patients, args.repeats):
        print(f"| {name} | {seconds:.2f} s | {scale:.4g} |")


if __name__ == "__main__":
    main()
