"""Context benchmark for CI mode on the demo hospital.

    python -m pimento.bench.ci_context --patients 2000 --latency-patients 10000 --out results.json

1. Builds (or reuses) the demo hospital, compiles the shipped HIPAA policy and runs the checks.
2. Draws query-context pairs: contexts of every kind the policy speaks about (supervising
   attendings and residents on or off the care team, consulting physicians, researchers of
   approved and unapproved studies, wrong purposes, wrong directions) crossed with analyst
   queries (projections, joins, aggregates, subqueries, HIV-revealing queries).
3. Ground truth comes from :mod:`pimento.policy.reference`, with the hospital's grounding
   written again in Python (no SQL): role membership, transitive supervision, care teams,
   approved studies, the HIV locations and the FD/FK implication.
4. Leakage: a pair leaks if the compiled enforcement authorizes a cell the reference does not,
   or its answer has a row the reference answer lacks. Recall: authorized cells found by the
   compiled enforcement over those of the reference (micro-averaged), and exact answers.
5. Latency: ``Enforcer.authorize`` wall time for one context (the first N1 witness) over the
   query set, repeated, on a database of ``--latency-patients`` patients.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pimento.demo.hospital import create_demo
from pimento.engines.database import load_database
from pimento.policy import Enforcer, compile_policy, example_policy_path, load_policy, run_checks
from pimento.policy.lineage import analyze_query
from pimento.policy.reference import RefCondition, RefLocation, ReferencePolicy, RefRole

__all__ = ["QUERIES", "hospital_reference", "main", "run"]

QUERIES = [
    "SELECT pat_id, diagnosis FROM Visit",
    "SELECT * FROM Visit WHERE visit_date >= DATE '2021-01-01'",
    "SELECT diagnosis, COUNT(*) AS n FROM Visit GROUP BY diagnosis ORDER BY n DESC",
    "SELECT COUNT(*) FROM Visit",
    "SELECT COUNT(DISTINCT pat_id) FROM Visit WHERE diagnosis LIKE '%HIV%'",
    "SELECT v.pat_id, d.category, d.hivstatus FROM Visit v JOIN DxCategory d ON v.diagnosis = d.diagnosis",
    "SELECT p.name, p.birth_year, v.diagnosis FROM Patient p JOIN Visit v ON v.pat_id = p.pat_id",
    "SELECT pat_id, finaldiagnosis, discharge_date FROM Discharge",
    "SELECT medication, COUNT(*) AS n FROM MedicationOrders GROUP BY medication",
    "SELECT pat_id, medication, issued FROM Prescription WHERE medication IN ('tenofovir', 'warfarin')",
    "SELECT note FROM Visit WHERE note LIKE '%HIV%' OR note LIKE '%hiv%'",
    "SELECT sex, AVG(birth_year) AS avg_year, COUNT(*) AS n FROM Patient GROUP BY sex",
    "SELECT diagnosis, hivstatus FROM DxCategory",
    "WITH recent AS (SELECT pat_id, diagnosis FROM Visit WHERE visit_date >= DATE '2022-01-01') "
    "SELECT diagnosis, COUNT(DISTINCT pat_id) FROM recent GROUP BY diagnosis",
    "SELECT pat_id FROM Visit WHERE diagnosis IN (SELECT diagnosis FROM DxCategory WHERE hivstatus = 'positive')",
    "SELECT m.pat_id, m.medication, m.dose_mg FROM MedicationOrders m JOIN Visit v ON v.visit_id = m.visit_id "
    "WHERE v.diagnosis = 'Heart failure'",
]

ANTIRETROVIRALS = {"dolutegravir", "tenofovir", "emtricitabine"}


def _closure(edges: set[tuple[Any, Any]]) -> set[tuple[Any, Any]]:
    closure = set(edges)
    frontier = set(edges)
    succ: dict[Any, set[Any]] = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)
    while frontier:
        new = {(a, c) for (a, b) in frontier for c in succ.get(b, ())} - closure
        closure |= new
        frontier = new
    return closure


def hospital_reference(policy: Any, catalog: Any) -> ReferencePolicy:
    """The shipped policy's grounding, written in Python (must mirror hospital_hipaa.yaml)."""

    def hiv_codes(db: Any) -> set[str]:
        return {r["diagnosis"] for r in db["DxCategory"] if r["hivstatus"] != "unknown"}

    cache: dict[str, Any] = {}

    def note_where(row: dict[str, Any]) -> bool:
        return row["diagnosis"] in cache["hiv"] or "hiv" in (row["note"] or "").lower()

    def on_care_team(db: Any) -> list[dict[str, Any]]:
        members: dict[Any, list[Any]] = {}
        for m in db["CareTeamMember"]:
            members.setdefault(m["team_id"], []).append(m["employee_id"])
        return [{"recipient": e, "subject": a["pat_id"]} for a in db["TeamAssignment"] for e in members.get(a["team_id"], [])]

    def approved_study(db: Any) -> list[dict[str, Any]]:
        approved = {s["study_id"]: s["researcher_id"] for s in db["Study"] if s["approved"]}
        return [{"recipient": approved[p["study_id"]], "subject": p["pat_id"]} for p in db["StudyPatient"]
                if p["study_id"] in approved]

    def pat(rel: str, attr: str, where: Any = None) -> RefLocation:
        return RefLocation(rel, attr, where or (lambda r: True), subject="pat_id")

    def cols(rel: str, names: list[str]) -> list[RefLocation]:
        return [pat(rel, n) for n in names]

    data_types = {
        "diagnosis": [pat("Visit", "diagnosis"), pat("Discharge", "finaldiagnosis")],
        "clinical_record": cols("Visit", ["visit_id", "pat_id", "attending_id", "visit_date"])
        + cols("Discharge", ["discharge_id", "visit_id", "pat_id", "discharge_date"]),
        "clinical_notes": [pat("Visit", "note")],
        "medication": cols("MedicationOrders", ["order_id", "visit_id", "pat_id", "medication", "dose_mg"])
        + cols("Prescription", ["prescription_id", "order_id", "pat_id", "medication", "issued"]),
        "demographics": cols("Patient", ["pat_id", "birth_year", "sex", "zip3"]),
        "patient_name": [pat("Patient", "name")],
        "hiv_status": [
            RefLocation("DxCategory", "hivstatus", lambda r: r["hivstatus"] != "unknown"),
            pat("Visit", "note", note_where),
            pat("MedicationOrders", "medication", lambda r: r["medication"] in ANTIRETROVIRALS),
            pat("Prescription", "medication", lambda r: r["medication"] in ANTIRETROVIRALS),
        ],
        "diagnosis_catalog": [RefLocation("DxCategory", a) for a in ("diagnosis", "category", "hivstatus")],
    }
    ref = ReferencePolicy(
        principals={"employee": ("Employee", "employee_id"), "researcher": ("Researcher", "researcher_id"),
                    "patient": ("Patient", "pat_id")},
        subject_kind="patient",
        roles={
            "attending_physician": RefRole("employee", lambda r: r["role"] == "physician"),
            "physician": RefRole("employee", lambda r: r["role"] == "physician"),
            "resident": RefRole("employee", lambda r: r["role"] == "resident"),
            "workforce": RefRole("employee"),
            "researcher": RefRole("researcher"),
            "patient": RefRole("patient"),
        },
        conditions={
            "attending_treats_patient": RefCondition(
                ("sender", "subject"), {"sender": "employee"},
                lambda db: [{"sender": t["employee_id"], "subject": t["pat_id"]} for t in db["TreatingRelationship"]
                            if t["role"] == "attending"]),
            "recipient_treats_patient": RefCondition(
                ("recipient", "subject"), {"recipient": "employee"},
                lambda db: [{"recipient": t["employee_id"], "subject": t["pat_id"]} for t in db["TreatingRelationship"]]),
            "supervises": RefCondition(
                ("sender", "recipient"), {"sender": "employee", "recipient": "employee"},
                lambda db: [{"sender": a, "recipient": b} for a, b in
                            _closure({(s["supervisor_id"], s["supervisee_id"]) for s in db["Supervises"]})]),
            "on_care_team": RefCondition(("recipient", "subject"), {"recipient": "employee"}, on_care_team),
            "approved_study": RefCondition(("recipient", "subject"), {"recipient": "researcher"}, approved_study),
        },
        data_types=data_types,
        purposes={"treatment": ["treatment"], "research": ["research"], "operations": ["operations"]},
        norms=list(policy.norms),
        keys={t.name: tuple(t.primary_key) for t in catalog.tables},
        columns={t.name: list(t.column_names) for t in catalog.tables},
        dependencies=[("DxCategory", "diagnosis", "hivstatus")],
        foreign_keys=[(fk.table, fk.columns[0], fk.ref_table, fk.ref_columns[0]) for fk in catalog.foreign_keys
                      if len(fk.columns) == 1],
    )
    ref._prepare = lambda db: cache.__setitem__("hiv", hiv_codes(db))  # type: ignore[attr-defined]
    return ref


