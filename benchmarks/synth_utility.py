"""Utility of the synthetic database on the demo hospital (docs/benchmarks.md, "Synthetic database").

Usage::

    python -m benchmarks.synth_utility --patients 10000 --epsilon 1.6 --delta 1e-6 [--no-rs] [--json OUT]

Synthesizes with the declarations of the database's ``pimento.toml`` (``[synth]``: link context,
public values, caps; the demo's declares them). Creates the demo database in a child process (so that the reported peak memory is the
synthesizer's), synthesizes it in this process, and reports: runtime and peak RSS; mean
total-variation distance of 2-way marginals per private table; relative error of every
foreign-key join size; Spearman rank correlation of residual sensitivity of alternative
formulations on the synthetic vs the real database.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
from scipy.stats import spearmanr

from pimento.engines import open_engine
from pimento.engines.database import load_database
from pimento.sensitivity.rs import residual_sensitivity
from pimento.sql import parse_count_query
from pimento.sql.quote import quote_identifier, quote_identifiers
from pimento.synth import synthesize

__all__ = ["main", "tv_two_way", "join_size_errors", "rs_correlation"]


def _key(value: Any, family: str) -> Any:
    if value is None:
        return None
    if family in ("date", "timestamp"):
        return str(value)[:7]
    if family in ("integer", "real"):
        x = float(value)
        if x == 0:
            return 0.0
        step = 10 ** (math.floor(math.log10(abs(x))) - 1)  # 2 significant digits
        return math.floor(x / step) * step
    return str(value)


def _columns(catalog: Any, table: str) -> list[Any]:
    t = catalog.table(table)
    fk_cols = {c for fk in catalog.foreign_keys_of(table) for c in fk.columns}
    keys = {c for key in [t.primary_key, *t.unique] if len(key) == 1 for c in key}
    free = {"name", "note"}
    return [c for c in t.columns if c.name not in fk_cols and c.name not in keys and c.name.lower() not in free]


def tv_two_way(real: str, syn: str, catalog: Any) -> dict[str, float]:
    """Mean TV distance of 2-way marginals (columns bucketed: months, 2 significant digits) per private table."""
    out = {}
    rc, sc = duckdb.connect(real, read_only=True), duckdb.connect(syn, read_only=True)
    try:
        for t in catalog.tables:
            if not t.private:
                continue
            cols = _columns(catalog, t.name)
            if len(cols) < 2:
                continue
            sel = f"SELECT {quote_identifiers(c.name for c in cols)} FROM {quote_identifier(t.name)}"
            rrows = rc.execute(sel).fetchall()
            srows = sc.execute(sel).fetchall()
            tvs = []
            for i, j in itertools.combinations(range(len(cols)), 2):
                fi, fj = cols[i].type, cols[j].type
                r = Counter((_key(x[i], fi), _key(x[j], fj)) for x in rrows)
                s = Counter((_key(x[i], fi), _key(x[j], fj)) for x in srows)
                nr, ns = max(sum(r.values()), 1), max(sum(s.values()), 1)
                tvs.append(0.5 * sum(abs(r[k] / nr - s[k] / ns) for k in set(r) | set(s)))
            out[t.name] = float(np.mean(tvs))
    finally:
        rc.close()
        sc.close()
    return out


def join_size_errors(real: str, syn: str, catalog: Any) -> dict[str, dict[str, float]]:
    """|child JOIN parent| on each foreign key: real, synthetic and relative error."""
    out = {}
    rc, sc = duckdb.connect(real, read_only=True), duckdb.connect(syn, read_only=True)
    try:
        for fk in catalog.foreign_keys:
            cond = " AND ".join(f"c.{quote_identifier(a)} = p.{quote_identifier(b)}" for a, b in zip(fk.columns, fk.ref_columns))
            q = f"SELECT COUNT(*) FROM {quote_identifier(fk.table)} c JOIN {quote_identifier(fk.ref_table)} p ON {cond}"
            r, s = rc.execute(q).fetchall()[0][0], sc.execute(q).fetchall()[0][0]
            out[str(fk)] = {"real": r, "synthetic": s, "relative_error": abs(s - r) / max(r, 1)}
    finally:
        rc.close()
        sc.close()
    return out


#: (medication, specialty) pairs of "How many patients were prescribed M by S physicians?".
MED_SPEC = [
    ("warfarin", "Cardiology"),
    ("metformin", "Internal Medicine"),
    ("sertraline", "Psychiatry"),
    ("amoxicillin", "Pediatrics"),
    ("levetiracetam", "Neurology"),
    ("dolutegravir", "Infectious Disease"),
    ("ondansetron", "Oncology"),
]


def formulations() -> list[tuple[str, str]]:
    """Alternative formulations (name, SQL) of demo questions.

    The first 2 * len(MED_SPEC) are the A (prescriber) / B (attending) pairs of the demo question
    for several medications and specialties; then formulations of other questions: visits and
    orders of female patients, discharges, patients seen / treated by cardiologists, prescriptions
    signed by cardiologists (counted on prescriptions or on orders), patients with an HIV
    diagnosis (on visits or on discharges), patients enrolled in approved studies.
    """
    qs = []
    for med, spec in MED_SPEC:
        qs.append((f"A {med}/{spec}", f"SELECT COUNT(DISTINCT P.pat_id) FROM Prescription P JOIN Employee E ON P.prescriber_id = E.employee_id WHERE P.medication = '{med}' AND E.specialty = '{spec}'"))
        qs.append((f"B {med}/{spec}", f"SELECT COUNT(DISTINCT M.pat_id) FROM MedicationOrders M JOIN Visit V ON M.visit_id = V.visit_id JOIN Employee E ON V.attending_id = E.employee_id WHERE M.medication = '{med}' AND E.specialty = '{spec}'"))
    qs.append(("visits per patient sex F", "SELECT COUNT(*) FROM Visit V JOIN Patient P ON V.pat_id = P.pat_id WHERE P.sex = 'F'"))
    qs.append(("orders in visits of F", "SELECT COUNT(*) FROM MedicationOrders M JOIN Visit V ON M.visit_id = V.visit_id JOIN Patient P ON V.pat_id = P.pat_id WHERE P.sex = 'F'"))
    qs.append(("orders by patient", "SELECT COUNT(*) FROM MedicationOrders M JOIN Patient P ON M.pat_id = P.pat_id WHERE P.sex = 'F'"))
    qs.append(("discharges of visits", "SELECT COUNT(*) FROM Discharge D JOIN Visit V ON D.visit_id = V.visit_id"))
    qs.append(("treating cardiology", "SELECT COUNT(DISTINCT T.pat_id) FROM TreatingRelationship T JOIN Employee E ON T.employee_id = E.employee_id WHERE E.specialty = 'Cardiology'"))
    qs.append(("visits cardiology", "SELECT COUNT(DISTINCT V.pat_id) FROM Visit V JOIN Employee E ON V.attending_id = E.employee_id WHERE E.specialty = 'Cardiology'"))
    qs.append(("attending relationship cardiology", "SELECT COUNT(DISTINCT T.pat_id) FROM TreatingRelationship T JOIN Employee E ON T.employee_id = E.employee_id WHERE T.role = 'attending' AND E.specialty = 'Cardiology'"))
    qs.append(("prescriptions signed by cardiologists", "SELECT COUNT(*) FROM Prescription P JOIN Employee E ON P.prescriber_id = E.employee_id WHERE E.specialty = 'Cardiology'"))
    qs.append(("orders in cardiology visits", "SELECT COUNT(*) FROM MedicationOrders M JOIN Visit V ON M.visit_id = V.visit_id JOIN Employee E ON V.attending_id = E.employee_id WHERE E.specialty = 'Cardiology'"))
    qs.append(("HIV patients by visit", "SELECT COUNT(DISTINCT V.pat_id) FROM Visit V JOIN DxCategory D ON V.diagnosis = D.diagnosis WHERE D.hivstatus = 'positive'"))
    qs.append(("HIV patients by discharge", "SELECT COUNT(DISTINCT X.pat_id) FROM Discharge X JOIN DxCategory D ON X.finaldiagnosis = D.diagnosis WHERE D.hivstatus = 'positive'"))
    qs.append(("patients in approved studies", "SELECT COUNT(DISTINCT S.pat_id) FROM StudyPatient S JOIN Study T ON S.study_id = T.study_id WHERE T.approved"))
    qs.append(("warfarin orders in visits of F", "SELECT COUNT(*) FROM MedicationOrders M JOIN Visit V ON M.visit_id = V.visit_id JOIN Patient P ON V.pat_id = P.pat_id WHERE M.medication = 'warfarin' AND P.sex = 'F'"))
    return qs


def rs_correlation(real: str, syn: str, beta: float) -> dict[str, Any]:
    """Spearman correlation of RS_beta over the formulations, synthetic vs real."""

    rdb = load_database(real)
    sengine = open_engine(syn, read_only=True)
    rows = []
    for name, sql in formulations():
        q = parse_count_query(sql, rdb.catalog)
        r = residual_sensitivity(rdb.engine, q, rdb.catalog, beta)
        s = residual_sensitivity(sengine, q, rdb.catalog, beta)
        rows.append({"query": name, "rs_real": float(r.rs), "rs_synthetic": float(s.rs)})
    rho = spearmanr([x["rs_real"] for x in rows], [x["rs_synthetic"] for x in rows]).statistic
    return {"beta": beta, "spearman": float(rho), "queries": rows}


def _agreement(syn: str) -> dict[str, Any]:
    con = duckdb.connect(syn, read_only=True)
    out = {}
    try:
        qs = formulations()
        for i in range(0, 2 * len(MED_SPEC), 2):
            a = con.execute(qs[i][1]).fetchall()[0][0]
            b = con.execute(qs[i + 1][1]).fetchall()[0][0]
            out[qs[i][0][2:]] = {"A": a, "B": b}
    finally:
        con.close()
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--patients", type=int, default=10_000)
    ap.add_argument("--epsilon", default="1.6")
    ap.add_argument("--delta", default="1e-6")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--db", help="an existing demo database (skips creation)")
    ap.add_argument("--no-rs", action="store_true")
    ap.add_argument("--no-utility", action="store_true")
    ap.add_argument("--json", help="write the report here")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="pimento-synth-bench-"))
    real = args.db
    if real is None:
        real = str(work / "hospital.duckdb")
        code = f"from pimento.demo.hospital import create_demo; create_demo({real!r}, patients={args.patients}, seed={args.seed})"
        subprocess.run([sys.executable, "-c", code], check=True)
    db = load_database(real)
    syn = str(work / "synthetic.duckdb")
    t0 = time.monotonic()
    declared = db.settings.synth  # the demo's pimento.toml declares link context and public values
    result = synthesize(
        db.engine, db.catalog, syn, args.epsilon, args.delta, root=db.settings.privacy.root, seed=args.seed,
        link_context=declared.link_context, public_values=declared.public_values, caps=dict(declared.caps) or None,
    )
    seconds = time.monotonic() - t0
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024
    result.engine.close()
    report: dict[str, Any] = {
        "patients": args.patients,
        "epsilon": args.epsilon,
        "delta": args.delta,
        "link_context": declared.link_context,
        "public_values": declared.public_values,
        "link_degrees": result.details.get("link_degrees"),
        "seconds": round(seconds, 1),
        "peak_rss_gb": round(peak_gb, 2),
        "rows": result.rows,
        "caps": result.details["caps"],
        "ties": result.details["ties"],
        "free_text": result.details["free_text"],
    }
    if not args.no_utility:
        report["tv_two_way"] = tv_two_way(real, syn, db.catalog)
        report["join_sizes"] = join_size_errors(real, syn, db.catalog)
        report["agreement"] = _agreement(syn)
    db.engine.close()
    if not args.no_rs:
        eps_rel, delta_rel = 1.0, 1e-6
        report["rs"] = rs_correlation(real, syn, eps_rel / (2 * math.log(2 / delta_rel)))
    text = json.dumps(report, indent=2, default=str)
    if args.json:
        Path(args.json).write_text(text)
    print(text)
    return report


if __name__ == "__main__":
    main()
