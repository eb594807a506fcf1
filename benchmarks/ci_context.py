"""Context benchmark for CI mode on three domains: the demo hospital (HIPAA), a retailer (CCPA-like)
and a school (FERPA/COPPA-like).

    python -m benchmarks.ci_context --patients 2000 --latency-patients 10000 --out results.json
    python -m benchmarks.ci_context --latency-only --latency-patients 10000 100000 1000000
    python -m benchmarks.ci_context --latency-only --latency-patients 10000 --engine spark
    python -m benchmarks.ci_context --domain all --out results.json      # leakage/recall per domain

For the retailer and the school (``--domain retail|school|all``) the same steps run on
:func:`pimento.demo.retail.create_retail` / :func:`pimento.demo.school.create_school` with
their shipped policies, each with its own grounding in Python (:func:`retail_reference`,
:func:`school_reference`), context kinds and queries.

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
   query set, repeated, on databases of ``--latency-patients`` patients (DuckDB, or with
   ``--engine spark`` the same demo copied to a Spark deployment).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pimento.demo.hospital import create_demo
from pimento.demo.retail import create_retail, retail_policy_path
from pimento.demo.school import create_school, school_policy_path
from pimento.engines.database import load_database
from pimento.engines.spark_engine import write_spark_deployment
from pimento.policy import Enforcer, compile_policy, example_policy_path, load_policy, run_checks
from pimento.policy.lineage import analyze_query
from pimento.policy.reference import RefCondition, RefLocation, RefRole, ReferencePolicy

__all__ = ["DOMAINS", "QUERIES", "hospital_reference", "main", "retail_reference", "run", "run_domain",
           "school_reference"]

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

    def hiv_visit(row: dict[str, Any]) -> bool:
        return row["diagnosis"] in cache["hiv"] or "hiv" in (row["note"] or "").lower()

    def hiv_order(row: dict[str, Any]) -> bool:
        return row["medication"] in ANTIRETROVIRALS or row["visit_id"] in cache["hiv_visits"]

    def prepare(db: Any) -> None:
        cache["hiv"] = hiv_codes(db)
        cache["hiv_visits"] = {v["visit_id"] for v in db["Visit"] if hiv_visit(v)}
        cache["hiv_orders"] = {o["order_id"] for o in db["MedicationOrders"] if hiv_order(o)}

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
        # every column of a row that reveals HIV status, one filter per relation (issue 23, finding 5)
        "hiv_status": [RefLocation("DxCategory", a, lambda r: r["hivstatus"] != "unknown")
                       for a in ("diagnosis", "category", "hivstatus")]
        + [pat("Visit", a, hiv_visit) for a in ("visit_id", "pat_id", "attending_id", "visit_date", "diagnosis", "note")]
        + [pat("Discharge", a, lambda r: r["finaldiagnosis"] in cache["hiv"] or r["visit_id"] in cache["hiv_visits"])
           for a in ("discharge_id", "visit_id", "pat_id", "finaldiagnosis", "discharge_date")]
        + [pat("MedicationOrders", a, hiv_order) for a in ("order_id", "visit_id", "pat_id", "medication", "dose_mg")]
        + [pat("Prescription", a, lambda r: r["medication"] in ANTIRETROVIRALS or r["order_id"] in cache["hiv_orders"])
           for a in ("prescription_id", "order_id", "pat_id", "medication", "issued")],
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
    ref._prepare = prepare  # type: ignore[attr-defined]
    return ref


def _fks(catalog: Any) -> list[tuple[Any, Any, Any, Any]]:
    """Every foreign key of the catalog (multi-column ones as tuples), for the reference."""
    out: list[tuple[Any, Any, Any, Any]] = []
    for fk in catalog.foreign_keys:
        if len(fk.columns) == 1:
            out.append((fk.table, fk.columns[0], fk.ref_table, fk.ref_columns[0]))
        else:
            out.append((fk.table, tuple(fk.columns), fk.ref_table, tuple(fk.ref_columns)))
    return out


def _fds(catalog: Any) -> list[tuple[str, str, str]]:
    return [(fd.table, fd.lhs[0], r) for fd in catalog.functional_dependencies if len(fd.lhs) == 1 for r in fd.rhs]


def retail_reference(policy: Any, catalog: Any) -> ReferencePolicy:
    """The retailer's policy grounding, written in Python (must mirror retail_ccpa.yaml)."""
    cache: dict[str, Any] = {}

    def via_order(row: dict[str, Any], db: Any) -> Any:
        # OrderItem / Payment -> Orders.customer_id (the order is found by its key, or not at all)
        return cache["order_customer"].get(row["order_id"])

    def loc(rel: str, attr: str, where: Any = None, subject: Any = "customer_id") -> RefLocation:
        return RefLocation(rel, attr, where or (lambda r: True), subject=subject)

    data_types = {
        "identifiers": [loc("Customer", a) for a in ("customer_id", "name", "email")],
        "demographics": [loc("Customer", a) for a in ("zip3", "birth_year")],
        "purchase_history": [loc("Orders", a) for a in ("order_id", "customer_id", "order_date", "channel")]
        + [loc("OrderItem", a, subject=via_order) for a in ("order_id", "line_no", "product_id", "qty", "price")],
        "payment_information": [loc("Payment", a, subject=via_order) for a in ("payment_id", "order_id", "method", "amount")],
        "card_number": [loc("Payment", "card_last4", subject=via_order)],
        "health_purchases": [RefLocation("Product", "category", lambda r: r["category"] == "pharmacy")],
        "product_catalog": [RefLocation("Product", a) for a in ("product_id", "name", "category")],
    }
    ref = ReferencePolicy(
        principals={"employee": ("Employee", "employee_id"), "partner": ("Partner", "partner_id"),
                    "customer": ("Customer", "customer_id")},
        subject_kind="customer",
        roles={
            "support_agent": RefRole("employee", lambda r: r["role"] == "support"),
            "marketing_staff": RefRole("employee", lambda r: r["role"] == "marketing"),
            "analyst": RefRole("employee", lambda r: r["role"] == "analyst"),
            "staff": RefRole("employee"),
            "billing_agent": RefRole("partner", lambda r: r["kind"] == "billing_agent"),
            "ad_network": RefRole("partner", lambda r: r["kind"] == "ad_network"),
            "third_party": RefRole("partner"),
            "consumer": RefRole("customer"),
        },
        conditions={
            "assigned_case": RefCondition(("recipient", "subject"), {"recipient": "employee"},
                                          lambda db: [{"recipient": c["agent_id"], "subject": c["customer_id"]}
                                                      for c in db["SupportCase"]]),
            "consented": RefCondition(("subject", "purpose"), {},
                                      lambda db: [{"subject": c["customer_id"], "purpose": c["purpose"]}
                                                  for c in db["Consent"] if c["granted"]]),
            "opted_out_of_sale": RefCondition(("subject",), {},
                                              lambda db: [{"subject": c["customer_id"]} for c in db["Customer"]
                                                          if c["opted_out_of_sale"]]),
            "is_self": RefCondition(("recipient", "subject"), {"recipient": "customer"},
                                    lambda db: [{"recipient": c["customer_id"], "subject": c["customer_id"]}
                                                for c in db["Customer"]]),
        },
        data_types=data_types,
        purposes={name: [name] for name in ("service", "support", "fulfillment", "billing", "marketing", "profiling",
                                            "ads", "analytics")},
        purpose_parents={"support": ["service"], "fulfillment": ["service"], "profiling": ["marketing"],
                         "ads": ["marketing"]},
        subjects={"OrderItem": via_order, "Payment": via_order},
        norms=list(policy.norms),
        keys={t.name: tuple(t.primary_key) for t in catalog.tables},
        columns={t.name: list(t.column_names) for t in catalog.tables},
        dependencies=_fds(catalog),
        foreign_keys=_fks(catalog),
    )

    def prepare(db: Any) -> None:
        cache["order_customer"] = {o["order_id"]: o["customer_id"] for o in db["Orders"]}

    ref._prepare = prepare  # type: ignore[attr-defined]
    return ref