def _rows(engine: Any, catalog: Any) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for t in catalog.tables:
        res = engine.execute(f'SELECT * FROM "{t.name}"')
        out[t.name] = [dict(zip(res.columns, r)) for r in res.rows]
    return out


def _contexts(engine: Any, rng: random.Random, n: int) -> list[tuple[str, str, str, str]]:
    """(kind, sender, recipient, purpose) drawn from every situation the policy distinguishes."""
    q = lambda sql: [r[0] if len(r) == 1 else r for r in engine.execute(sql).rows]  # noqa: E731
    sup = q("""WITH RECURSIVE s(a, b) AS (SELECT supervisor_id, supervisee_id FROM Supervises UNION
               SELECT s.a, x.supervisee_id FROM s JOIN Supervises x ON x.supervisor_id = s.b)
               SELECT s.a, s.b FROM s JOIN Employee e ON e.employee_id = s.b WHERE e.role = 'resident'""")
    physicians = q("SELECT employee_id FROM Employee WHERE role = 'physician'")
    residents = q("SELECT employee_id FROM Employee WHERE role = 'resident'")
    others = q("SELECT employee_id FROM Employee WHERE role IN ('nurse', 'admin', 'pharmacist')")
    researchers_ok = q("SELECT DISTINCT researcher_id FROM Study WHERE approved")
    researchers_all = q("SELECT researcher_id FROM Researcher")
    consult = q("""SELECT a.employee_id, c.employee_id FROM TreatingRelationship a JOIN TreatingRelationship c
                   ON a.pat_id = c.pat_id AND a.employee_id <> c.employee_id WHERE a.role = 'attending' LIMIT 200""")
    kinds = [
        ("supervising attending -> resident (treatment)", lambda: (*rng.choice(sup), "treatment")),
        ("random physician -> resident (treatment)", lambda: (rng.choice(physicians), rng.choice(residents), "treatment")),
        ("supervising attending -> resident (research)", lambda: (*rng.choice(sup), "research")),
        ("attending -> consulting physician (treatment)", lambda: (*rng.choice(consult), "treatment")),
        ("random physician -> physician (operations)", lambda: (rng.choice(physicians), rng.choice(physicians), "operations")),
        ("workforce -> researcher, approved study (research)",
         lambda: (rng.choice(others + physicians), ("researcher", rng.choice(researchers_ok)), "research")),
        ("workforce -> any researcher (research)",
         lambda: (rng.choice(others), ("researcher", rng.choice(researchers_all)), "research")),
        ("workforce -> researcher (treatment)",
         lambda: (rng.choice(physicians), ("researcher", rng.choice(researchers_ok)), "treatment")),
        ("resident -> attending (treatment, wrong direction)", lambda: (*reversed(rng.choice(sup)), "treatment")),
    ]
    out = []
    for i in range(n):
        label, draw = kinds[i % len(kinds)]
        s, r, p = draw()
        fmt = lambda x: f"{x[0]}:{x[1]}" if isinstance(x, tuple) else f"employee:{x}"  # noqa: E731
        out.append((label, fmt(s), fmt(r), p))
    return out


