"""A seeded, synthetic school district (children's privacy, a FERPA/COPPA-like policy) for the CI benchmarks.

:func:`create_school` writes a DuckDB file and a ``pimento.toml`` beside it. Staff supervise each
other in a tree (principal -> heads of department -> teachers), so "a school official with a
legitimate educational interest" (the student's teacher, or anyone above that teacher) is a
recursive condition; parents consent per purpose; attendance rows reach their student only
through the two-column key ``(student_id, course_id)`` of ``Enrollment``. The policy is
:func:`school_policy_path` (``example:school_ferpa``), its text :func:`school_policy_text_path`.
Nothing in it is real.

Schema (primary keys first):

* ``Student(student_id, name, grade_level, birth_year, directory_opt_out)``
* ``Parent(parent_id, name)``, ``Guardian(parent_id, student_id)``
* ``Staff(staff_id, role)``, role in principal, head, teacher, counselor, nurse;
  ``Supervises(supervisor_id, supervisee_id)``
* ``Vendor(vendor_id, name, has_contract)`` (ed-tech operators)
* ``Course(course_id, title, teacher_id)``, ``Enrollment(student_id, course_id)``
* ``Grade(grade_id, student_id, course_id, term, score)``
* ``Attendance(attendance_id, student_id, course_id, day, present)`` -> ``Enrollment`` (two columns)
* ``HealthRecord(record_id, student_id, note)``, ``Discipline(incident_id, student_id, description)``
* ``ParentConsent(student_id, purpose, granted)``
"""

from __future__ import annotations

import os
import random
from datetime import date, timedelta
from typing import Any

from pimento.demo._generate import GeneratedDatabase, check_size, fresh_target, text_of_policy, toml_names, write_tables

__all__ = ["SCHOOL_TABLES", "SchoolInfo", "create_school", "school_policy_path", "school_policy_text_path"]

SCHOOL_TABLES = ("Student", "Parent", "Guardian", "Staff", "Supervises", "Vendor", "Course", "Enrollment", "Grade",
                 "Attendance", "HealthRecord", "Discipline", "ParentConsent")
_PUBLIC = ("Course",)
#: the year the ages are computed for (a student born after it minus 13 is under 13)
REFERENCE_YEAR = 2024

_DDL = [
    "CREATE TABLE Student (student_id INTEGER PRIMARY KEY, name VARCHAR, grade_level INTEGER, birth_year INTEGER, "
    "directory_opt_out BOOLEAN)",
    "CREATE TABLE Parent (parent_id INTEGER PRIMARY KEY, name VARCHAR)",
    "CREATE TABLE Guardian (parent_id INTEGER REFERENCES Parent(parent_id), student_id INTEGER REFERENCES "
    "Student(student_id), PRIMARY KEY (parent_id, student_id))",
    "CREATE TABLE Staff (staff_id INTEGER PRIMARY KEY, role VARCHAR)",
    "CREATE TABLE Supervises (supervisor_id INTEGER REFERENCES Staff(staff_id), supervisee_id INTEGER REFERENCES "
    "Staff(staff_id), PRIMARY KEY (supervisor_id, supervisee_id))",
    "CREATE TABLE Vendor (vendor_id INTEGER PRIMARY KEY, name VARCHAR, has_contract BOOLEAN)",
    "CREATE TABLE Course (course_id INTEGER PRIMARY KEY, title VARCHAR, teacher_id INTEGER REFERENCES Staff(staff_id))",
    "CREATE TABLE Enrollment (student_id INTEGER REFERENCES Student(student_id), course_id INTEGER REFERENCES "
    "Course(course_id), PRIMARY KEY (student_id, course_id))",
    "CREATE TABLE Grade (grade_id INTEGER PRIMARY KEY, student_id INTEGER REFERENCES Student(student_id), "
    "course_id INTEGER REFERENCES Course(course_id), term VARCHAR, score INTEGER)",
    "CREATE TABLE Attendance (attendance_id INTEGER PRIMARY KEY, student_id INTEGER, course_id INTEGER, day DATE, "
    "present BOOLEAN, FOREIGN KEY (student_id, course_id) REFERENCES Enrollment(student_id, course_id))",
    "CREATE TABLE HealthRecord (record_id INTEGER PRIMARY KEY, student_id INTEGER REFERENCES Student(student_id), "
    "note VARCHAR)",
    "CREATE TABLE Discipline (incident_id INTEGER PRIMARY KEY, student_id INTEGER REFERENCES Student(student_id), "
    "description VARCHAR)",
    "CREATE TABLE ParentConsent (student_id INTEGER REFERENCES Student(student_id), purpose VARCHAR, granted BOOLEAN, "
    "PRIMARY KEY (student_id, purpose))",
]
_FIRST = ["Ava", "Ben", "Cleo", "Dan", "Emi", "Finn", "Gia", "Hugo", "Iris", "Jon", "Kira", "Leo", "Maya", "Noah"]
_LAST = ["Adams", "Baker", "Chen", "Diaz", "Evans", "Fox", "Garcia", "Hill", "Ito", "Jones"]
_SUBJECTS = ["Math", "Reading", "Science", "History", "Art", "Music", "PE", "Spanish"]
#: purposes a parent may consent to (the policy's purpose names)
CONSENT_PURPOSES = ("edtech_service", "analytics", "research")


