"""A seeded, synthetic hospital database for demos, tests and benchmarks.

:func:`create_demo` writes a DuckDB file with the schema of ``.agents/DEMO_SCHEMA.md`` (documented in
``docs/demo.md``) and a ``pimento.toml`` beside it. Everything is drawn from
``numpy.random.Generator(PCG64(seed))``, so the same ``(patients, seed)`` gives the same database,
row for row. Nothing in it is real: names come from short lists and notes from templates.

The data is shaped so that the paper's running example works:
"How many patients were prescribed warfarin by cardiologists?" has two correct formulations,
:data:`DEMO_SQL_PRESCRIPTION` and :data:`DEMO_SQL_ORDERS`, that return the same count on the data,
because every prescription is the unique signature of one medication order and is signed by a
physician of the same specialty as the visit's attending. Attendings are spread evenly over the
physicians of a specialty, while signatures are heavy-tailed (Zipf): a few senior physicians of each
service sign most of its prescriptions. One cardiologist therefore touches many more warfarin
prescriptions than warfarin orders of the visits they attend, so the prescription formulation has a
much larger residual sensitivity when Employee is private.

Example:
    >>> import pathlib, tempfile
    >>> from pimento.demo.hospital import create_demo
    >>> info = create_demo(pathlib.Path(tempfile.mkdtemp()) / "hospital.duckdb", patients=200)
    >>> info.rows["Patient"], info.config_path.name
    (200, 'pimento.toml')
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from pimento.errors import DataSourceError, InternalError, UserError

__all__ = [
    "DEMO_QUESTION",
    "DEMO_SQL_ORDERS",
    "DEMO_SQL_PRESCRIPTION",
    "DIAGNOSES",
    "MEDICATIONS",
    "PUBLIC_TABLES",
    "SPECIALTIES",
    "TABLES",
    "DemoInfo",
    "check_target",
    "create_demo",
    "demo_config_text",
]

DEMO_QUESTION = "How many patients were prescribed warfarin by cardiologists?"

DEMO_SQL_PRESCRIPTION = (
    "SELECT COUNT(DISTINCT P.pat_id) FROM Prescription P JOIN Employee E ON P.prescriber_id = E.employee_id "
    "WHERE P.medication = 'warfarin' AND E.specialty = 'Cardiology'"
)

DEMO_SQL_ORDERS = (
    "SELECT COUNT(DISTINCT M.pat_id) FROM MedicationOrders M JOIN Visit V ON M.visit_id = V.visit_id "
    "JOIN Employee E ON V.attending_id = E.employee_id "
    "WHERE M.medication = 'warfarin' AND E.specialty = 'Cardiology'"
)

#: Tables in creation order (every foreign key points to an earlier table).
TABLES: tuple[str, ...] = (
    "Patient",
    "Employee",
    "DxCategory",
    "Visit",
    "MedicationOrders",
    "Prescription",
    "Discharge",
    "TreatingRelationship",
    "Supervises",
    "CareTeamMember",
    "TeamAssignment",
    "Researcher",
    "Study",
    "StudyPatient",
)

#: Relations with no personal data; every other relation is private.
PUBLIC_TABLES: tuple[str, ...] = ("DxCategory", "Researcher", "Study")

_DDL: dict[str, str] = {
    "Patient": """CREATE TABLE Patient (
    pat_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    birth_year INTEGER NOT NULL,
    sex TEXT NOT NULL CHECK (sex IN ('F', 'M')),
    zip3 TEXT NOT NULL)""",
    "Employee": """CREATE TABLE Employee (
    employee_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('physician', 'resident', 'nurse', 'pharmacist', 'admin')),
    specialty TEXT,
    department TEXT NOT NULL)""",
    "DxCategory": """CREATE TABLE DxCategory (
    diagnosis TEXT PRIMARY KEY,
    category TEXT NOT NULL,
    hivstatus TEXT NOT NULL CHECK (hivstatus IN ('positive', 'negative', 'unknown')))""",
    "Visit": """CREATE TABLE Visit (
    visit_id INTEGER PRIMARY KEY,
    pat_id INTEGER NOT NULL REFERENCES Patient (pat_id),
    attending_id INTEGER NOT NULL REFERENCES Employee (employee_id),
    visit_date DATE NOT NULL,
    diagnosis TEXT NOT NULL REFERENCES DxCategory (diagnosis),
    note TEXT NOT NULL)""",
    "MedicationOrders": """CREATE TABLE MedicationOrders (
    order_id INTEGER PRIMARY KEY,
    visit_id INTEGER NOT NULL REFERENCES Visit (visit_id),
    pat_id INTEGER NOT NULL REFERENCES Patient (pat_id),
    medication TEXT NOT NULL,
    dose_mg INTEGER NOT NULL)""",
    "Prescription": """CREATE TABLE Prescription (
    prescription_id INTEGER PRIMARY KEY,
    order_id INTEGER NOT NULL UNIQUE REFERENCES MedicationOrders (order_id),
    pat_id INTEGER NOT NULL REFERENCES Patient (pat_id),
    prescriber_id INTEGER NOT NULL REFERENCES Employee (employee_id),
    medication TEXT NOT NULL,
    issued DATE NOT NULL)""",
    "Discharge": """CREATE TABLE Discharge (
    discharge_id INTEGER PRIMARY KEY,
    visit_id INTEGER NOT NULL UNIQUE REFERENCES Visit (visit_id),
    pat_id INTEGER NOT NULL REFERENCES Patient (pat_id),
    finaldiagnosis TEXT NOT NULL REFERENCES DxCategory (diagnosis),
    discharge_date DATE NOT NULL)""",
    "TreatingRelationship": """CREATE TABLE TreatingRelationship (
    employee_id INTEGER NOT NULL REFERENCES Employee (employee_id),
    pat_id INTEGER NOT NULL REFERENCES Patient (pat_id),
    role TEXT NOT NULL CHECK (role IN ('attending', 'consulting')),
    PRIMARY KEY (employee_id, pat_id))""",
    "Supervises": """CREATE TABLE Supervises (
    supervisor_id INTEGER NOT NULL REFERENCES Employee (employee_id),
    supervisee_id INTEGER NOT NULL REFERENCES Employee (employee_id),
    PRIMARY KEY (supervisor_id, supervisee_id))""",
    "CareTeamMember": """CREATE TABLE CareTeamMember (
    employee_id INTEGER NOT NULL REFERENCES Employee (employee_id),
    team_id INTEGER NOT NULL,
    PRIMARY KEY (employee_id, team_id))""",
    "TeamAssignment": """CREATE TABLE TeamAssignment (
    team_id INTEGER NOT NULL,
    pat_id INTEGER NOT NULL REFERENCES Patient (pat_id),
    PRIMARY KEY (team_id, pat_id))""",
    "Researcher": """CREATE TABLE Researcher (
    researcher_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    institution TEXT NOT NULL)""",
    "Study": """CREATE TABLE Study (
    study_id INTEGER PRIMARY KEY,
    researcher_id INTEGER NOT NULL REFERENCES Researcher (researcher_id),
    title TEXT NOT NULL,
    approved BOOLEAN NOT NULL)""",
    "StudyPatient": """CREATE TABLE StudyPatient (
    study_id INTEGER NOT NULL REFERENCES Study (study_id),
    pat_id INTEGER NOT NULL REFERENCES Patient (pat_id),
    PRIMARY KEY (study_id, pat_id))""",
}

# --------------------------------------------------------------------------- vocabularies

#: Physician specialties and the share of visits each service sees.
SPECIALTIES: tuple[str, ...] = (
    "Cardiology",
    "Oncology",
    "Neurology",
    "Internal Medicine",
    "Pediatrics",
    "Infectious Disease",
    "Emergency Medicine",
    "Psychiatry",
)
_VISIT_SHARE = np.array([0.22, 0.10, 0.09, 0.20, 0.10, 0.07, 0.14, 0.08])
#: Fewest physicians per specialty, whatever the size (Cardiology needs enough of them for the
#: attending/prescriber contrast of the demo question to show at small sizes).
_MIN_PHYSICIANS = np.array([16, 4, 4, 4, 4, 4, 4, 4])
#: Share of a service's visits that end in an admission (and so a discharge).
_ADMISSION_RATE = np.array([0.30, 0.30, 0.10, 0.12, 0.06, 0.15, 0.35, 0.10])
#: Zipf exponent of prescription signatures within a specialty.
_PRESCRIBER_ZIPF = 2.0

#: (diagnosis, ICD-10 chapter, hivstatus, specialty, medications treating it).
DIAGNOSES: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    ("Atrial fibrillation", "Diseases of the circulatory system", "unknown", "Cardiology",
     ("warfarin", "warfarin", "apixaban", "metoprolol", "amiodarone")),
    ("Essential hypertension", "Diseases of the circulatory system", "unknown", "Cardiology",
     ("lisinopril", "amlodipine", "metoprolol", "hydrochlorothiazide")),
    ("Heart failure", "Diseases of the circulatory system", "unknown", "Cardiology",
     ("furosemide", "metoprolol", "lisinopril", "warfarin")),
    ("Acute myocardial infarction", "Diseases of the circulatory system", "unknown", "Cardiology",
     ("aspirin", "clopidogrel", "atorvastatin", "metoprolol")),
    ("Chronic ischemic heart disease", "Diseases of the circulatory system", "unknown", "Cardiology",
     ("aspirin", "atorvastatin", "metoprolol")),
    ("Deep vein thrombosis", "Diseases of the circulatory system", "unknown", "Cardiology",
     ("warfarin", "warfarin", "apixaban")),
    ("Pulmonary embolism", "Diseases of the circulatory system", "unknown", "Cardiology",
     ("warfarin", "apixaban")),
    ("Malignant neoplasm of breast", "Neoplasms", "unknown", "Oncology", ("tamoxifen", "ondansetron")),
    ("Malignant neoplasm of lung", "Neoplasms", "unknown", "Oncology",
     ("cyclophosphamide", "ondansetron", "prednisone")),
    ("Malignant neoplasm of prostate", "Neoplasms", "unknown", "Oncology", ("bicalutamide", "ondansetron")),
    ("Malignant neoplasm of colon", "Neoplasms", "unknown", "Oncology", ("capecitabine", "ondansetron")),
    ("Non-Hodgkin lymphoma", "Neoplasms", "unknown", "Oncology",
     ("cyclophosphamide", "prednisone", "ondansetron")),
    ("Epilepsy", "Diseases of the nervous system", "unknown", "Neurology", ("levetiracetam", "lamotrigine")),
    ("Migraine", "Diseases of the nervous system", "unknown", "Neurology", ("sumatriptan", "ibuprofen")),
    ("Parkinson disease", "Diseases of the nervous system", "unknown", "Neurology", ("levodopa",)),
    ("Multiple sclerosis", "Diseases of the nervous system", "unknown", "Neurology", ("prednisone",)),
    # Warfarin is also prescribed outside cardiology (cardioembolic stroke), so that the
    # "by cardiologists" filter of the demo question really selects.
    ("Cerebral infarction", "Diseases of the circulatory system", "unknown", "Neurology",
     ("aspirin", "clopidogrel", "atorvastatin", "warfarin", "warfarin")),
    ("Type 2 diabetes mellitus", "Endocrine, nutritional and metabolic diseases", "unknown",
     "Internal Medicine", ("metformin", "atorvastatin")),
    ("Hyperlipidemia", "Endocrine, nutritional and metabolic diseases", "unknown", "Internal Medicine",
     ("atorvastatin",)),
    ("Hypothyroidism", "Endocrine, nutritional and metabolic diseases", "unknown", "Internal Medicine",
     ("levothyroxine",)),
    ("Chronic kidney disease", "Diseases of the genitourinary system", "unknown", "Internal Medicine",
     ("furosemide", "lisinopril")),
    ("Iron deficiency anemia", "Diseases of the blood", "unknown", "Internal Medicine", ("ferrous sulfate",)),
    ("Chronic obstructive pulmonary disease", "Diseases of the respiratory system", "unknown",
     "Internal Medicine", ("prednisone", "azithromycin")),
    ("Acute otitis media", "Diseases of the ear", "unknown", "Pediatrics", ("amoxicillin", "ibuprofen")),
    ("Asthma", "Diseases of the respiratory system", "unknown", "Pediatrics", ("montelukast", "prednisone")),
    ("Acute bronchiolitis", "Diseases of the respiratory system", "unknown", "Pediatrics", ("acetaminophen",)),
    ("Streptococcal pharyngitis", "Diseases of the respiratory system", "unknown", "Pediatrics",
     ("amoxicillin", "acetaminophen")),
    ("Gastroenteritis", "Diseases of the digestive system", "unknown", "Pediatrics", ("ondansetron",)),
    ("HIV disease", "Certain infectious and parasitic diseases", "positive", "Infectious Disease",
     ("dolutegravir", "tenofovir", "emtricitabine")),
    ("Asymptomatic HIV infection status", "Factors influencing health status", "positive",
     "Infectious Disease", ("dolutegravir", "tenofovir")),
    ("HIV screening, negative result", "Factors influencing health status", "negative",
     "Infectious Disease", ()),
    ("Chronic viral hepatitis C", "Certain infectious and parasitic diseases", "unknown",
     "Infectious Disease", ("sofosbuvir",)),
    ("Pulmonary tuberculosis", "Certain infectious and parasitic diseases", "unknown", "Infectious Disease",
     ("isoniazid", "rifampin")),
    ("Sepsis", "Certain infectious and parasitic diseases", "unknown", "Infectious Disease",
     ("ceftriaxone", "acetaminophen")),
    ("Chest pain, unspecified", "Symptoms, signs and abnormal findings", "unknown", "Emergency Medicine",
     ("aspirin", "acetaminophen")),
    ("Fracture of radius", "Injury and poisoning", "unknown", "Emergency Medicine", ("ibuprofen", "acetaminophen")),
    ("Concussion", "Injury and poisoning", "unknown", "Emergency Medicine", ("acetaminophen",)),
    ("Syncope and collapse", "Symptoms, signs and abnormal findings", "unknown", "Emergency Medicine", ()),
    ("Poisoning by opioids", "Injury and poisoning", "unknown", "Emergency Medicine", ("naloxone",)),
    ("Major depressive disorder", "Mental and behavioural disorders", "unknown", "Psychiatry",
     ("sertraline", "fluoxetine")),
    ("Generalized anxiety disorder", "Mental and behavioural disorders", "unknown", "Psychiatry",
     ("sertraline",)),
    ("Bipolar disorder", "Mental and behavioural disorders", "unknown", "Psychiatry", ("lithium", "quetiapine")),
    ("Schizophrenia", "Mental and behavioural disorders", "unknown", "Psychiatry", ("quetiapine",)),
    ("Alcohol dependence", "Mental and behavioural disorders", "unknown", "Psychiatry", ("naltrexone",)),
)

#: Medication -> usual doses in mg.
MEDICATIONS: dict[str, tuple[int, ...]] = {
    "warfarin": (2, 5, 5, 10),
    "apixaban": (5, 5, 10),
    "metoprolol": (25, 50, 100),
    "amiodarone": (200, 400),
    "lisinopril": (10, 20, 40),
    "amlodipine": (5, 10),
    "hydrochlorothiazide": (25,),
    "furosemide": (20, 40, 80),
    "aspirin": (81, 325),
    "clopidogrel": (75,),
    "atorvastatin": (20, 40, 80),
    "tamoxifen": (20,),
    "ondansetron": (4, 8),
    "cyclophosphamide": (500, 750),
    "prednisone": (10, 20, 40),
    "bicalutamide": (50,),
    "capecitabine": (500, 1000),
    "levetiracetam": (500, 1000),
    "lamotrigine": (25, 100),
    "sumatriptan": (50, 100),
    "ibuprofen": (400, 600),
    "levodopa": (100, 250),
    "metformin": (500, 1000),
    "levothyroxine": (1,),
    "ferrous sulfate": (325,),
    "azithromycin": (250, 500),
    "amoxicillin": (250, 500),
    "montelukast": (5, 10),
    "acetaminophen": (500, 1000),
    "dolutegravir": (50,),
    "tenofovir": (300,),
    "emtricitabine": (200,),
    "sofosbuvir": (400,),
    "isoniazid": (300,),
    "rifampin": (600,),
    "ceftriaxone": (1000, 2000),
    "naloxone": (4,),
    "sertraline": (50, 100),
    "fluoxetine": (20, 40),
    "lithium": (300, 600),
    "quetiapine": (100, 200),
    "naltrexone": (50,),
    "omeprazole": (20, 40),
}
#: Drugs any service orders now and then, besides the diagnosis' own.
_GENERAL_DRUGS = ("omeprazole", "acetaminophen")
_GENERAL_SHARE = 0.12

_FIRST_NAMES = (
    "Alex", "Amara", "Ana", "Ben", "Carla", "Chen", "Dana", "David", "Elena", "Emeka", "Farah", "Gabriel",
    "Hana", "Ian", "Ines", "Jamal", "Jin", "Julia", "Karim", "Laura", "Leo", "Maya", "Mateo", "Nadia",
    "Noah", "Olga", "Omar", "Paula", "Priya", "Quinn", "Rosa", "Sam", "Sara", "Tomas", "Uma", "Victor",
    "Wei", "Yara", "Yusuf", "Zoe",
)
_LAST_NAMES = (
    "Adams", "Ahmed", "Alvarez", "Baker", "Brown", "Chen", "Costa", "Dubois", "Evans", "Fischer", "Garcia",
    "Gupta", "Hansen", "Ito", "Jensen", "Kim", "Kowalski", "Lee", "Lopez", "Martin", "Meyer", "Moreau",
    "Nguyen", "Novak", "Okafor", "Olsen", "Patel", "Petrov", "Quinn", "Rossi", "Santos", "Schmidt", "Silva",
    "Smith", "Tanaka", "Taylor", "Torres", "Varga", "Wang", "Weber", "Wilson", "Young",
)
_INSTITUTIONS = (
    "Northfield University", "Lakeside Medical School", "Institute for Health Data Science",
    "Riverside Public Health Agency", "Coastal Cancer Research Centre", "Hillview Clinical Trials Unit",
)
_STUDY_TITLES = (
    "Outcomes of {dx}: a retrospective cohort",
    "Medication adherence in {dx}",
    "Readmission risk after {dx}",
    "Long-term follow-up of patients with {dx}",
)

_FIRST_DAY = int(np.datetime64("2019-01-01", "D").astype(np.int64))
_LAST_DAY = int(np.datetime64("2024-12-31", "D").astype(np.int64))

# --------------------------------------------------------------------------- result


@dataclass(frozen=True)
class DemoInfo:
    """What :func:`create_demo` built."""

    path: Path
    config_path: Path
    patients: int
    seed: int
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "config_path": str(self.config_path),
            "patients": self.patients,
            "seed": self.seed,
            "rows": dict(self.rows),
            "seconds": round(self.seconds, 3),
        }


#: ``progress(step, done, total)``: called once before the first step (done=0) and after each step.
ProgressCallback = Callable[[str, int, int], None]

# --------------------------------------------------------------------------- public API


def demo_config_text(db_file_name: str) -> str:
    """The ``pimento.toml`` written beside a demo database called ``db_file_name``."""
    private = [t for t in TABLES if t not in PUBLIC_TABLES]
    quoted = lambda names: ", ".join(f'"{n}"' for n in names)  # noqa: E731
    return (
        "# Written by `pimento demo create`: the demo hospital (synthetic data, see docs/demo.md).\n"
        "[database]\n"
        f'path = "{db_file_name}"\n'
        "\n"
        "[privacy]\n"
        f"private = [{quoted(private)}]\n"
        f"public = [{quoted(PUBLIC_TABLES)}]\n"
        'root = "Patient"\n'
        "\n"
        "[[constraints.functional_dependencies]]\n"
        'lhs = "DxCategory.diagnosis"\n'
        'rhs = "DxCategory.hivstatus"\n'
        "\n"
        "# `pimento synth`: the staff directory (role, specialty) is public link context, and the\n"
        "# value sets of these columns are public (the formulary and the list of specialties;\n"
        "# departments are modelled like any column); see src/pimento/synth/PRIVACY.md.\n"
        "[synth]\n"
        'link_context = ["Employee.role", "Employee.specialty"]\n'
        'public_values = ["MedicationOrders.medication", "Prescription.medication", "Employee.specialty"]\n'
        + _grouped_config_text()
    )


def _grouped_config_text() -> str:
    """``[bounds]`` and ``[domains]`` of the demo: what its grouped and summed questions may read (docs/grouped.md)."""
    quoted = lambda names: ", ".join(f'"{n}"' for n in names)  # noqa: E731
    departments = (*SPECIALTIES, *(f"{s} Nursing" for s in SPECIALTIES), "Pharmacy", "Administration")
    return (
        "\n"
        "# Grouped and summed answers (docs/grouped.md): the clipping bounds of summed columns, and the\n"
        "# public value sets of group columns of private relations (the complete lists; DxCategory is public;\n"
        "# the formulary is public by the demo's account, as [synth] public_values says).\n"
        "[bounds]\n"
        '"MedicationOrders.dose_mg" = [0, 1000]\n'
        '"Patient.birth_year" = [1900, 2030]\n'
        "\n"
        "[domains]\n"
        '"Patient.sex" = ["F", "M"]\n'
        f'"Employee.role" = [{quoted(("physician", "resident", "nurse", "pharmacist", "admin"))}]\n'
        f'"Employee.specialty" = [{quoted(SPECIALTIES)}]\n'
        f'"Employee.department" = [{quoted(departments)}]\n'
        f'"Visit.diagnosis" = [{quoted(d[0] for d in DIAGNOSES)}]\n'
        f'"MedicationOrders.medication" = [{quoted(MEDICATIONS)}]\n'
        f'"Prescription.medication" = [{quoted(MEDICATIONS)}]\n'
    )


def create_demo(
    path: str | os.PathLike[str],
    *,
    patients: int = 10_000,
    seed: int = 0,
    overwrite: bool = False,
    progress: ProgressCallback | None = None,
) -> DemoInfo:
    """Write the demo hospital database to ``path`` and ``pimento.toml`` beside it.

    Args:
        path: the DuckDB file to create (its folder is created if needed).
        patients: number of patients; every other table scales with it.
        seed: seed of the PCG64 generator; same seed and size give the same database.
        overwrite: replace an existing file (and a different ``pimento.toml`` beside it).
        progress: called as ``progress(step, done, total)`` while building.

    Raises:
        UserError: ``patients`` is not a positive integer, or the files exist and ``overwrite`` is off.
        DataSourceError: the path cannot be written.
    """
    started = time.perf_counter()
    if isinstance(patients, bool) or not isinstance(patients, (int, np.integer)) or patients <= 0:
        raise UserError(f"the number of patients must be a positive integer, not {patients!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise UserError(f"the seed must be a non-negative integer, not {seed!r}")
    patients, seed = int(patients), int(seed)
    target = check_target(path, overwrite=overwrite)
    config_path = target.parent / "pimento.toml"
    config_text = demo_config_text(target.name)

    steps = ("sample", *TABLES)
    if progress is not None:
        progress(steps[0], 0, len(steps))
    data = _sample(patients, seed)
    if progress is not None:
        progress(steps[0], 1, len(steps))

    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    _remove_database_files(tmp)
    rows: dict[str, int] = {}
    try:
        con = duckdb.connect(str(tmp))
        try:
            con.execute(";\n".join(_DDL[t] for t in TABLES))

            def done(table: str) -> None:
                counted = con.cursor().execute(f"SELECT COUNT(*) FROM {table}").fetchone()
                assert counted is not None  # a COUNT(*) always returns one row
                rows[table] = int(counted[0])
                if progress is not None:
                    progress(table, len(rows) + 1, len(steps))

            _load_all(con, data, done)
            con.execute("CHECKPOINT")
        finally:
            con.close()
        rows = {t: rows[t] for t in TABLES}
        if overwrite:
            _remove_database_files(target)
        os.replace(tmp, target)
        config_path.write_text(config_text, encoding="utf-8")
    except (OSError, duckdb.IOException) as exc:
        raise DataSourceError(f"cannot write the demo database {target}: {exc}") from exc
    finally:
        _remove_database_files(tmp)
    return DemoInfo(target, config_path, patients, seed, rows, time.perf_counter() - started)


# --------------------------------------------------------------------------- files


def check_target(path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Check that a demo database can be written at ``path`` (creating its folder); return the path.

    Raises:
        UserError: the database (or a different pimento.toml beside it) exists and ``overwrite`` is off.
        DataSourceError: the path is a directory, lies under a file, or its folder is not writable.
    """
    target = Path(path).expanduser()
    config_path = target.parent / "pimento.toml"
    config_text = demo_config_text(target.name)
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise DataSourceError(f"cannot write {target}: {parent} is a file, not a folder")
            break
    if target.is_dir():
        raise DataSourceError(f"{target} is a directory", hint="give the path of a database file, e.g. demo/hospital.duckdb")
    if target.exists() and not overwrite:
        raise UserError(f"{target} already exists", hint="pass --force (overwrite=True) to replace it, or choose another path")
    if config_path.is_dir():
        raise DataSourceError(f"{config_path} is a directory; the demo writes its settings there")
    if config_path.exists() and not overwrite and config_path.read_text(encoding="utf-8") != config_text:
        raise UserError(
            f"{config_path} already exists with other settings",
            hint="choose another folder, or replace it with `pimento demo create --force` (overwrite=True)",
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataSourceError(f"cannot create the folder {target.parent}: {exc.strerror or exc}") from exc
    if not os.access(target.parent, os.W_OK):
        raise DataSourceError(f"the folder {target.parent} is not writable")
    return target


def _remove_database_files(path: Path) -> None:
    for candidate in (path, path.with_name(path.name + ".wal")):
        try:
            candidate.unlink()
        except FileNotFoundError:
            pass


# --------------------------------------------------------------------------- sampling


@dataclass(frozen=True)
class _Cat:
    """A text column as integer codes into a vocabulary (decoded in SQL: numpy strings load slowly)."""

    codes: np.ndarray
    vocab: tuple[str, ...]

    def __post_init__(self) -> None:
        if any("\x1f" in v for v in self.vocab):
            raise InternalError("a demo vocabulary entry contains the separator \\x1f")

    @staticmethod
    def of(values: np.ndarray | list[str]) -> _Cat:
        vocab, codes = np.unique(np.asarray(values, dtype=str), return_inverse=True)
        return _Cat(codes.astype(np.int64), tuple(str(v) for v in vocab))


@dataclass(frozen=True)
class _Days:
    """A DATE column as days since 1970-01-01."""

    days: np.ndarray


_FULL_NAMES = tuple(f"{first} {last}" for first in _FIRST_NAMES for last in _LAST_NAMES)


def _names(rng: np.random.Generator, n: int, prefix: str = "") -> _Cat:
    vocab = tuple(prefix + name for name in _FULL_NAMES)
    return _Cat(rng.integers(0, len(vocab), n), vocab)


def _pick(rng: np.random.Generator, cumulative: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For each i, a column index drawn from the distribution whose CDF is ``cumulative[rows[i]]``."""
    u = rng.random(len(rows))
    # The number of CDF entries below u, one CDF (a non-decreasing row) at a time: the same
    # draw as comparing every row with its CDF at once, without a rows x width matrix (which
    # needed 40 GB at 1,000,000 patients).
    out = np.zeros(len(rows), dtype=np.int64)
    for r in np.unique(rows):
        sel = np.flatnonzero(rows == r)
        out[sel] = np.searchsorted(cumulative[r], u[sel], side="left")
    return np.minimum(out, cumulative.shape[1] - 1)


def _rank_within(groups: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """0-based rank of each element among those of its group, ordered by ``keys``."""
    order = np.lexsort((keys, groups))
    sorted_groups = groups[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_groups)) + 1]
    counts = np.diff(np.r_[starts, len(groups)])
    rank_sorted = np.arange(len(groups)) - np.repeat(starts, counts)
    ranks = np.empty(len(groups), dtype=np.int64)
    ranks[order] = rank_sorted
    return ranks


def _sample(n_pat: int, seed: int) -> dict[str, Columns]:
    """Every table as a dict of numpy columns (plus a few staging arrays)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    n_spec = len(SPECIALTIES)
    out: dict[str, Columns] = {}

    # Patients -------------------------------------------------------------
    pat_ids = np.arange(1, n_pat + 1, dtype=np.int64)
    zip3s = tuple(f"{z:03d}" for z in rng.choice(np.arange(100, 1000), size=60, replace=False))
    out["Patient"] = {
        "pat_id": pat_ids,
        "name": _names(rng, n_pat),
        "birth_year": rng.integers(1930, 2021, n_pat),
        "sex": _Cat(rng.integers(0, 2, n_pat), ("F", "M")),
        "zip3": _Cat(np.minimum(rng.zipf(1.3, n_pat) - 1, len(zip3s) - 1), zip3s),
    }
    # Each patient has a usual service; most visits go there.
    pat_spec = rng.choice(n_spec, size=n_pat, p=_VISIT_SHARE)

    # Staff ----------------------------------------------------------------
    staff_unit = n_pat / 50
    phys_per_spec = np.maximum(_MIN_PHYSICIANS, np.round(0.35 * staff_unit * _VISIT_SHARE).astype(np.int64))
    n_res = max(8, round(0.15 * staff_unit))
    n_nurse = max(12, round(0.35 * staff_unit))
    n_pharm = max(3, round(0.07 * staff_unit))
    n_admin = max(3, round(0.08 * staff_unit))
    phys_spec = np.repeat(np.arange(n_spec), phys_per_spec)
    res_spec = rng.choice(n_spec, size=n_res, p=_VISIT_SHARE)
    res_spec[: min(n_res, n_spec)] = np.arange(min(n_res, n_spec))
    n_phys = len(phys_spec)
    roles = np.concatenate([
        np.full(n_phys, "physician"), np.full(n_res, "resident"), np.full(n_nurse, "nurse"),
        np.full(n_pharm, "pharmacist"), np.full(n_admin, "admin"),
    ]).astype(object)
    spec_idx = np.concatenate([phys_spec, res_spec, np.full(n_nurse + n_pharm + n_admin, -1)])
    # Shuffle so that employee ids do not reveal the role.
    perm = rng.permutation(len(roles))
    roles, spec_idx = roles[perm], spec_idx[perm]
    n_emp = len(roles)
    emp_ids = np.arange(1, n_emp + 1, dtype=np.int64)
    spec_names = np.asarray(SPECIALTIES, dtype=object)
    specialty = spec_names[np.maximum(spec_idx, 0)]
    nurse_wards = np.asarray([f"{s} Nursing" for s in SPECIALTIES], dtype=object)
    department = np.where(
        spec_idx >= 0,
        specialty,
        np.where(roles == "nurse", nurse_wards[rng.integers(0, n_spec, n_emp)],
                 np.where(roles == "pharmacist", "Pharmacy", "Administration")),
    )
    out["Employee"] = {
        "employee_id": emp_ids,
        "name": _names(rng, n_emp),
        "role": _Cat.of(roles),
        "specialty": _Cat(spec_idx, SPECIALTIES),
        "department": _Cat.of(department),
    }
    is_phys = roles == "physician"
    # Physicians of each specialty; the first ones in a random order are the service's senior
    # physicians, who sign most of its prescriptions (Zipf weights by that rank).
    phys_by_spec = [rng.permutation(emp_ids[is_phys & (spec_idx == s)]) for s in range(n_spec)]
    res_by_spec = [emp_ids[(roles == "resident") & (spec_idx == s)] for s in range(n_spec)]
    nurses = emp_ids[roles == "nurse"]
    pharmacists = emp_ids[roles == "pharmacist"]

    # Diagnoses ------------------------------------------------------------
    dx_names = np.array([d[0] for d in DIAGNOSES])
    dx_vocab = tuple(str(d) for d in dx_names)
    dx_spec = np.array([SPECIALTIES.index(d[3]) for d in DIAGNOSES])
    out["DxCategory"] = {
        "diagnosis": _Cat.of(dx_names),
        "category": _Cat.of([d[1] for d in DIAGNOSES]),
        "hivstatus": _Cat.of([d[2] for d in DIAGNOSES]),
    }
    dx_of_spec = [np.flatnonzero(dx_spec == s) for s in range(n_spec)]
    # Within a service, diagnoses have unequal frequencies (fixed, not seeded: part of the vocabulary).
    dx_cdf = np.zeros((n_spec, len(DIAGNOSES)))
    for s, g in enumerate(dx_of_spec):
        w = np.zeros(len(DIAGNOSES))
        w[g] = 1.0 / np.arange(1, len(g) + 1) ** 0.7
        dx_cdf[s] = np.cumsum(w / w.sum())
    pat_dx = _pick(rng, dx_cdf, pat_spec)

    # Visits ---------------------------------------------------------------
    visits_per_pat = rng.geometric(1 / 3, n_pat)
    n_vis = int(visits_per_pat.sum())
    v_pat_idx = np.repeat(np.arange(n_pat), visits_per_pat)
    usual = rng.random(n_vis) < 0.75
    v_spec = np.where(usual, pat_spec[v_pat_idx], rng.choice(n_spec, size=n_vis, p=_VISIT_SHARE))
    v_dx = np.where(usual & (rng.random(n_vis) < 0.7), pat_dx[v_pat_idx], _pick(rng, dx_cdf, v_spec))
    v_date = rng.integers(_FIRST_DAY, _LAST_DAY + 1, n_vis)
    # Visit ids follow the patient, then the date: rows referencing a patient arrive in key order,
    # which makes DuckDB's foreign-key checks several times faster than random order.
    order = np.lexsort((v_date, v_pat_idx))
    v_pat_idx, v_spec, v_dx, v_date = v_pat_idx[order], v_spec[order], v_dx[order], v_date[order]
    visit_ids = np.arange(1, n_vis + 1, dtype=np.int64)
    # Attendings: balanced over the physicians of the visit's service (round robin over a shuffle).
    v_rank = _rank_within(v_spec, rng.random(n_vis))
    offsets = rng.integers(0, 1 << 30, n_spec)
    attending = np.empty(n_vis, dtype=np.int64)
    for s in range(n_spec):
        mask = v_spec == s
        pool = phys_by_spec[s]
        attending[mask] = pool[(v_rank[mask] + offsets[s]) % len(pool)]

    # Medication orders ----------------------------------------------------
    med_names = list(MEDICATIONS)
    med_index = {m: i for i, m in enumerate(med_names)}
    med_cdf = np.zeros((len(DIAGNOSES), len(med_names)))
    for d, (_, _, _, _, drugs) in enumerate(DIAGNOSES):
        w = np.zeros(len(med_names))
        for m in drugs:
            w[med_index[m]] += 1.0
        general = _GENERAL_SHARE if drugs else 1.0
        base = w.sum()
        if base:
            w *= (1 - general) / base
        for m in _GENERAL_DRUGS:
            w[med_index[m]] += general / len(_GENERAL_DRUGS)
        med_cdf[d] = np.cumsum(w)
    no_drugs = np.array([len(d[4]) == 0 for d in DIAGNOSES])
    n_orders_v = rng.choice(5, size=n_vis, p=[0.2, 0.3, 0.25, 0.15, 0.1])
    n_orders_v[no_drugs[v_dx]] = np.minimum(n_orders_v[no_drugs[v_dx]], 1)
    o_visit_idx = np.repeat(np.arange(n_vis), n_orders_v)
    o_med = _pick(rng, med_cdf, v_dx[o_visit_idx])
    # One order per (visit, medication).
    _, first = np.unique(o_visit_idx * len(med_names) + o_med, return_index=True)
    first.sort()
    o_visit_idx, o_med = o_visit_idx[first], o_med[first]
    n_ord = len(o_visit_idx)
    order_ids = np.arange(1, n_ord + 1, dtype=np.int64)
    dose_options = [np.asarray(MEDICATIONS[m]) for m in med_names]
    max_doses = max(len(x) for x in dose_options)
    dose_table = np.array([np.resize(x, max_doses) for x in dose_options])
    o_dose = dose_table[o_med, rng.integers(0, max_doses, n_ord)]
    o_pat = pat_ids[v_pat_idx[o_visit_idx]]
    med_vocab = tuple(med_names)
    out["MedicationOrders"] = {
        "order_id": order_ids,
        "visit_id": visit_ids[o_visit_idx],
        "pat_id": o_pat,
        "medication": _Cat(o_med, med_vocab),
        "dose_mg": o_dose.astype(np.int64),
    }

    # Prescriptions: one per order, signed by a physician of the attending's specialty, heavy-tailed.
    o_spec = v_spec[o_visit_idx]
    max_pool = max(len(p) for p in phys_by_spec)
    zipf = 1.0 / np.arange(1, max_pool + 1) ** _PRESCRIBER_ZIPF
    sign_cdf = np.zeros((n_spec, max_pool))
    for s, pool in enumerate(phys_by_spec):
        w = np.zeros(max_pool)
        w[: len(pool)] = zipf[: len(pool)]
        sign_cdf[s] = np.cumsum(w / w.sum())
    signer_rank = _pick(rng, sign_cdf, o_spec)
    pools = np.zeros((n_spec, max_pool), dtype=np.int64)
    for s, pool in enumerate(phys_by_spec):
        pools[s, : len(pool)] = pool
    prescriber = pools[o_spec, signer_rank]
    issued = v_date[o_visit_idx] + rng.choice(3, size=n_ord, p=[0.7, 0.2, 0.1])
    # Prescription i is the signature of order i (ids in key order, see the visits above).
    out["Prescription"] = {
        "prescription_id": np.arange(1, n_ord + 1, dtype=np.int64),
        "order_id": order_ids,
        "pat_id": o_pat,
        "prescriber_id": prescriber,
        "medication": _Cat(o_med, med_vocab),
        "issued": _Days(issued),
    }

    # Notes (assembled in SQL from the orders): a template and a follow-up interval per visit.
    out["_visit"] = {
        "visit_id": visit_ids,
        "pat_id": pat_ids[v_pat_idx],
        "attending_id": attending,
        "visit_date": _Days(v_date),
        "diagnosis": _Cat(v_dx, dx_vocab),
        "template": rng.integers(0, 4, n_vis),
        "weeks": rng.choice(np.array([1, 2, 4, 6, 12]), size=n_vis),
    }

    # Discharges -----------------------------------------------------------
    admitted = np.flatnonzero(rng.random(n_vis) < _ADMISSION_RATE[v_spec])
    n_dis = len(admitted)
    final_dx = np.where(
        rng.random(n_dis) < 0.85, v_dx[admitted], _pick(rng, dx_cdf, v_spec[admitted])
    )
    out["Discharge"] = {
        "discharge_id": np.arange(1, n_dis + 1, dtype=np.int64),
        "visit_id": visit_ids[admitted],
        "pat_id": pat_ids[v_pat_idx[admitted]],
        "finaldiagnosis": _Cat(final_dx, dx_vocab),
        "discharge_date": _Days(v_date[admitted] + 1 + rng.geometric(0.25, n_dis)),
    }

    # Treating relationships: attendings of a patient's visits, plus consultants.
    n_cons = int(round(0.2 * n_pat))
    cons_pat = rng.choice(n_pat, size=n_cons, replace=False) if n_cons else np.zeros(0, dtype=np.int64)
    all_phys = np.concatenate(phys_by_spec)
    cons_emp = all_phys[rng.integers(0, len(all_phys), n_cons)]
    tr_emp = np.concatenate([attending, cons_emp])
    tr_pat = np.concatenate([pat_ids[v_pat_idx], pat_ids[cons_pat]])
    tr_role = np.concatenate([np.zeros(n_vis, dtype=np.int64), np.ones(n_cons, dtype=np.int64)])
    key = tr_pat * (n_emp + 1) + tr_emp
    _, first = np.unique(key, return_index=True)  # attending wins over consulting (listed first)
    out["TreatingRelationship"] = {
        "employee_id": tr_emp[first],
        "pat_id": tr_pat[first],
        "role": _Cat(tr_role[first], ("attending", "consulting")),
    }

    # Supervision: the senior physician of each service supervises a few colleagues, who (with the
    # senior) supervise the residents of the service; so senior -> physician -> resident chains exist.
    sup: list[tuple[int, int]] = []
    for s in range(n_spec):
        pool = phys_by_spec[s]
        chief, others = pool[0], pool[1:]
        juniors = others[: max(1, min(4, len(others)))]
        sup.extend((int(chief), int(j)) for j in juniors)
        mentors = juniors if len(juniors) else pool[:1]
        for r in res_by_spec[s]:
            first_mentor = mentors[rng.integers(0, len(mentors))]
            sup.append((int(first_mentor), int(r)))
            if rng.random() < 0.3:
                second = pool[rng.integers(0, len(pool))]
                if second != first_mentor:
                    sup.append((int(second), int(r)))
    sup_arr = np.unique(np.array(sup, dtype=np.int64), axis=0)
    out["Supervises"] = {"supervisor_id": sup_arr[:, 0], "supervisee_id": sup_arr[:, 1]}

    # Care teams: a service's physicians, residents, nurses and a pharmacist; patients assigned by service.
    n_teams = max(n_spec, n_phys // 3)
    team_spec = np.arange(n_teams) % n_spec
    members: list[tuple[int, int]] = []
    for t in range(n_teams):
        s = int(team_spec[t])
        pool = phys_by_spec[s]
        members.extend((int(e), t + 1) for e in rng.choice(pool, size=min(2, len(pool)), replace=False))
        if len(res_by_spec[s]) and rng.random() < 0.7:
            members.append((int(res_by_spec[s][rng.integers(0, len(res_by_spec[s]))]), t + 1))
        members.extend((int(e), t + 1) for e in rng.choice(nurses, size=min(2, len(nurses)), replace=False))
        if rng.random() < 0.5:
            members.append((int(pharmacists[rng.integers(0, len(pharmacists))]), t + 1))
    mem_arr = np.unique(np.array(members, dtype=np.int64), axis=0)
    out["CareTeamMember"] = {"employee_id": mem_arr[:, 0], "team_id": mem_arr[:, 1]}
    teams_of_spec = [np.flatnonzero(team_spec == s) + 1 for s in range(n_spec)]
    teams_per_spec = np.array([len(t) for t in teams_of_spec])
    team_table = np.zeros((n_spec, teams_per_spec.max()), dtype=np.int64)
    for s, teams in enumerate(teams_of_spec):
        team_table[s, : len(teams)] = teams
    home_team = team_table[pat_spec, rng.integers(0, 1 << 30, n_pat) % teams_per_spec[pat_spec]]
    extra = np.flatnonzero(rng.random(n_pat) < 0.2)
    ta_team = np.concatenate([home_team, rng.integers(1, n_teams + 1, len(extra))])
    ta_pat = np.concatenate([pat_ids, pat_ids[extra]])
    ta = np.unique(np.stack([ta_pat, ta_team], axis=1), axis=0)[:, ::-1]
    out["TeamAssignment"] = {"team_id": ta[:, 0], "pat_id": ta[:, 1]}

    # Researchers, studies, enrolled patients ------------------------------
    n_researchers = max(5, n_pat // 2000)
    out["Researcher"] = {
        "researcher_id": np.arange(1, n_researchers + 1, dtype=np.int64),
        "name": _names(rng, n_researchers, prefix="Dr. "),
        "institution": _Cat(rng.integers(0, len(_INSTITUTIONS), n_researchers), _INSTITUTIONS),
    }
    n_studies = max(8, n_pat // 1000)
    study_dx = rng.integers(0, len(DIAGNOSES), n_studies)
    titles = [
        _STUDY_TITLES[int(rng.integers(0, len(_STUDY_TITLES)))].format(dx=DIAGNOSES[d][0].lower())
        for d in study_dx
    ]
    out["Study"] = {
        "study_id": np.arange(1, n_studies + 1, dtype=np.int64),
        "researcher_id": rng.integers(1, n_researchers + 1, n_studies),
        "title": _Cat.of(titles),
        "approved": rng.random(n_studies) < 0.6,
    }
    sp_study: list[np.ndarray] = []
    sp_pat: list[np.ndarray] = []
    visit_pat = pat_ids[v_pat_idx]
    for i, d in enumerate(study_dx):
        cohort = np.unique(visit_pat[v_dx == d])
        take = min(len(cohort), max(1, int(0.3 * len(cohort))), 2000)
        if len(cohort) == 0:
            continue
        chosen = np.sort(rng.choice(cohort, size=take, replace=False))
        sp_study.append(np.full(take, i + 1, dtype=np.int64))
        sp_pat.append(chosen)
    out["StudyPatient"] = {
        "study_id": np.concatenate(sp_study) if sp_study else np.zeros(0, dtype=np.int64),
        "pat_id": np.concatenate(sp_pat) if sp_pat else np.zeros(0, dtype=np.int64),
    }
    return out


# --------------------------------------------------------------------------- loading

Columns = dict[str, "np.ndarray | _Cat | _Days"]


def _decode(columns: Columns, source: str) -> tuple[str, dict[str, np.ndarray], list[Any]]:
    """``SELECT`` list decoding ``columns`` from the registered relation ``source``, its arrays, its parameters."""
    exprs: list[str] = []
    arrays: dict[str, np.ndarray] = {}
    params: list[Any] = []
    for name, value in columns.items():
        if isinstance(value, _Cat):
            arrays[name] = value.codes
            # One string parameter split once (constant-folded): binding a Python list is far slower.
            exprs.append(
                f"CASE WHEN {source}.{name} >= 0 THEN string_split(?, chr(31))[{source}.{name} + 1] END AS {name}"
            )
            params.append(_SEPARATOR.join(value.vocab))
        elif isinstance(value, _Days):
            arrays[name] = value.days
            exprs.append(f"DATE '1970-01-01' + CAST({source}.{name} AS INTEGER) AS {name}")
        else:
            arrays[name] = value
            exprs.append(f"{source}.{name}")
    return ", ".join(exprs), arrays, params


_SEPARATOR = "\x1f"  # ASCII unit separator: in no vocabulary entry (checked in _Cat)


_NOTE = """
    CASE v.template
        WHEN 0 THEN 'Seen for ' || v.diagnosis || '. '
            || coalesce('Ordered ' || m.list || '.', 'No medication changes.')
            || ' Follow-up in ' || v.weeks || ' weeks.'
        WHEN 1 THEN 'Patient reports symptoms consistent with ' || lower(v.diagnosis)
            || '. Plan: ' || coalesce(m.list, 'observation') || '.'
        WHEN 2 THEN 'Assessment: ' || v.diagnosis || '. Medications: ' || coalesce(m.list, 'none')
            || '. Return if symptoms worsen.'
        ELSE 'Follow-up visit for ' || v.diagnosis || '; '
            || coalesce('continue ' || m.list, 'no medications') || '. Next review in '
            || v.weeks || ' weeks.'
    END"""


#: Tables each table's foreign keys point to (a table is loaded once these are).
_DEPENDS: dict[str, tuple[str, ...]] = {
    "Patient": (),
    "Employee": (),
    "DxCategory": (),
    "Visit": ("Patient", "Employee", "DxCategory"),
    "MedicationOrders": ("Visit",),
    "Prescription": ("MedicationOrders",),
    "Discharge": ("Visit",),
    "TreatingRelationship": ("Patient", "Employee"),
    "Supervises": ("Employee",),
    "CareTeamMember": ("Employee",),
    "TeamAssignment": ("Patient",),
    "Researcher": (),
    "Study": ("Researcher",),
    "StudyPatient": ("Study", "Patient"),
}
#: Load order among the ready tables: the long chain Visit -> MedicationOrders -> Prescription first.
_PRIORITY = ("Patient", "Employee", "DxCategory", "Visit", "MedicationOrders", "Prescription")


def _load_all(
    con: duckdb.DuckDBPyConnection, data: dict[str, Columns], done: Callable[[str], None], workers: int = 2
) -> None:
    """Load every table, two at a time where foreign keys allow (each load is one transaction)."""

    def priority(table: str) -> tuple[int, int]:
        return (_PRIORITY.index(table) if table in _PRIORITY else len(_PRIORITY), TABLES.index(table))

    def task(table: str) -> str:
        cursor = con.cursor()
        try:
            _load(cursor, table, data)
        finally:
            cursor.close()
        return table

    finished: set[str] = set()
    running: dict[Future[str], str] = {}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pimento-demo") as pool:
        while len(finished) < len(TABLES):
            started = finished | set(running.values())
            ready = sorted((t for t in TABLES if t not in started and set(_DEPENDS[t]) <= finished), key=priority)
            for table in ready[: workers - len(running)]:
                running[pool.submit(task, table)] = table
            completed, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in completed:
                table = running.pop(future)
                future.result()
                finished.add(table)
                done(table)


def _load(con: duckdb.DuckDBPyConnection, table: str, data: dict[str, Columns]) -> None:
    """Bulk-insert one table from numpy columns (DuckDB scans a dict of numpy arrays directly)."""
    if table == "Visit":
        visit_select, visit_arrays, visit_params = _decode(data["_visit"], "_visit")
        order_select, order_arrays, order_params = _decode(data["MedicationOrders"], "_orders")
        sql = f"""
            INSERT INTO Visit
            WITH v AS (SELECT {visit_select} FROM _visit),
                 o AS (SELECT {order_select} FROM _orders),
                 m AS (SELECT visit_id, string_agg(medication || ' ' || dose_mg || ' mg', ', ' ORDER BY order_id)
                       AS list FROM o GROUP BY visit_id)
            SELECT v.visit_id, v.pat_id, v.attending_id, v.visit_date, v.diagnosis, {_NOTE}
            FROM v LEFT JOIN m USING (visit_id) ORDER BY v.visit_id"""
        con.register("_visit", visit_arrays)
        con.register("_orders", order_arrays)
        try:
            con.execute(sql, visit_params + order_params)
        finally:
            con.unregister("_visit")
            con.unregister("_orders")
        return
    select, arrays, params = _decode(data[table], "_src")
    con.register("_src", arrays)
    try:
        con.execute(f"INSERT INTO {table} SELECT {select} FROM _src", params)
    finally:
        con.unregister("_src")