def _sorted(rows: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in rows), key=lambda r: tuple((v is None, str(v)) for v in r))


def run(db_path: str, *, pairs: int = 162, seed: int = 0) -> dict[str, Any]:
    """Leakage and recall of CI enforcement against the reference on ``pairs`` query-context pairs."""
    database = load_database(db_path)
    engine, catalog = database.engine, database.catalog
    policy = load_policy(example_policy_path())
    compiled = compile_policy(policy, catalog, engine)
    t0 = time.perf_counter()
    report = run_checks(compiled, catalog, engine, policy=policy)
    checks_s = time.perf_counter() - t0
    enforcer = Enforcer(compiled, engine, catalog)
    ref = hospital_reference(policy, catalog)
    rows = _rows(engine, catalog)
    ref._prepare(rows)  # type: ignore[attr-defined]
    ddl = {t.name: f'CREATE TABLE "{t.name}" (' + ", ".join(f'"{c.name}" {c.raw_type or "VARCHAR"}' for c in t.columns) + ")"
           for t in catalog.tables}
    rng = random.Random(seed)
    contexts = _contexts(engine, rng, pairs)
    results = []
    cell_tp = cell_ref = cell_extra = 0
    for i, (label, sender, recipient, purpose) in enumerate(contexts):
        sql = QUERIES[(i * 7 + i // len(QUERIES)) % len(QUERIES)]
        ctx = enforcer.context(sender, recipient, purpose)
        got = enforcer.authorize(ctx, sql)
        query = analyze_query(sql, catalog)
        wanted = {(r, c) for r, cols in query.referenced.items() for c in (cols or compiled.tables[r]["columns"])}
        s_id, r_id = (tuple(x.split(":", 1)) for x in (sender, recipient))
        ref_cells = ref.authorized_cells(rows, s_id, r_id, purpose, wanted)  # type: ignore[arg-type]
        got_cells = enforcer.authorized_cells(ctx, sql)
        expected = ref.answer(rows, ddl, sql, s_id, r_id, purpose, query.referenced)  # type: ignore[arg-type]
        extra_rows = Counter(_sorted(got.rows)) - Counter(_sorted(expected))
        leaked = bool(got_cells - ref_cells) or bool(extra_rows)
        cell_tp += len(got_cells & ref_cells)
        cell_ref += len(ref_cells)
        cell_extra += len(got_cells - ref_cells)
        results.append({
            "context": label, "sender": sender, "recipient": recipient, "purpose": purpose, "sql": sql,
            "authorized_cells": len(ref_cells), "leaked": leaked, "exact": _sorted(got.rows) == _sorted(expected),
            "rows": len(got.rows),
        })
    database.close()
    n = len(results)
    return {
        "database": db_path,
        "pairs": n,
        "contexts_with_authorized_data": sum(1 for r in results if r["authorized_cells"]),
        "leakage_rate": sum(r["leaked"] for r in results) / n,
        "cells_leaked": cell_extra,
        "cell_recall": (cell_tp / cell_ref) if cell_ref else 1.0,
        "authorized_cells_total": cell_ref,
        "exact_answers": sum(r["exact"] for r in results) / n,
        "checks_seconds": round(checks_s, 3),
        "implication": report["information_implication"],
        "per_context": dict(Counter(r["context"] for r in results)),
        "results": results,
    }


def latency(db_path: str, *, repeats: int = 5) -> dict[str, Any]:
    """Authorization latency (``Enforcer.authorize`` wall time) for one context over the query set."""
    database = load_database(db_path)
    engine, catalog = database.engine, database.catalog
    policy = load_policy(example_policy_path())
    compiled = compile_policy(policy, catalog, engine)
    report = run_checks(compiled, catalog, engine, policy=policy)
    w = report["satisfiability"]["witnesses"]["N1"]
    enforcer = Enforcer(compiled, engine, catalog)
    ctx = enforcer.context(f"employee:{w['sender']}", f"employee:{w['recipient']}", "treatment")
    for sql in QUERIES:  # warm-up: parse/lineage cache, DuckDB buffers
        enforcer.authorize(ctx, sql)
    times = []
    for _ in range(repeats):
        for sql in QUERIES:
            started = time.perf_counter()
            enforcer.authorize(ctx, sql)
            times.append(time.perf_counter() - started)
    database.close()
    times.sort()
    p99 = times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]
    import os

    return {
        "load_average_1m_after": round(os.getloadavg()[0], 2),
        "database": db_path,
        "context": {"sender": ctx.sender.id, "recipient": ctx.recipient.id, "purpose": "treatment"},
        "samples": len(times),
        "p50_ms": round(statistics.median(times) * 1000, 1),
        "p99_ms": round(p99 * 1000, 1),
        "max_ms": round(times[-1] * 1000, 1),
    }


def _ensure(path: Path, patients: int, seed: int) -> str:
    if not path.exists():
        create_demo(path, patients=patients, seed=seed)
    return str(path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="bench-ci", help="where the demo databases are built/reused")
    parser.add_argument("--patients", type=int, default=2000, help="demo size for the leakage/recall benchmark")
    parser.add_argument("--latency-patients", type=int, default=10000, help="demo size for the latency benchmark")
    parser.add_argument("--pairs", type=int, default=162)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the full results (JSON) here")
    parser.add_argument("--latency-only", action="store_true", help="skip the leakage/recall pairs")
    args = parser.parse_args(argv)
    work = Path(args.workdir)
    summary: dict[str, Any] = {}
    if not args.latency_only:
        small = _ensure(work / f"h{args.patients}" / "hospital.duckdb", args.patients, args.seed)
        summary = run(small, pairs=args.pairs, seed=args.seed)
    big = _ensure(work / f"h{args.latency_patients}" / "hospital.duckdb", args.latency_patients, args.seed)
    summary["latency"] = latency(big, repeats=args.repeats)
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    brief = {k: v for k, v in summary.items() if k not in ("results", "implication")}
    print(json.dumps(brief, indent=2, default=str))


if __name__ == "__main__":
    main()
