"""The demo hospital as a corpus of documents: registrations, staff records, visit notes,
prescriptions, discharge letters, care and research records.

:func:`narrate` writes one document per row of the demo database (medication orders inside the
visit note that placed them), each from one of several wordings chosen at random with a seed, and
:data:`CORPUS_PATTERNS` is the pattern spec with which ``pimento ingest`` reads them back (a
custodian writes such a spec once per kind of document). :func:`write_demo_corpus` builds a demo
database, narrates it, and writes the schema and the spec beside the documents::

    pimento demo corpus --out corpus --patients 200
    pimento ingest --corpus corpus --schema corpus/schema.sql --patterns corpus/patterns.yaml --out rebuilt.duckdb

Some wordings name the patient by name and year of birth instead of the MRN, so the rebuild also
exercises entity resolution by lookup (docs/ingest.md); the benchmark
``benchmarks/ingest_quality.py`` (in the repository, not installed) measures how much of the
database comes back.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from pimento.demo.hospital import TABLES, create_demo
from pimento.errors import DataSourceError, UserError

__all__ = ["CORPUS_PATTERNS", "CorpusInfo", "narrate", "narrated_rows", "schema_ddl", "write_demo_corpus"]

_SEX = {"F": ("female", "woman", "F"), "M": ("male", "man", "M")}


def _date(day: dt.date, rng: random.Random) -> str:
    style = rng.randrange(3)
    if style == 0:
        return day.isoformat()
    if style == 1:
        return f"{day.day} {day.strftime('%B %Y')}"
    return f"{day.strftime('%B')} {day.day}, {day.year}"


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


# --------------------------------------------------------------------------- templates
# Each function takes the row (a dict), the lookup context and the random generator, and returns
# the document text. Every kind has three wordings.


def _patient(r: dict, ctx: dict, rng: random.Random) -> str:
    long, person, short = _SEX[r["sex"]]
    return rng.choice((
        f"Registration form. Patient: {r['name']}. MRN: {r['pat_id']}. Year of birth: {r['birth_year']}. "
        f"Sex: {short}. ZIP prefix: {r['zip3']}.",
        f"New patient {r['name']} (MRN {r['pat_id']}) was registered today: {long}, born in {r['birth_year']}, "
        f"living in ZIP area {r['zip3']}.",
        f"MRN {r['pat_id']} belongs to {r['name']}, a {person} born in {r['birth_year']} from the {r['zip3']} ZIP area.",
    ))


def _employee(r: dict, ctx: dict, rng: random.Random) -> str:
    specialty = r["specialty"]
    choice = rng.randrange(3)
    if choice == 0:
        return (
            f"Staff record {r['employee_id']}: {r['name']}, {r['role']}, {r['department']} department. "
            f"Specialty: {specialty or 'none'}."
        )
    if choice == 1:
        tail = f", specialising in {specialty}" if specialty else ""
        return f"{r['name']} (employee {r['employee_id']}) works as {_article(r['role'])} {r['role']} in {r['department']}{tail}."
    tail = f" with specialty {specialty}" if specialty else ""
    return (
        f"Employee no. {r['employee_id']}, {r['name']}, joined {r['department']} as "
        f"{_article(r['role'])} {r['role']}{tail}."
    )


def _diagnosis(r: dict, ctx: dict, rng: random.Random) -> str:
    return rng.choice((
        f"Diagnosis: {r['diagnosis']}. Chapter: {r['category']}. HIV status: {r['hivstatus']}.",
        f"Code list entry: '{r['diagnosis']}' is classified under '{r['category']}' (HIV status {r['hivstatus']}).",
        f"Reference diagnosis '{r['diagnosis']}', ICD-10 chapter '{r['category']}', HIV status {r['hivstatus']}.",
    ))


def _visit(r: dict, ctx: dict, rng: random.Random) -> str:
    patient = ctx["Patient"][r["pat_id"]]
    doctor = ctx["Employee"][r["attending_id"]]
    orders = ctx["orders"].get(r["visit_id"], [])
    day = _date(r["visit_date"], rng)
    choice = rng.randrange(3)
    if choice == 0:
        listed = "; ".join(f"#{o['order_id']} {o['medication']} {o['dose_mg']} mg" for o in orders) or "none"
        return (
            f"Visit {r['visit_id']} on {day}. Patient {patient['name']} (MRN {r['pat_id']}) was seen by "
            f"{doctor['name']} (staff {r['attending_id']}). Diagnosis: {r['diagnosis']}.\n"
            f"Note: \"{r['note']}\"\nOrders: {listed}."
        )
    if choice == 1:
        listed = " ".join(f"Order {o['order_id']}: {o['medication']}, {o['dose_mg']} mg." for o in orders)
        return (
            f"On {day}, {doctor['name']} (employee {r['attending_id']}) saw {patient['name']}, born "
            f"{patient['birth_year']}, for {r['diagnosis']} (visit no. {r['visit_id']}).\n"
            f"Clinical note: \"{r['note']}\"\n{listed or 'No medication ordered.'}"
        )
    listed = "\n".join(f"Order {o['order_id']}: {o['medication']} {o['dose_mg']} mg" for o in orders)
    return (
        f"Encounter #{r['visit_id']} | {day} | MRN {r['pat_id']} | attending {r['attending_id']} | dx: {r['diagnosis']}\n"
        f"Note: \"{r['note']}\"\n{listed}"
    ).rstrip()


def _prescription(r: dict, ctx: dict, rng: random.Random) -> str:
    day = _date(r["issued"], rng)
    choice = rng.randrange(3)
    if choice == 0:
        return (
            f"Prescription {r['prescription_id']} (order {r['order_id']}), issued {day}: {r['medication']} for "
            f"MRN {r['pat_id']}, signed by prescriber {r['prescriber_id']}."
        )
    if choice == 1:
        return (
            f"Rx no. {r['prescription_id']}. Patient MRN {r['pat_id']}. Drug: {r['medication']}. Prescriber: employee "
            f"{r['prescriber_id']}. Date: {day}. Fills order {r['order_id']}."
        )
    doctor = ctx["Employee"][r["prescriber_id"]]
    patient = ctx["Patient"][r["pat_id"]]
    return (
        f"{doctor['name']} (staff {r['prescriber_id']}) signed prescription #{r['prescription_id']} on {day} for "
        f"{r['medication']}, order {r['order_id']}, patient {patient['name']} (MRN {r['pat_id']})."
    )


def _discharge(r: dict, ctx: dict, rng: random.Random) -> str:
    patient = ctx["Patient"][r["pat_id"]]
    day = _date(r["discharge_date"], rng)
    choice = rng.randrange(3)
    if choice == 0:
        return (
            f"Discharge letter {r['discharge_id']}\nDear colleague, your patient {patient['name']} (MRN {r['pat_id']}) "
            f"was discharged on {day} after the admission of visit {r['visit_id']}. "
            f"Final diagnosis: {r['finaldiagnosis']}.\nKind regards"
        )
    if choice == 1:
        return (
            f"Discharge summary no. {r['discharge_id']}, visit {r['visit_id']}, MRN {r['pat_id']}. "
            f"Discharged {day}. Final diagnosis: {r['finaldiagnosis']}."
        )
    return (
        f"We discharged {patient['name']}, born {patient['birth_year']}, on {day} (discharge {r['discharge_id']}, "
        f"visit {r['visit_id']}) with a final diagnosis of {r['finaldiagnosis']}."
    )


def _treating(r: dict, ctx: dict, rng: random.Random) -> str:
    return rng.choice((
        f"Employee {r['employee_id']} is the {r['role']} clinician of MRN {r['pat_id']}.",
        f"MRN {r['pat_id']}: {r['role']} care by staff {r['employee_id']}.",
        f"Care relationship: staff {r['employee_id']}, patient MRN {r['pat_id']}, role {r['role']}.",
    ))


def _supervises(r: dict, ctx: dict, rng: random.Random) -> str:
    return rng.choice((
        f"Staff {r['supervisor_id']} supervises staff {r['supervisee_id']}.",
        f"Supervision: employee {r['supervisee_id']} reports to employee {r['supervisor_id']}.",
        f"Employee {r['supervisee_id']} is supervised by employee {r['supervisor_id']}.",
    ))


def _team_member(r: dict, ctx: dict, rng: random.Random) -> str:
    return rng.choice((
        f"Employee {r['employee_id']} is a member of care team {r['team_id']}.",
        f"Care team {r['team_id']} includes staff {r['employee_id']}.",
        f"Team roster: care team {r['team_id']}, member employee {r['employee_id']}.",
    ))


def _team_assignment(r: dict, ctx: dict, rng: random.Random) -> str:
    return rng.choice((
        f"Patient MRN {r['pat_id']} is assigned to care team {r['team_id']}.",
        f"Care team {r['team_id']} looks after MRN {r['pat_id']}.",
        f"Assignment: MRN {r['pat_id']} to care team {r['team_id']}.",
    ))


def _researcher(r: dict, ctx: dict, rng: random.Random) -> str:
    return rng.choice((
        f"Researcher {r['researcher_id']}: {r['name']}; institution: {r['institution']}.",
        f"{r['name']} of {r['institution']} is registered as researcher {r['researcher_id']}.",
        f"Research registry entry {r['researcher_id']}: {r['name']} ({r['institution']}).",
    ))


def _study(r: dict, ctx: dict, rng: random.Random) -> str:
    status = "approved" if r["approved"] else rng.choice(("pending", "not approved"))
    choice = rng.randrange(3)
    if choice == 0:
        return f"Study {r['study_id']} \"{r['title']}\" is led by researcher {r['researcher_id']}; status: {status}."
    if choice == 1:
        return f"Researcher {r['researcher_id']} leads study {r['study_id']}, titled \"{r['title']}\" ({status})."
    return f"Protocol {r['study_id']}: \"{r['title']}\". Principal investigator: researcher {r['researcher_id']}. Ethics: {status}."


def _study_patient(r: dict, ctx: dict, rng: random.Random) -> str:
    return rng.choice((
        f"MRN {r['pat_id']} is enrolled in study {r['study_id']}.",
        f"Study {r['study_id']} enrolled patient MRN {r['pat_id']}.",
        f"Enrolment: study {r['study_id']}, MRN {r['pat_id']}.",
    ))


#: (file stem, id prefix, table, key columns, template): one document per row of the table.
_KINDS: tuple[tuple[str, str, str, tuple[str, ...], Callable[[dict, dict, random.Random], str]], ...] = (
    ("registrations", "reg", "Patient", ("pat_id",), _patient),
    ("staff", "staff", "Employee", ("employee_id",), _employee),
    ("diagnoses", "dx", "DxCategory", ("diagnosis",), _diagnosis),
    ("visit-notes", "visit", "Visit", ("visit_id",), _visit),
    ("prescriptions", "rx", "Prescription", ("prescription_id",), _prescription),
    ("discharge-letters", "discharge", "Discharge", ("discharge_id",), _discharge),
    ("care-relationships", "treat", "TreatingRelationship", ("employee_id", "pat_id"), _treating),
    ("supervision", "sup", "Supervises", ("supervisor_id", "supervisee_id"), _supervises),
    ("care-teams", "team", "CareTeamMember", ("employee_id", "team_id"), _team_member),
    ("team-assignments", "assign", "TeamAssignment", ("team_id", "pat_id"), _team_assignment),
    ("researchers", "researcher", "Researcher", ("researcher_id",), _researcher),
    ("studies", "study", "Study", ("study_id",), _study),
    ("enrolments", "enrol", "StudyPatient", ("study_id", "pat_id"), _study_patient),
)

# --------------------------------------------------------------------------- the pattern spec

#: The pattern spec that reads the narrations back (written to ``patterns.yaml`` by
#: :func:`write_demo_corpus`); see docs/ingest.md for the format.
CORPUS_PATTERNS = r"""# Pattern spec for the demo hospital's corpus (pimento demo corpus); format: docs/ingest.md
version: 1
tables:
  Patient:
    match_on: [name, birth_year]
    rules:
      - when: 'Registration form|New patient|^MRN \d+ belongs'
        patterns:
          - 'Patient: (?P<name>[^.\n]+)\. MRN: (?P<pat_id>\d+)\. Year of birth: (?P<birth_year>\d{4})\. Sex: (?P<sex>[FM])\. ZIP prefix: (?P<zip3>\d{3})\.'
          - 'New patient (?P<name>[^(\n]+?) \(MRN (?P<pat_id>\d+)\) was registered today: (?P<sex>female|male), born in (?P<birth_year>\d{4}), living in ZIP area (?P<zip3>\d{3})\.'
          - 'MRN (?P<pat_id>\d+) belongs to (?P<name>[^,\n]+), a (?P<sex>woman|man) born in (?P<birth_year>\d{4}) from the (?P<zip3>\d{3}) ZIP area\.'
        values:
          sex: {map: {female: F, woman: F, male: M, man: M}}
      # Patients named in notes, letters and prescriptions: the same row as the registration.
      - when: 'Visit \d+ on|prescription #|Discharge letter'
        patterns:
          - '(?:Patient|patient) (?P<name>[A-Z][A-Za-z''-]+(?: [A-Z][A-Za-z''-]+)+) \(MRN (?P<pat_id>\d+)\)'
  Employee:
    rules:
      - when: 'Staff record|works as|Employee no\.'
        patterns:
          - 'Staff record (?P<employee_id>\d+): (?P<name>[^,\n]+), (?P<role>[a-z]+), (?P<department>[^.\n]+?) department\. Specialty: (?P<specialty>[^.\n]+)\.'
          - '(?P<name>[A-Z][^(\n]*?) \(employee (?P<employee_id>\d+)\) works as an? (?P<role>[a-z]+) in (?P<department>[^,.\n]+?)(?:, specialising in (?P<specialty>[^.\n]+))?\.$'
          - 'Employee no\. (?P<employee_id>\d+), (?P<name>[^,\n]+), joined (?P<department>.+?) as an? (?P<role>[a-z]+)(?: with specialty (?P<specialty>[^.\n]+))?\.$'
        values:
          specialty: {map: {none: ''}}
      - when: 'Visit \d+ on|signed prescription'
        patterns:
          - '(?P<name>[A-Z][A-Za-z''-]+(?: [A-Z][A-Za-z''-]+)+) \(staff (?P<employee_id>\d+)\)'
  DxCategory:
    rules:
      - patterns:
          - '^Diagnosis: (?P<diagnosis>[^.\n]+)\. Chapter: (?P<category>[^.\n]+)\. HIV status: (?P<hivstatus>[a-z]+)\.'
          - "^Code list entry: '(?P<diagnosis>[^'\n]+)' is classified under '(?P<category>[^'\n]+)' \\(HIV status (?P<hivstatus>[a-z]+)\\)\\."
          - "^Reference diagnosis '(?P<diagnosis>[^'\n]+)', ICD-10 chapter '(?P<category>[^'\n]+)', HIV status (?P<hivstatus>[a-z]+)\\."
  Visit:
    rules:
      - patterns:
          - '^Visit (?P<visit_id>\d+) on (?P<visit_date>[^.\n]+?)\. Patient [^(\n]+ \(MRN (?P<pat_id>\d+)\) was seen by [^(\n]+ \(staff (?P<attending_id>\d+)\)\. Diagnosis: (?P<diagnosis>[^.\n]+)\.\nNote: "(?P<note>[^"]*)"'
          - '^Encounter #(?P<visit_id>\d+) \| (?P<visit_date>[^|\n]+?) \| MRN (?P<pat_id>\d+) \| attending (?P<attending_id>\d+) \| dx: (?P<diagnosis>[^\n]+)\nNote: "(?P<note>[^"]*)"'
        values: &dates
          visit_date: {date: ['%Y-%m-%d', '%d %B %Y', '%B %d, %Y']}
      - patterns:
          - '^On (?P<visit_date>[^\n]+?), [A-Z][A-Za-z''-]+(?: [A-Z][A-Za-z''-]+)+ \(employee (?P<attending_id>\d+)\) saw (?P<patient>[^,\n]+), born (?P<born>\d{4}), for (?P<diagnosis>[^\n]+) \(visit no\. (?P<visit_id>\d+)\)\.\nClinical note: "(?P<note>[^"]*)"'
        values: *dates
        lookup:
          pat_id: {table: Patient, by: {name: patient, birth_year: born}}
  MedicationOrders:
    rules:
      - when: '^(?:Visit \d+ on|On |Encounter #)'
        patterns:
          - '#(?P<order_id>\d+) (?P<medication>[a-z][a-z ]*?) (?P<dose_mg>\d+) mg'
          - 'Order (?P<order_id>\d+): (?P<medication>[a-z][a-z ]*?),? (?P<dose_mg>\d+) mg'
        context:
          visit_id: Visit.visit_id
          pat_id: Visit.pat_id
  Prescription:
    rules:
      - patterns:
          - '^Prescription (?P<prescription_id>\d+) \(order (?P<order_id>\d+)\), issued (?P<issued>[^:\n]+): (?P<medication>[a-z][a-z ]*?) for MRN (?P<pat_id>\d+), signed by prescriber (?P<prescriber_id>\d+)\.'
          - '^Rx no\. (?P<prescription_id>\d+)\. Patient MRN (?P<pat_id>\d+)\. Drug: (?P<medication>[a-z][a-z ]*?)\. Prescriber: employee (?P<prescriber_id>\d+)\. Date: (?P<issued>[^.\n]+)\. Fills order (?P<order_id>\d+)\.'
          - '\(staff (?P<prescriber_id>\d+)\) signed prescription #(?P<prescription_id>\d+) on (?P<issued>.+?) for (?P<medication>[a-z][a-z ]*?), order (?P<order_id>\d+), patient [^(\n]+ \(MRN (?P<pat_id>\d+)\)\.'
        values:
          issued: {date: ['%Y-%m-%d', '%d %B %Y', '%B %d, %Y']}
  Discharge:
    rules:
      - patterns:
          - '^Discharge letter (?P<discharge_id>\d+)\n.*?\(MRN (?P<pat_id>\d+)\) was discharged on (?P<discharge_date>.+?) after the admission of visit (?P<visit_id>\d+)\. Final diagnosis: (?P<finaldiagnosis>[^.\n]+)\.'
          - '^Discharge summary no\. (?P<discharge_id>\d+), visit (?P<visit_id>\d+), MRN (?P<pat_id>\d+)\. Discharged (?P<discharge_date>[^.\n]+)\. Final diagnosis: (?P<finaldiagnosis>[^.\n]+)\.'
        values: &discharged
          discharge_date: {date: ['%Y-%m-%d', '%d %B %Y', '%B %d, %Y']}
      - patterns:
          - '^We discharged (?P<patient>[^,\n]+), born (?P<born>\d{4}), on (?P<discharge_date>.+?) \(discharge (?P<discharge_id>\d+), visit (?P<visit_id>\d+)\) with a final diagnosis of (?P<finaldiagnosis>[^.\n]+)\.'
        values: *discharged
        lookup:
          pat_id: {table: Patient, by: {name: patient, birth_year: born}}
  TreatingRelationship:
    rules:
      - patterns:
          - '^Employee (?P<employee_id>\d+) is the (?P<role>attending|consulting) clinician of MRN (?P<pat_id>\d+)\.'
          - '^MRN (?P<pat_id>\d+): (?P<role>attending|consulting) care by staff (?P<employee_id>\d+)\.'
          - '^Care relationship: staff (?P<employee_id>\d+), patient MRN (?P<pat_id>\d+), role (?P<role>attending|consulting)\.'
  Supervises:
    rules:
      - patterns:
          - '^Staff (?P<supervisor_id>\d+) supervises staff (?P<supervisee_id>\d+)\.'
          - '^Supervision: employee (?P<supervisee_id>\d+) reports to employee (?P<supervisor_id>\d+)\.'
          - '^Employee (?P<supervisee_id>\d+) is supervised by employee (?P<supervisor_id>\d+)\.'
  CareTeamMember:
    rules:
      - patterns:
          - '^Employee (?P<employee_id>\d+) is a member of care team (?P<team_id>\d+)\.'
          - '^Care team (?P<team_id>\d+) includes staff (?P<employee_id>\d+)\.'
          - '^Team roster: care team (?P<team_id>\d+), member employee (?P<employee_id>\d+)\.'
  TeamAssignment:
    rules:
      - patterns:
          - '^Patient MRN (?P<pat_id>\d+) is assigned to care team (?P<team_id>\d+)\.'
          - '^Care team (?P<team_id>\d+) looks after MRN (?P<pat_id>\d+)\.'
          - '^Assignment: MRN (?P<pat_id>\d+) to care team (?P<team_id>\d+)\.'
  Researcher:
    rules:
      - patterns:
          - '^Researcher (?P<researcher_id>\d+): (?P<name>[^;\n]+); institution: (?P<institution>[^\n]+)\.$'
          - '^(?P<name>[^\n]+?) of (?P<institution>[^\n]+?) is registered as researcher (?P<researcher_id>\d+)\.'
          - '^Research registry entry (?P<researcher_id>\d+): (?P<name>[^(\n]+) \((?P<institution>[^)\n]+)\)\.'
  Study:
    rules:
      - patterns:
          - '^Study (?P<study_id>\d+) "(?P<title>[^"]+)" is led by researcher (?P<researcher_id>\d+); status: (?P<approved>approved|pending|not approved)\.'
          - '^Researcher (?P<researcher_id>\d+) leads study (?P<study_id>\d+), titled "(?P<title>[^"]+)" \((?P<approved>approved|pending|not approved)\)\.'
          - '^Protocol (?P<study_id>\d+): "(?P<title>[^"]+)"\. Principal investigator: researcher (?P<researcher_id>\d+)\. Ethics: (?P<approved>approved|pending|not approved)\.'
        values:
          approved: {map: {approved: 'true', pending: 'false', not approved: 'false'}}
  StudyPatient:
    rules:
      - patterns:
          - '^MRN (?P<pat_id>\d+) is enrolled in study (?P<study_id>\d+)\.'
          - '^Study (?P<study_id>\d+) enrolled patient MRN (?P<pat_id>\d+)\.'
          - '^Enrolment: study (?P<study_id>\d+), MRN (?P<pat_id>\d+)\.'