def school_reference(policy: Any, catalog: Any) -> ReferencePolicy:
    """The school's policy grounding, written in Python (must mirror school_ferpa.yaml)."""
    cache: dict[str, Any] = {}

    def via_enrollment(row: dict[str, Any], db: Any) -> Any:
        # Attendance -> Enrollment(student_id, course_id).student_id
        pair = (row["student_id"], row["course_id"])
        return pair[0] if None not in pair and pair in cache["enrolled"] else None

    def legitimate_interest(db: Any) -> list[dict[str, Any]]:
        # boss -> teacher pairs: every teacher of a course is above themself; supervisors, transitively
        teachers = {c["teacher_id"] for c in db["Course"]}
        bosses_of: dict[Any, set[Any]] = {t: {t} for t in teachers}
        up: dict[Any, set[Any]] = {}
        for s in db["Supervises"]:
            up.setdefault(s["supervisee_id"], set()).add(s["supervisor_id"])
        for t in teachers:
            frontier = {t}
            while frontier:
                frontier = {b for x in frontier for b in up.get(x, ())} - bosses_of[t]
                bosses_of[t] |= frontier
        course_teacher = {c["course_id"]: c["teacher_id"] for c in db["Course"]}
        return [{"recipient": b, "subject": e["student_id"]} for e in db["Enrollment"]
                for b in bosses_of.get(course_teacher.get(e["course_id"]), ())]

    def loc(rel: str, attr: str, subject: Any = "student_id") -> RefLocation:
        return RefLocation(rel, attr, subject=subject)

    data_types = {
        "directory_information": [loc("Student", a) for a in ("student_id", "name", "grade_level")],
        "education_record": [loc("Enrollment", a) for a in ("student_id", "course_id")]
        + [loc("Grade", a) for a in ("grade_id", "student_id", "course_id", "term", "score")]
        + [loc("Attendance", a, via_enrollment) for a in ("attendance_id", "student_id", "course_id", "day", "present")],
        "date_of_birth": [loc("Student", "birth_year")],
        "health_record": [loc("HealthRecord", a) for a in ("record_id", "student_id", "note")],
        "discipline_record": [loc("Discipline", a) for a in ("incident_id", "student_id", "description")],
        "course_catalog": [RefLocation("Course", a) for a in ("course_id", "title")],
    }
    ref = ReferencePolicy(
        principals={"staff": ("Staff", "staff_id"), "parent": ("Parent", "parent_id"), "vendor": ("Vendor", "vendor_id"),
                    "student": ("Student", "student_id")},
        subject_kind="student",
        roles={
            "school_official": RefRole("staff"),
            "teacher": RefRole("staff", lambda r: r["role"] == "teacher"),
            "counselor": RefRole("staff", lambda r: r["role"] == "counselor"),
            "nurse": RefRole("staff", lambda r: r["role"] == "nurse"),
            "parent": RefRole("parent"),
            "operator": RefRole("vendor"),
            "student": RefRole("student"),
        },
        conditions={
            "legitimate_interest": RefCondition(("recipient", "subject"), {"recipient": "staff"}, legitimate_interest),
            "is_guardian": RefCondition(("recipient", "subject"), {"recipient": "parent"},
                                        lambda db: [{"recipient": g["parent_id"], "subject": g["student_id"]}
                                                    for g in db["Guardian"]]),
            "parental_consent": RefCondition(("subject", "purpose"), {},
                                             lambda db: [{"subject": c["student_id"], "purpose": c["purpose"]}
                                                         for c in db["ParentConsent"] if c["granted"]]),
            "directory_opt_out": RefCondition(("subject",), {}, lambda db: [{"subject": s["student_id"]}
                                                                             for s in db["Student"] if s["directory_opt_out"]]),
            "under_13": RefCondition(("subject",), {}, lambda db: [{"subject": s["student_id"]} for s in db["Student"]
                                                                    if s["birth_year"] is not None and s["birth_year"] > 2011]),
            "under_contract": RefCondition(("recipient",), {"recipient": "vendor"},
                                           lambda db: [{"recipient": v["vendor_id"]} for v in db["Vendor"]
                                                       if v["has_contract"]]),
        },
        data_types=data_types,
        purposes={name: [name] for name in ("education", "instruction", "counseling", "health", "edtech_service",
                                            "analytics", "advertising", "research")},
        purpose_parents={"instruction": ["education"], "counseling": ["education"], "analytics": ["edtech_service"]},
        subjects={"Attendance": via_enrollment},
        norms=list(policy.norms),
        keys={t.name: tuple(t.primary_key) for t in catalog.tables},
        columns={t.name: list(t.column_names) for t in catalog.tables},
        dependencies=_fds(catalog),
        foreign_keys=_fks(catalog),
    )

    def prepare(db: Any) -> None:
        cache["enrolled"] = {(e["student_id"], e["course_id"]) for e in db["Enrollment"]}

    ref._prepare = prepare  # type: ignore[attr-defined]
    return ref