#: what :func:`create_school` returns (path, config_path, rows per table)
SchoolInfo = GeneratedDatabase


def school_policy_path() -> str:
    """The structured FERPA/COPPA-like policy of the school (YAML)."""
    from pimento.policy import example_policy_path

    return example_policy_path("school_ferpa")


def school_policy_text_path() -> str:
    """The school's policy in natural language (one sentence per norm)."""
    return text_of_policy(school_policy_path())


def create_school(path: str | os.PathLike[str], *, seed: int = 0, size: int = 400, overwrite: bool = False) -> SchoolInfo:
    """Write the school database (``size`` students; everything else scales with it) to ``path``.

    Same ``(seed, size)``, same database. Raises UserError on a bad size or an existing file.
    """
    check_size(size, 10, "the school", "students")
    target = fresh_target(path, overwrite=overwrite)
    rng = random.Random(seed)
    n_teachers = max(4, size // 20)
    n_heads = max(2, n_teachers // 4)
    staff = [(1, "principal")]
    heads = list(range(2, 2 + n_heads))
    teachers = list(range(2 + n_heads, 2 + n_heads + n_teachers))
    staff += [(h, "head") for h in heads] + [(t, "teacher") for t in teachers]
    nxt = 2 + n_heads + n_teachers
    counselors = [nxt, nxt + 1]
    nurses = [nxt + 2]
    staff += [(c, "counselor") for c in counselors] + [(n, "nurse") for n in nurses]
    supervises = [(1, h) for h in heads] + [(1, c) for c in counselors] + [(1, n) for n in nurses]
    supervises += [(heads[i % n_heads], t) for i, t in enumerate(teachers)]
    vendors = [(i, f"EdApp {i}", i % 3 != 0) for i in range(1, 5)]
    courses: list[tuple[int, str, int]] = []
    for i, t in enumerate(teachers):
        for k in range(2):
            cid = len(courses) + 1
            courses.append((cid, f"{_SUBJECTS[(i + k) % len(_SUBJECTS)]} {cid}", t))
    students, parents, guardians = [], [], []
    for s in range(1, size + 1):
        grade_level = rng.randint(1, 12)
        students.append((s, f"{rng.choice(_FIRST)} {rng.choice(_LAST)}", grade_level, REFERENCE_YEAR - 6 - grade_level,
                         rng.random() < 0.15))
    pid = 0
    for s in range(1, size + 1):
        for _ in range(rng.choice((1, 1, 2))):
            pid += 1
            parents.append((pid, f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"))
            guardians.append((pid, s))
    enrollment = sorted({(s, rng.randint(1, len(courses))) for s in range(1, size + 1) for _ in range(3)})
    grades: list[tuple[Any, ...]] = []
    attendance: list[tuple[Any, ...]] = []
    start = date(2024, 9, 2)
    for s, c in enrollment:
        for term in ("fall", "spring"):
            if rng.random() < 0.8:
                grades.append((len(grades) + 1, s, c, term, rng.randint(40, 100)))
        for d in range(rng.randint(0, 3)):
            attendance.append((len(attendance) + 1, s, c, start + timedelta(days=7 * d), rng.random() < 0.9))
    health = [(i + 1, s, rng.choice(("asthma", "peanut allergy", "diabetes", "ADHD", "flu shot")))
              for i, s in enumerate(rng.sample(range(1, size + 1), size // 5))]
    discipline = [(i + 1, s, rng.choice(("late", "disruption", "fight", "phone use")))
                  for i, s in enumerate(rng.sample(range(1, size + 1), size // 8))]
    consent = [(s, p, rng.random() < 0.7) for s in range(1, size + 1) for p in CONSENT_PURPOSES if rng.random() < 0.4]
    data: dict[str, list[tuple[Any, ...]]] = {
        "Student": students, "Parent": parents, "Guardian": guardians, "Staff": staff, "Supervises": supervises,
        "Vendor": vendors, "Course": courses, "Enrollment": enrollment, "Grade": grades, "Attendance": attendance,
        "HealthRecord": health, "Discipline": discipline, "ParentConsent": consent,
    }
    write_tables(target, _DDL, SCHOOL_TABLES, data)
    config = target.parent / "pimento.toml"
    private = toml_names(SCHOOL_TABLES, leave_out=_PUBLIC)
    config.write_text(
        "# Written by pimento.demo.school.create_school: a synthetic school (docs/contextual-integrity.md).\n"
        f'[database]\npath = "{target.name}"\n\n[privacy]\nprivate = [{private}]\npublic = ["Course"]\n'
        'root = "Student"\n',
        encoding="utf-8",
    )
    return SchoolInfo(target, config, {t: len(data[t]) for t in SCHOOL_TABLES})