"""


# --------------------------------------------------------------------------- writing


@dataclass(frozen=True)
class CorpusInfo:
    """What :func:`write_demo_corpus` (or :func:`narrate`) wrote."""

    folder: Path
    documents: int
    kinds: dict[str, int] = field(default_factory=dict)
    schema_path: Path | None = None
    patterns_path: Path | None = None
    source_path: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "folder": str(self.folder),
            "documents": self.documents,
            "kinds": dict(self.kinds),
            "schema": str(self.schema_path) if self.schema_path else None,
            "patterns": str(self.patterns_path) if self.patterns_path else None,
            "source": str(self.source_path) if self.source_path else None,
        }


def schema_ddl(con: duckdb.DuckDBPyConnection) -> str:
    """The demo database's CREATE TABLE statements, in creation order (what ``schema.sql`` holds)."""
    found = dict(con.execute("SELECT table_name, sql FROM duckdb_tables()").fetchall())
    return "\n\n".join(found[t].rstrip(";") + ";" for t in TABLES) + "\n"


def narrate(database: str | Path, folder: str | Path, *, seed: int = 0) -> CorpusInfo:
    """Write one document per row of the demo database at ``database`` into ``folder/documents``.

    Documents are JSON lines (``{"id": ..., "text": ...}``), one file per kind, ids such as
    ``visit-17``; the wording of each is drawn from ``random.Random(seed)``.
    """
    out = Path(folder)
    data = _read_demo(database)
    ctx: dict[str, Any] = {
        "Patient": {r["pat_id"]: r for r in data["Patient"]},
        "Employee": {r["employee_id"]: r for r in data["Employee"]},
        "orders": _orders_by_visit(data),
    }
    rng = random.Random(seed)
    documents = out / "documents"
    documents.mkdir(parents=True, exist_ok=True)
    kinds: dict[str, int] = {}
    for stem, prefix, table, key, template in _KINDS:
        path = documents / f"{stem}.jsonl"
        with path.open("w", encoding="utf-8") as stream:
            for row in data[table]:
                doc_id = _doc_id(prefix, key, row)
                stream.write(json.dumps({"id": doc_id, "text": template(row, ctx, rng)}, ensure_ascii=False) + "\n")
        kinds[stem] = len(data[table])
    return CorpusInfo(out, sum(kinds.values()), kinds)