RETAIL_QUERIES = [
    "SELECT customer_id, name, email FROM Customer",
    "SELECT zip3, COUNT(*) AS n FROM Customer GROUP BY zip3",
    "SELECT o.order_id, o.order_date, i.product_id, i.qty FROM Orders o JOIN OrderItem i ON i.order_id = o.order_id",
    "SELECT product_id, SUM(qty) AS units FROM OrderItem GROUP BY product_id",
    "SELECT order_id, method, amount FROM Payment",
    "SELECT card_last4 FROM Payment WHERE method = 'card'",
    "SELECT p.name, COUNT(*) AS n FROM OrderItem i JOIN Product p ON p.product_id = i.product_id "
    "WHERE p.category = 'pharmacy' GROUP BY p.name",
    "SELECT * FROM Product",
    "SELECT c.birth_year, o.channel FROM Customer c JOIN Orders o ON o.customer_id = c.customer_id",
    "SELECT COUNT(*) FROM Orders",
    "SELECT * FROM OrderItem",
    "SELECT order_id, SUM(price * qty) AS total FROM OrderItem GROUP BY order_id",
    "SELECT * FROM Payment",
    "SELECT c.name, p.amount FROM Customer c JOIN Orders o ON o.customer_id = c.customer_id "
    "JOIN Payment p ON p.order_id = o.order_id",
]

