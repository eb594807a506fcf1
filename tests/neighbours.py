"""The neighbour-invariance harness: run the same request on a database D and on a neighbour D'.

Two databases are neighbours when they differ by one tuple of one private relation, added or
removed (the privacy unit of the DP release path), or, for releases under the change or both
neighbourhoods (``[release] neighbours``, ``--neighbours``), one tuple changed in place
(``neighbours(..., kinds=("change",))``). Every field an analyst receives must then be
the same on D and on D', with the noise source fixed, except the noisy value, what is derived
from it, and the draws of separately charged DP releases (the DP upper bound on RS). A field
that changes with the neighbour outside that allow-list is a function of the private data that
no mechanism protects: finding 1 of issue 18 (the exact RS printed with every answer) is one.

The harness is engine-agnostic and path-agnostic: a test gives it

* two databases, as :class:`Clinic` values (small DuckDB files are written from them),
* ``run(db_path, rng) -> dict``: the request under test, returning what the analyst receives
  (``Session.release_sql(...).to_dict()``, ``pimento sql --json`` parsed, an error turned into
  ``{"error": ..., "message": ...}`` by :func:`outcome`, the CLI's text by :func:`cli_text`),
* an allow-list of field paths (``fnmatch`` patterns over dotted paths such as
  ``interval.0`` or ``search.alternatives.3.sql``) that may differ.

Each database is written at the SAME path in a fresh directory, so its ledger (kept beside it)
is fresh and paths that appear in messages are identical. The noise source is a
``random.Random(seed)`` passed in as ``rng``, which a Session run sets with
``pimento.mechanisms.samplers.fixed_noise_for_tests(rng)`` (no release path takes a noise source);
for the CLI and the service, :func:`fixed_noise` makes every release draw from a fresh generator
seeded with ``seed``.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import random
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
from hypothesis import HealthCheck, Phase, assume, settings
from hypothesis import strategies as st


def few_examples(n: int, *, filter_too_much: bool = False) -> settings:
    """Hypothesis settings for examples that each write databases and run releases: ``n`` examples,
    no deadline, no shrinking (a failure prints its D and D' already small)."""
    checks = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
    if filter_too_much:
        checks.append(HealthCheck.filter_too_much)
    return settings(max_examples=n, deadline=None, phases=(Phase.explicit, Phase.reuse, Phase.generate), suppress_health_check=checks)


__all__ = [
    "ADD_REMOVE",
    "CHANGE",
    "Clinic",
    "DIAGNOSES",
    "VALUE_FIELDS",
    "few_examples",
    "HARNESS_DATABASE_KEY",
    "write_deployment",
    "assert_neighbour_invariant",
    "cli_json",
    "cli_text",
    "clinics",
    "differences",
    "drop_timings",
    "fixed_noise",
    "flatten",
    "mask_numbers",
    "neighbours",
    "outcome",
    "person_neighbours",
    "without_person",
    "run_pair",
]

# --------------------------------------------------------------------------------------
# A small private database: Patient <- Visit <- Prescription (keys and foreign keys)
# --------------------------------------------------------------------------------------

DIAGNOSES = ("flu", "hiv", "asthma")
DRUGS = ("warfarin", "insulin")

#: name -> (DDL, key column, {FK column: parent relation})
SCHEMA: dict[str, tuple[str, str, dict[str, str]]] = {
    "Patient": (
        "CREATE TABLE Patient (pat_id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, birth_year INTEGER NOT NULL)",
        "pat_id",
        {},
    ),
    "Visit": (
        "CREATE TABLE Visit (visit_id INTEGER PRIMARY KEY, pat_id INTEGER NOT NULL REFERENCES Patient(pat_id), "
        "diagnosis VARCHAR NOT NULL)",
        "visit_id",
        {"pat_id": "Patient"},
    ),
    "Prescription": (
        "CREATE TABLE Prescription (rx_id INTEGER PRIMARY KEY, visit_id INTEGER NOT NULL REFERENCES Visit(visit_id), "
        "drug VARCHAR NOT NULL)",
        "rx_id",
        {"visit_id": "Visit"},
    ),
}
ORDER = ("Patient", "Visit", "Prescription")  # parents before children
COLUMNS = {"Patient": ("pat_id", "name", "birth_year"), "Visit": ("visit_id", "pat_id", "diagnosis"), "Prescription": ("rx_id", "visit_id", "drug")}


@dataclass(frozen=True)
class Clinic:
    """Rows of the three relations, as tuples in :data:`COLUMNS` order."""

    rows: dict[str, tuple[tuple[Any, ...], ...]] = field(default_factory=dict)

    def table(self, name: str) -> tuple[tuple[Any, ...], ...]:
        return self.rows.get(name, ())

    def referenced(self, name: str) -> set[Any]:
        """Keys of ``name`` that some child row references."""
        out: set[Any] = set()
        for child in ORDER:
            for column, parent in SCHEMA[child][2].items():
                if parent == name:
                    i = COLUMNS[child].index(column)
                    out.update(r[i] for r in self.table(child))
        return out

    def with_row(self, name: str, row: tuple[Any, ...]) -> Clinic:
        return Clinic({**self.rows, name: (*self.table(name), row)})

    def without_row(self, name: str, row: tuple[Any, ...]) -> Clinic:
        rows = list(self.table(name))
        rows.remove(row)
        return Clinic({**self.rows, name: tuple(rows)})

    def _load(self, con: duckdb.DuckDBPyConnection) -> None:
        """Create the tables in ``con`` and insert this database's rows."""
        for name in ORDER:
            con.execute(SCHEMA[name][0])
            if self.table(name):
                marks = ", ".join("?" for _ in COLUMNS[name])
                con.executemany(f"INSERT INTO {name} VALUES ({marks})", [list(r) for r in self.table(name)])

    def write(self, path: Path) -> Path:
        con = duckdb.connect(str(path))
        try:
            self._load(con)
        finally:
            con.close()
        return path

    def count(self, sql: str) -> int:
        """The exact answer of ``sql`` on this database (for tests that need the true count)."""
        con = duckdb.connect(":memory:")
        try:
            self._load(con)
            return int(con.execute(sql).fetchone()[0])
        finally:
            con.close()


_NAMES = ("Ana Baker", "Bo Chen", "Cy Diaz", "Di Evans", "Ed Fox", "Flo Gray", "Gus Hill", "Hal Ito")


@st.composite
def clinics(draw: Any, *, min_patients: int = 2, max_patients: int = 6, max_visits: int = 10, max_prescriptions: int = 6) -> Clinic:
    """A small clinic: patients, their visits (diagnosis from :data:`DIAGNOSES`) and prescriptions."""
    n = draw(st.integers(min_patients, max_patients))
    patients = tuple((i + 1, _NAMES[i % len(_NAMES)], draw(st.integers(1930, 2010))) for i in range(n))
    visit_owners = draw(st.lists(st.integers(1, n), max_size=max_visits))
    visits = tuple((100 + j, pat, draw(st.sampled_from(DIAGNOSES))) for j, pat in enumerate(visit_owners))
    rx: tuple[tuple[Any, ...], ...] = ()
    if visits:
        owners = draw(st.lists(st.sampled_from([v[0] for v in visits]), max_size=max_prescriptions))
        rx = tuple((1000 + j, v, draw(st.sampled_from(DRUGS))) for j, v in enumerate(owners))
    return Clinic({"Patient": patients, "Visit": visits, "Prescription": rx})


#: The edits of :func:`neighbours`: add/remove neighbours (the default) and change neighbours.
ADD_REMOVE = ("add", "remove")
CHANGE = ("change",)


def _draw_row(draw: Any, clinic: Clinic, name: str, key_value: Any) -> tuple[Any, ...]:
    """A row of ``name`` with key ``key_value``, existing parents, other values from their domains."""
    values: list[Any] = []
    for column in COLUMNS[name]:
        if column == SCHEMA[name][1]:
            values.append(key_value)
        elif column in SCHEMA[name][2]:
            parent = SCHEMA[name][2][column]
            pkey = COLUMNS[parent].index(SCHEMA[parent][1])
            values.append(draw(st.sampled_from(sorted(r[pkey] for r in clinic.table(parent)))))
        elif column == "name":
            values.append(draw(st.sampled_from(_NAMES)))
        elif column == "birth_year":
            values.append(draw(st.integers(1930, 2010)))
        elif column == "diagnosis":
            values.append(draw(st.sampled_from(DIAGNOSES)))
        elif column == "drug":
            values.append(draw(st.sampled_from(DRUGS)))
    return tuple(values)


@st.composite
def neighbours(draw: Any, clinic: Clinic, *, relations: tuple[str, ...] = ORDER,
               kinds: tuple[str, ...] = ADD_REMOVE) -> tuple[str, Clinic]:
    """One tuple of one private relation added or removed (``kinds`` ``ADD_REMOVE``, the default) or
    changed in place (``CHANGE``; both: ``ADD_REMOVE + CHANGE``), keys and foreign keys kept valid.

    A removal takes only a tuple that no other tuple references (no cascade: D' is D minus
    exactly one tuple); an addition takes a fresh key and references existing parents. A change
    keeps the number of tuples: it redraws a tuple's other values (its foreign keys among existing
    parents) and, when no tuple references it, possibly its key (a fresh one).
    Returns a description (for failure messages) and D'.
    """
    unknown = set(kinds) - set(ADD_REMOVE + CHANGE)
    if unknown or not kinds:
        raise ValueError(f"kinds must be among {ADD_REMOVE + CHANGE}, got {kinds!r}")
    moves: list[tuple[str, str]] = []
    for name in relations:
        parents_ok = all(clinic.table(parent) for parent in SCHEMA[name][2].values())
        if parents_ok and "add" in kinds:
            moves.append(("add", name))
        referenced = clinic.referenced(name)
        key = COLUMNS[name].index(SCHEMA[name][1])
        if any(r[key] not in referenced for r in clinic.table(name)) and "remove" in kinds:
            moves.append(("remove", name))
        if clinic.table(name) and "change" in kinds:
            moves.append(("change", name))
    assume(moves)
    kind, name = draw(st.sampled_from(moves))
    key = COLUMNS[name].index(SCHEMA[name][1])
    fresh = max((r[key] for r in clinic.table(name)), default={"Patient": 0, "Visit": 99, "Prescription": 999}[name]) + 1
    if kind == "remove":
        referenced = clinic.referenced(name)
        row = draw(st.sampled_from([r for r in clinic.table(name) if r[key] not in referenced]))
        return f"remove {name}{row}", clinic.without_row(name, row)
    if kind == "change":
        old = draw(st.sampled_from(list(clinic.table(name))))
        movable = old[key] not in clinic.referenced(name)
        new_key = draw(st.sampled_from([old[key], fresh])) if movable else old[key]
        row = _draw_row(draw, clinic, name, new_key)
        assume(row != old)
        return f"change {name}{old} -> {row}", clinic.without_row(name, old).with_row(name, row)
    row = _draw_row(draw, clinic, name, fresh)
    return f"add {name}{row}", clinic.with_row(name, row)


def without_person(clinic: Clinic, pat_id: Any) -> Clinic:
    """``clinic`` without patient ``pat_id`` and every row that references them (their visits and those visits'
    prescriptions): the neighbour of the person unit (``[privacy] unit = "Patient"``, docs/privacy-unit.md)."""
    visits = {v[0] for v in clinic.table("Visit") if v[1] == pat_id}
    return Clinic({
        "Patient": tuple(p for p in clinic.table("Patient") if p[0] != pat_id),
        "Visit": tuple(v for v in clinic.table("Visit") if v[0] not in visits),
        "Prescription": tuple(r for r in clinic.table("Prescription") if r[1] not in visits),
    })


@st.composite
def person_neighbours(draw: Any, clinic: Clinic, *, max_visits: int = 4, max_prescriptions: int = 3) -> tuple[str, Clinic]:
    """One PERSON removed with every row referencing them, or a new one added with fresh visits and prescriptions.

    Returns a description and D'. Removing a person from D' gives D back, so either direction is a
    person-level neighbour pair.
    """
    patients = clinic.table("Patient")
    if patients and draw(st.booleans()):
        pat_id = draw(st.sampled_from([p[0] for p in patients]))
        return f"remove patient {pat_id} and their rows", without_person(clinic, pat_id)
    pat_id = max((p[0] for p in patients), default=0) + 1
    added = clinic.with_row("Patient", (pat_id, draw(st.sampled_from(_NAMES)), draw(st.integers(1930, 2010))))
    first_visit = max((v[0] for v in clinic.table("Visit")), default=99) + 1
    visit_ids = [first_visit + j for j in range(draw(st.integers(0, max_visits)))]
    for visit_id in visit_ids:
        added = added.with_row("Visit", (visit_id, pat_id, draw(st.sampled_from(DIAGNOSES))))
    if visit_ids:
        first_rx = max((r[0] for r in clinic.table("Prescription")), default=999) + 1
        for j in range(draw(st.integers(0, max_prescriptions))):
            added = added.with_row("Prescription", (first_rx + j, draw(st.sampled_from(visit_ids)), draw(st.sampled_from(DRUGS))))
    return f"add patient {pat_id} with {len(visit_ids)} visits", added


# --------------------------------------------------------------------------------------
# Comparing what the analyst receives
# --------------------------------------------------------------------------------------

#: The noisy value and what is derived from it, in the names the release paths use. Tests add
#: the fields of separately charged DP draws (the DP upper bound on RS) to this list.
VALUE_FIELDS = (
    "value", "value_exact", "interval", "interval.*", "interval_exact", "interval_exact.*",
    # clamping at zero is post-processing of the noisy value (pimento.release.clamp)
    "value_unclamped", "clamped",
)


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Leaves of a JSON-like value keyed by dotted paths (``interval.0``); containers give their shape too."""
    out: dict[str, Any] = {}
    if isinstance(data, dict):
        out[prefix or "."] = ("dict", tuple(sorted(map(str, data))))
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(data, (list, tuple)):
        out[prefix or "."] = ("list", len(data))
        for i, value in enumerate(data):
            out.update(flatten(value, f"{prefix}.{i}" if prefix else str(i)))
    else:
        out[prefix] = data
    return out


def _allowed(path: str, allow: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in allow)


def differences(a: Any, b: Any, allow: tuple[str, ...] = VALUE_FIELDS) -> dict[str, tuple[Any, Any]]:
    """Paths whose values differ between ``a`` and ``b`` and that the allow-list does not cover."""
    fa, fb = flatten(a), flatten(b)
    out = {}
    for path in sorted(set(fa) | set(fb)):
        if _allowed(path, allow):
            continue
        if fa.get(path, "<absent>") != fb.get(path, "<absent>"):
            out[path] = (fa.get(path, "<absent>"), fb.get(path, "<absent>"))
    return out


def drop_timings(data: Any) -> Any:
    """``data`` without wall-clock timings (keys ending in ``seconds``): they measure the machine, not the data."""
    if isinstance(data, dict):
        return {k: drop_timings(v) for k, v in data.items() if not str(k).endswith("seconds")}
    if isinstance(data, list):
        return [drop_timings(v) for v in data]
    return data


#: The deployment id D and D' share: they are the same deployment (the custodian's metadata, not
#: data), so its ledger key is the same on both and a synthetic copy made for one fits the other.
HARNESS_DEPLOYMENT_ID = "neighbour-harness"
HARNESS_DATABASE_KEY = f"deployment:{HARNESS_DEPLOYMENT_ID}"


def write_deployment(path: Path) -> None:
    """Give the database at ``path`` the harness's deployment id (``<db>.pimento-deployment.json``)."""
    import json

    from pimento.mechanisms.ledger import deployment_file

    file = deployment_file(str(path))
    assert file is not None
    file.write_text(json.dumps({"id": HARNESS_DEPLOYMENT_ID, "created": "2026-01-01T00:00:00+00:00", "aliases": []}))


def run_pair(
    run: Callable[[Path, random.Random], Any],
    d: Clinic,
    d_prime: Clinic,
    workdir: Path,
    *,
    seed: int = 0,
    config: str | None = None,
    file_name: str = "clinic.duckdb",
) -> tuple[Any, Any]:
    """``run`` on D and on D', each at the same path in a fresh folder (fresh ledger), with the same seed."""
    outputs = []
    folder = workdir / "db"
    for clinic in (d, d_prime):
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        if config is not None:
            (folder / "pimento.toml").write_text(config)
        path = clinic.write(folder / file_name)
        write_deployment(path)
        outputs.append(run(path, random.Random(seed)))
    shutil.rmtree(folder)
    return outputs[0], outputs[1]


def assert_neighbour_invariant(
    run: Callable[[Path, random.Random], Any],
    d: Clinic,
    d_prime: Clinic,
    workdir: Path,
    *,
    allow: tuple[str, ...] = VALUE_FIELDS,
    seed: int = 0,
    config: str | None = None,
    what: str = "",
    derived: Callable[[Any], None] | None = None,
) -> tuple[Any, Any]:
    """Fail, naming every field, when an analyst-facing field outside ``allow`` differs on D and D'.

    The allow-list trusts that its fields are derived from the noisy value and the separately
    charged draws; ``derived(output)``, run on both outputs, is where a test checks that (for
    example, that the interval is recomputed from the value and the DP bound, not from RS).
    """
    a, b = run_pair(run, d, d_prime, workdir, seed=seed, config=config)
    if derived is not None:
        derived(a)
        derived(b)
    diff = differences(a, b, allow)
    assert not diff, (
        f"fields an analyst receives differ between neighbours ({what}); each is a function of the private "
        f"data outside any DP mechanism:\n" + "\n".join(f"  {p}: D={x!r}  D'={y!r}" for p, x, y in ((p, *v) for p, v in diff.items()))
    )
    return a, b


# --------------------------------------------------------------------------------------
# Running a release path
# --------------------------------------------------------------------------------------


def outcome(call: Callable[[], Any]) -> dict[str, Any]:
    """``call()``'s dict, or the UserError it raised as ``{"error": class, "message": one line}``."""
    from pimento.errors import PimentoError

    try:
        result = call()
    except PimentoError as exc:
        return {"error": type(exc).__name__, "message": exc.one_line()}
    return result.to_dict() if hasattr(result, "to_dict") else result


@contextlib.contextmanager
def fixed_noise(seed: int) -> Iterator[None]:
    """Every release in this process draws from a fresh ``random.Random(seed)`` (for CLI and service runs)."""
    from pimento.mechanisms.samplers import fixed_noise_for_tests

    with fixed_noise_for_tests(lambda: random.Random(seed)):
        yield


def _invoke(args: list[str], seed: int) -> Any:
    from typer.testing import CliRunner

    from pimento.cli._common import console, err_console
    from pimento.cli.app import app

    widths = console.width, err_console.width
    console.width = err_console.width = 400  # no wrapping that depends on the length of a number
    try:
        with fixed_noise(seed):
            return CliRunner().invoke(app, args)
    finally:
        console.width, err_console.width = widths


def cli_json(args: list[str], seed: int) -> dict[str, Any]:
    """``pimento ARGS --json`` in process: the parsed JSON, or the error line and exit status."""
    result = _invoke([*args, "--json"], seed)
    if result.exit_code == 0:
        return json.loads(result.stdout)
    return {"exit_code": result.exit_code, "stderr": " ".join(result.stderr.split()), "stdout": result.stdout}


def cli_text(args: list[str], seed: int) -> dict[str, Any]:
    """``pimento ARGS`` in process: exit status, stdout and stderr (whitespace collapsed)."""
    result = _invoke(list(args), seed)
    return {"exit_code": result.exit_code, "stdout": " ".join(result.stdout.split()), "stderr": " ".join(result.stderr.split())}


def _renderings(value: Any) -> set[str]:
    """The ways a number may appear in text output."""
    out: set[str] = set()
    if isinstance(value, bool) or value is None:
        return out
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return out
        out.add(value)
        value = number
    if isinstance(value, (int, float)):
        out.update({str(value), repr(value), f"{value:g}", f"{value:.4g}", f"{value:.3g}", f"{value:.2f}"})
        if float(value).is_integer():
            out.add(str(int(value)))
    return {s for s in out if s}


def mask_numbers(text: str, numbers: list[Any]) -> str:
    """``text`` with each rendering of each of ``numbers`` replaced by ``<n>`` (longest first, whole tokens)."""
    forms = sorted({s for n in numbers for s in _renderings(n)}, key=len, reverse=True)
    for form in forms:
        text = re.sub(rf"(?<![\w.]){re.escape(form)}(?![\w]|\.\d)", "<n>", text)
    return text


class NoNoise:
    """A random source under which every rounded Laplace draw is 0 (tests only, through the hook).

    ``randrange`` answers 0, then its maximum, alternately: the first Bernoulli(exp(-x)) factor of
    ``rounded_laplace`` then stops at K = 2 (even: false), so ``m = 0`` after exactly two draws,
    and the next draw (the DP bound of RS) starts the alternation afresh.
    """

    def __init__(self) -> None:
        self.calls = 0

    def randrange(self, n: int) -> int:
        self.calls += 1
        return 0 if self.calls % 2 else n - 1

    def getrandbits(self, k: int) -> int:
        return 0