def _read_demo(database: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Every narrated table of the demo database at ``database``, as rows (read-only)."""
    try:
        con = duckdb.connect(str(database), read_only=True)
    except duckdb.Error as exc:
        raise DataSourceError(f"cannot open the demo database {database}: {exc}") from exc
    try:
        return {t: _rows(con, t) for t in TABLES}
    finally:
        con.close()


def _orders_by_visit(data: dict[str, list[dict[str, Any]]]) -> dict[Any, list[dict[str, Any]]]:
    """The medication orders of each visit (a visit note lists them)."""
    orders: dict[Any, list[dict[str, Any]]] = {}
    for order in data["MedicationOrders"]:
        orders.setdefault(order["visit_id"], []).append(order)
    return orders


def narrated_rows(database: str | Path) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Document id -> the rows of the demo database at ``database`` that the document narrates,
    as ``(table, row)``: one row per document, plus the medication orders listed in a visit note
    (the benchmark's truth for a sample of documents)."""
    data = _read_demo(database)
    orders = _orders_by_visit(data)
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for _stem, prefix, table, key, _template in _KINDS:
        for row in data[table]:
            doc_id = _doc_id(prefix, key, row)
            rows = [(table, row)]
            if table == "Visit":
                rows += [("MedicationOrders", o) for o in orders.get(row["visit_id"], [])]
            out[doc_id] = rows
    return out


def write_demo_corpus(folder: str | Path, *, patients: int = 200, seed: int = 0, overwrite: bool = False) -> CorpusInfo:
    """Build the demo database (``folder/source/hospital.duckdb``), narrate it, write schema and spec.

    Raises:
        UserError: ``folder`` already holds a corpus and ``overwrite`` is off.
    """
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is a file; the corpus goes into a folder")
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise UserError(f"{out} is not empty", hint="use --force to replace the corpus files in it, or another --out")
    if overwrite:
        for name in ("documents", "source"):
            if (out / name).exists():
                shutil.rmtree(out / name)
    source = out / "source" / "hospital.duckdb"
    create_demo(source, patients=patients, seed=seed, overwrite=True)
    info = narrate(source, out, seed=seed)
    con = duckdb.connect(str(source), read_only=True)
    try:
        ddl = schema_ddl(con)
    finally:
        con.close()
    schema_path = out / "schema.sql"
    patterns_path = out / "patterns.yaml"
    schema_path.write_text("-- The demo hospital's schema (written by `pimento demo corpus`).\n" + ddl, encoding="utf-8")
    patterns_path.write_text(CORPUS_PATTERNS, encoding="utf-8")
    return CorpusInfo(out, info.documents, info.kinds, schema_path, patterns_path, source)


def _doc_id(prefix: str, key: tuple[str, ...], row: dict[str, Any]) -> str:
    """A document's id: its kind's prefix and the narrated row's key, e.g. ``visit-17``, ``treat-4-56``."""
    return f"{prefix}-" + "-".join(str(row[k]).replace(" ", "_") for k in key)


def _rows(con: duckdb.DuckDBPyConnection, table: str) -> list[dict[str, Any]]:
    key = {"TreatingRelationship": "employee_id, pat_id", "Supervises": "supervisor_id, supervisee_id",
           "CareTeamMember": "employee_id, team_id", "TeamAssignment": "team_id, pat_id",
           "StudyPatient": "study_id, pat_id", "DxCategory": "diagnosis"}.get(table, "1")
    cursor = con.execute(f"SELECT * FROM {table} ORDER BY {key}")
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]