SCHOOL_QUERIES = [
    "SELECT student_id, name, grade_level FROM Student",
    "SELECT s.name, g.score FROM Student s JOIN Grade g ON g.student_id = s.student_id",
    "SELECT course_id, AVG(score) AS avg_score FROM Grade GROUP BY course_id",
    "SELECT * FROM Attendance",
    "SELECT student_id, COUNT(*) AS days FROM Attendance WHERE present GROUP BY student_id",
    "SELECT * FROM HealthRecord",
    "SELECT description, COUNT(*) AS n FROM Discipline GROUP BY description",
    "SELECT student_id, birth_year FROM Student",
    "SELECT * FROM Course",
    "SELECT e.student_id, c.title FROM Enrollment e JOIN Course c ON c.course_id = e.course_id",
    "SELECT COUNT(*) FROM Grade WHERE score < 60",
    "SELECT s.name, h.note FROM Student s JOIN HealthRecord h ON h.student_id = s.student_id",
    "SELECT a.day, a.present, s.grade_level FROM Attendance a JOIN Student s ON s.student_id = a.student_id",
]


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
               SELECT s.a, s.b FROM s JOIN Employee e ON e.employee_id = s.b WHERE e.role = 'resident' ORDER BY 1, 2""")
    physicians = q("SELECT employee_id FROM Employee WHERE role = 'physician'")
    residents = q("SELECT employee_id FROM Employee WHERE role = 'resident'")
    others = q("SELECT employee_id FROM Employee WHERE role IN ('nurse', 'admin', 'pharmacist')")
    # ORDER BY: DISTINCT returns its rows in no fixed order (DuckDB's parallel hash), so the drawn
    # contexts, and the prompts recorded from them, must not depend on it
    researchers_ok = q("SELECT DISTINCT researcher_id FROM Study WHERE approved ORDER BY researcher_id")
    researchers_all = q("SELECT researcher_id FROM Researcher")
    consult = q("""SELECT a.employee_id, c.employee_id FROM TreatingRelationship a JOIN TreatingRelationship c
                   ON a.pat_id = c.pat_id AND a.employee_id <> c.employee_id WHERE a.role = 'attending' ORDER BY 1, 2 LIMIT 200""")
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


def _retail_contexts(engine: Any, rng: random.Random, n: int) -> list[tuple[str, str, str, str]]:
    """(kind, sender, recipient, purpose) over every situation the retail policy distinguishes."""
    q = lambda sql: [r[0] if len(r) == 1 else r for r in engine.execute(sql).rows]  # noqa: E731
    staff = q("SELECT employee_id FROM Employee")
    by_role = {role: q(f"SELECT employee_id FROM Employee WHERE role = '{role}'")
               for role in ("support", "marketing", "analyst", "billing")}
    with_case = q("SELECT DISTINCT agent_id FROM SupportCase ORDER BY 1")
    partners = {kind: q(f"SELECT partner_id FROM Partner WHERE kind = '{kind}'")
                for kind in ("billing_agent", "ad_network", "data_broker")}
    customers = q("SELECT customer_id FROM Customer")
    e = lambda x: f"employee:{x}"  # noqa: E731
    p = lambda x: f"partner:{x}"  # noqa: E731
    kinds = [
        ("support agent with a case (support)", lambda: (e(rng.choice(staff)), e(rng.choice(with_case)), "support")),
        ("support agent (service)", lambda: (e(rng.choice(staff)), e(rng.choice(by_role["support"])), "service")),
        ("billing agent (billing)", lambda: (e(rng.choice(staff)), p(rng.choice(partners["billing_agent"])), "billing")),
        ("billing agent (marketing, wrong purpose)",
         lambda: (e(rng.choice(staff)), p(rng.choice(partners["billing_agent"])), "marketing")),
        ("marketing staff (marketing|profiling|ads)",
         lambda: (e(rng.choice(staff)), e(rng.choice(by_role["marketing"])), rng.choice(["marketing", "profiling", "ads"]))),
        ("ad network (ads)", lambda: (e(rng.choice(staff)), p(rng.choice(partners["ad_network"])), "ads")),
        ("data broker (marketing)", lambda: (e(rng.choice(staff)), p(rng.choice(partners["data_broker"])), "marketing")),
        ("analyst (analytics)", lambda: (e(rng.choice(staff)), e(rng.choice(by_role["analyst"])), "analytics")),
        ("consumer, own data (service)", lambda: (e(rng.choice(staff)), f"customer:{rng.choice(customers)}", "service")),
        ("analyst (marketing, wrong role)", lambda: (e(rng.choice(staff)), e(rng.choice(by_role["analyst"])), "marketing")),
    ]
    return [(label, *draw()) for label, draw in (kinds[i % len(kinds)] for i in range(n))]


def _school_contexts(engine: Any, rng: random.Random, n: int) -> list[tuple[str, str, str, str]]:
    """(kind, sender, recipient, purpose) over every situation the school policy distinguishes."""
    q = lambda sql: [r[0] if len(r) == 1 else r for r in engine.execute(sql).rows]  # noqa: E731
    by_role = {role: q(f"SELECT staff_id FROM Staff WHERE role = '{role}'")
               for role in ("principal", "head", "teacher", "counselor", "nurse")}
    staff = q("SELECT staff_id FROM Staff")
    parents = q("SELECT parent_id FROM Parent")
    contract = q("SELECT vendor_id FROM Vendor WHERE has_contract")
    no_contract = q("SELECT vendor_id FROM Vendor WHERE NOT has_contract") or contract
    s = lambda x: f"staff:{x}"  # noqa: E731
    v = lambda x: f"vendor:{x}"  # noqa: E731
    kinds = [
        ("teacher (instruction)", lambda: (s(rng.choice(staff)), s(rng.choice(by_role["teacher"])), "instruction")),
        ("head of department, supervises teachers (education)",
         lambda: (s(rng.choice(staff)), s(rng.choice(by_role["head"])), "education")),
        ("principal (counseling)", lambda: (s(rng.choice(staff)), s(rng.choice(by_role["principal"])), "counseling")),
        ("parent (research)", lambda: (s(rng.choice(staff)), f"parent:{rng.choice(parents)}", "research")),
        ("nurse (health)", lambda: (s(rng.choice(staff)), s(rng.choice(by_role["nurse"])), "health")),
        ("teacher (health, not the nurse)", lambda: (s(rng.choice(staff)), s(rng.choice(by_role["teacher"])), "health")),
        ("counselor (counseling)", lambda: (s(rng.choice(staff)), s(rng.choice(by_role["counselor"])), "counseling")),
        ("operator under contract (edtech_service|analytics)",
         lambda: (s(rng.choice(staff)), v(rng.choice(contract)), rng.choice(["edtech_service", "analytics"]))),
        ("operator without contract (edtech_service)",
         lambda: (s(rng.choice(staff)), v(rng.choice(no_contract)), "edtech_service")),
        ("operator (advertising)", lambda: (s(rng.choice(staff)), v(rng.choice(contract)), "advertising")),
    ]
    return [(label, *draw()) for label, draw in (kinds[i % len(kinds)] for i in range(n))]


def _sorted(rows: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in rows), key=lambda r: tuple((v is None, str(v)) for v in r))


def run(db_path: str, *, pairs: int = 162, seed: int = 0, domain: str = "hospital") -> dict[str, Any]:
    """Leakage and recall of CI enforcement against the reference on ``pairs`` query-context pairs."""
    spec = DOMAINS[domain]
    database = load_database(db_path)
    engine, catalog = database.engine, database.catalog
    policy = load_policy(spec["policy"]())
    compiled = compile_policy(policy, catalog, engine)
    t0 = time.perf_counter()
    compiled = run_checks(compiled, catalog, engine, policy=policy)  # the checked, canonical policy
    report = compiled.checks_report()
    checks_s = time.perf_counter() - t0
    enforcer = Enforcer(compiled, engine, catalog)
    ref = spec["reference"](policy, catalog)
    rows = _rows(engine, catalog)
    ref._prepare(rows)
    ddl = {t.name: f'CREATE TABLE "{t.name}" (' + ", ".join(f'"{c.name}" {c.raw_type or "VARCHAR"}' for c in t.columns) + ")"
           for t in catalog.tables}
    queries = spec["queries"]
    rng = random.Random(seed)
    contexts = spec["contexts"](engine, rng, pairs)
    results = []
    cell_tp = cell_ref = cell_extra = 0
    for i, (label, sender, recipient, purpose) in enumerate(contexts):
        sql = queries[(i * 7 + i // len(queries)) % len(queries)]
        ctx = enforcer.context(sender, recipient, purpose)
        got = enforcer.authorize(ctx, sql)
        query = analyze_query(sql, catalog)
        wanted = {(r, c) for r, cols in query.referenced.items() for c in (cols or compiled.tables[r]["columns"])}
        s_id, r_id = (tuple(x.split(":", 1)) for x in (sender, recipient))
        ref_cells = ref.authorized_cells(rows, s_id, r_id, purpose, wanted)
        got_cells = enforcer.authorized_cells(ctx, sql)
        expected = ref.answer(rows, ddl, sql, s_id, r_id, purpose, query.referenced)
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
        "domain": domain,
        "policy": policy.name,
        "norms": len(policy.norms),
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


def latency(db_path: str, *, repeats: int = 5, check_timeout_s: float = 3600.0, search: bool = True) -> dict[str, Any]:
    """Authorization latency (``Enforcer.authorize`` wall time) for one context over the query set.

    ``db_path`` is a demo hospital: a DuckDB file, or a Spark deployment folder
    (:func:`spark_copy`). Also reported: the custodian's one-off ``compile_s`` (compilation and
    the four checks, which search the whole database for witnesses; with ``search=False`` the
    checks run without the database, as ``run_checks(..., engine=None)``, and the context is the
    first attending who directly supervises a resident) and the p50 per query.
    """
    started = time.perf_counter()
    database = load_database(db_path)
    engine, catalog = database.engine, database.catalog
    opened_s = time.perf_counter() - started
    started = time.perf_counter()
    policy = load_policy(example_policy_path())
    limit = engine.timeout_s
    engine.timeout_s = check_timeout_s  # the checks search the whole database (`policy compile --timeout`)
    compiled = compile_policy(policy, catalog, engine)
    compiled = run_checks(compiled, catalog, engine if search else None, policy=policy)
    report = compiled.checks_report()
    engine.timeout_s = limit
    compile_s = time.perf_counter() - started
    if search:
        w = report["satisfiability"]["witnesses"]["N1"]
        sender, recipient = w["sender"], w["recipient"]
    else:  # N1's situation without the search: the first attending who directly supervises a resident
        sender, recipient = engine.execute(
            'SELECT s.supervisor_id, s.supervisee_id FROM "Supervises" AS s JOIN "Employee" AS e '
            "ON e.employee_id = s.supervisee_id WHERE e.role = 'resident' ORDER BY 1, 2 LIMIT 1").rows[0]
    enforcer = Enforcer(compiled, engine, catalog)
    ctx = enforcer.context(f"employee:{sender}", f"employee:{recipient}", "treatment")
    print(f"  compiled and checked in {compile_s:.1f} s", file=sys.stderr, flush=True)
    for sql in QUERIES:  # warm-up: parse/lineage cache, plan cache, the engine's buffers
        enforcer.authorize(ctx, sql)
    times = []
    per_query: dict[str, list[float]] = {sql: [] for sql in QUERIES}
    for _ in range(repeats):
        for sql in QUERIES:
            started = time.perf_counter()
            enforcer.authorize(ctx, sql)
            elapsed = time.perf_counter() - started
            times.append(elapsed)
            per_query[sql].append(elapsed)
            print(f"  {engine.name} {elapsed * 1000:.0f} ms  {sql[:60]}", file=sys.stderr, flush=True)
    patients = engine.execute('SELECT COUNT(*) FROM "Patient"').rows[0][0]
    database.close()
    times.sort()
    p99 = times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]
    return {
        "load_average_1m_after": round(os.getloadavg()[0], 2),
        "database": db_path,
        "engine": engine.name,
        "patients": int(patients),
        "open_s": round(opened_s, 1),
        "compile_s": round(compile_s, 1),
        "witness_search": search,
        "context": {"sender": ctx.sender.id, "recipient": ctx.recipient.id, "purpose": "treatment"},
        "samples": len(times),
        "p50_ms": round(statistics.median(times) * 1000, 1),
        "p99_ms": round(p99 * 1000, 1),
        "max_ms": round(times[-1] * 1000, 1),
        "p50_ms_per_query": {sql: round(statistics.median(t) * 1000, 1) for sql, t in per_query.items()},
    }


def spark_copy(duckdb_path: str, folder: Path) -> str:
    """The Spark deployment (Parquet tables, keys declared in pimento.toml) of a demo, written once."""
    if not (folder / "pimento.toml").exists():
        write_spark_deployment(duckdb_path, folder)
    return str(folder)


def _ensure(path: Path, patients: int, seed: int) -> str:
    if not path.exists():
        create_demo(path, patients=patients, seed=seed)
    return str(path)


def _hospital_policy() -> str:
    return example_policy_path()


#: name -> its policy path, Python grounding, context kinds and queries, and its generator
DOMAINS: dict[str, dict[str, Any]] = {
    "hospital": {"policy": _hospital_policy, "reference": hospital_reference, "contexts": _contexts,
                 "queries": QUERIES, "create": lambda path, seed, size: create_demo(path, patients=size, seed=seed)},
    "retail": {"policy": retail_policy_path, "reference": retail_reference, "contexts": _retail_contexts,
               "queries": RETAIL_QUERIES, "create": lambda path, seed, size: create_retail(path, seed=seed, size=size)},
    "school": {"policy": school_policy_path, "reference": school_reference, "contexts": _school_contexts,
               "queries": SCHOOL_QUERIES, "create": lambda path, seed, size: create_school(path, seed=seed, size=size)},
}


def run_domain(domain: str, workdir: Path, *, size: int, pairs: int, seed: int) -> dict[str, Any]:
    """Build (or reuse) the domain's database of ``size`` subjects under ``workdir`` and run the pairs."""
    path = workdir / f"{domain}{size}" / f"{domain}.duckdb"
    if not path.exists():
        DOMAINS[domain]["create"](path, seed, size)
    return run(str(path), pairs=pairs, seed=seed, domain=domain)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="bench-ci", help="where the demo databases are built/reused")
    parser.add_argument("--patients", type=int, default=2000, help="demo size for the leakage/recall benchmark")
    parser.add_argument("--latency-patients", type=int, nargs="+", default=[10000],
                        help="demo size(s) for the latency benchmark (one run per size)")
    parser.add_argument("--no-search", action="store_true",
                        help="latency: run the policy checks without the database (no witness search, which "
                             "takes minutes at 100k patients and more)")
    parser.add_argument("--engine", choices=["duckdb", "spark"], default="duckdb",
                        help="latency on the DuckDB demo or on its Spark copy (Parquet, keys in pimento.toml)")
    parser.add_argument("--pairs", type=int, default=162)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the full results (JSON) here")
    parser.add_argument("--latency-only", action="store_true", help="skip the leakage/recall pairs")
    parser.add_argument("--domain", choices=["hospital", "retail", "school", "all"], default=None,
                        help="leakage/recall per domain (no latency run); default: the hospital with latency")
    parser.add_argument("--size", type=int, default=None,
                        help="subjects per domain database with --domain (default: --patients for the hospital, "
                             "500 customers, 400 students)")
    args = parser.parse_args(argv)
    work = Path(args.workdir)
    if args.domain:
        names = ["hospital", "retail", "school"] if args.domain == "all" else [args.domain]
        default_size = {"hospital": args.patients, "retail": 500, "school": 400}
        results = {name: run_domain(name, work, size=args.size or default_size[name], pairs=args.pairs, seed=args.seed)
                   for name in names}
        if args.out:
            Path(args.out).write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
        brief = {name: {k: v for k, v in r.items() if k not in ("results", "implication")} for name, r in results.items()}
        print(json.dumps(brief, indent=2, default=str))
        return
    summary: dict[str, Any] = {}
    if not args.latency_only:
        small = _ensure(work / f"h{args.patients}" / "hospital.duckdb", args.patients, args.seed)
        summary = run(small, pairs=args.pairs, seed=args.seed)
    runs = []
    for n in args.latency_patients:
        big = _ensure(work / f"h{n}" / "hospital.duckdb", n, args.seed)
        if args.engine == "spark":
            big = spark_copy(big, work / f"spark{n}")
        runs.append(latency(big, repeats=args.repeats, search=not args.no_search))
        print(json.dumps(runs[-1], default=str), flush=True)
    summary["latency"] = runs[0] if len(runs) == 1 else runs
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    brief = {k: v for k, v in summary.items() if k not in ("results", "implication")}
    print(json.dumps(brief, indent=2, default=str))


if __name__ == "__main__":
    main()
