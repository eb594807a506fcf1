"""The analyst narrows the custodian's clipping bounds for one request (issue 25: "the analyst may only narrow them").

A small DuckDB (public Department, private Patient and Visit) with ``[bounds] "Visit.stay" = [0, 30]`` and
``"Visit.cost" = [0, 100.5]``. Narrowed bounds are admitted only inside the declared ones, for a column the
query sums; they clip in the engine, set the sensitivity (the narrowed width times the count's), are stated
in the answer and key the cache. Every refusal leaves the ledger as it was.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest

from db_support import duckdb_file
from neighbours import NoNoise
from pimento.errors import PrivacyParameterError, UserError
from pimento.mechanisms.budget import Budget
from pimento.mechanisms.samplers import fixed_noise_for_tests
from pimento.release.admission import admit
from pimento.release.aggregate import plan
from pimento.release.request import NarrowedBounds, Request, parse_bounds
from pimento.release.session import Session

DDL = [
    "CREATE TABLE Department (name VARCHAR PRIMARY KEY)",
    "CREATE TABLE Patient (pat_id INTEGER PRIMARY KEY, sex VARCHAR NOT NULL)",
    "CREATE TABLE Visit (visit_id INTEGER PRIMARY KEY, pat_id INTEGER NOT NULL REFERENCES Patient(pat_id), "
    "dept VARCHAR NOT NULL REFERENCES Department(name), stay INTEGER, cost DOUBLE)",
    "INSERT INTO Department VALUES ('cardio'), ('neuro'), ('onco')",
    "INSERT INTO Patient VALUES (1, 'F'), (2, 'M'), (3, 'F')",
    # stays 3, 50, 7, NULL, 12, 25: clipped to [0, 30] by the custodian, to [5, 20] by the analyst below
    "INSERT INTO Visit VALUES (10, 1, 'cardio', 3, 10.25), (11, 1, 'cardio', 50, 200.0), (12, 2, 'neuro', 7, 1.5), "
    "(13, 3, 'onco', NULL, 2.0), (14, 3, 'onco', 12, 3.75), (15, 2, 'onco', 25, 4.0)",
]
CONFIG = """
[privacy]
public = ["Department"]

[ledger]
analyst_share = "1"

[bounds]
"Visit.stay" = [0, 30]
"Visit.cost" = [0, 100.5]

[domains]
"Patient.sex" = ["F", "M"]
"""
SUM_STAY = "SELECT SUM(v.stay) FROM Visit v"
PER_DEPT = "SELECT d.name, SUM(v.stay) FROM Visit v JOIN Department d ON v.dept = d.name GROUP BY d.name"
PER_SEX = "SELECT p.sex, SUM(v.stay) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id GROUP BY p.sex"


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    (tmp_path / "pimento.toml").write_text(CONFIG)
    return duckdb_file(tmp_path / "clinic.duckdb", DDL)


def _release(db: Path, sql: str, bounds: object, delta: str | None = "1e-6", rng: object = None):
    with fixed_noise_for_tests(rng or NoNoise()), Session(db, analyst="ann") as s:
        return s.release_sql(sql, "1", delta, bounds=bounds)


def _spent(db: Path) -> Budget:
    with Session(db) as s:
        return s.ledger.spent(s.location)


def _values(answer) -> dict[tuple, Fraction]:
    return {tuple(g["key"]): Fraction(g["value_exact"]) for g in answer.to_dict()["groups"]}


# ----------------------------------------------------------------------------- the request's own shape


def test_the_three_forms_read_the_same_exact_bounds():
    want = (NarrowedBounds("Visit.stay", Fraction(5), Fraction(20)),)
    assert parse_bounds(["Visit.stay=5:20"]) == want
    assert parse_bounds({"Visit.stay": ["5", "20"]}) == want
    assert parse_bounds({"Visit.stay": [5, 20.0]}) == want
    assert parse_bounds({"Visit.cost": ["0.1", "12.25"]})[0].lower == Fraction(1, 10)  # exact, not the float 0.1
    assert Request.for_sql(SUM_STAY, bounds=["Visit.stay=5:20"]).bounds == want


@pytest.mark.parametrize(
    ("bounds", "said"),
    [
        (["Visit.stay=20:5"], "empty"),  # lo > hi
        (["Visit.stay=0:1/3"], "decimal"),  # no exact decimal literal for the engine
        (["Visit.stay=0:0.0000001"], "decimal of at most 6 places"),
        (["Visit.stay=0-30"], "Table.column=LOWER:UPPER"),
        (["stay=0:30"], "Table.column"),
        (["Visit.stay=0:30", "visit.STAY=1:2"], "twice"),
        ({"Visit.stay": ["0"]}, "[lower, upper]"),
        (["Visit.stay=0:nan"], "number"),
    ],
)
def test_a_malformed_narrowing_is_refused_when_the_request_is_built(bounds, said):
    with pytest.raises(PrivacyParameterError) as bad:
        Request.for_sql(SUM_STAY, epsilon="1", bounds=bounds)
    assert said in bad.value.one_line() and bad.value.hint


# ----------------------------------------------------------------------------- admission and the release


def test_narrowed_bounds_clip_in_the_engine_and_set_the_sensitivity(db):
    answer = _release(db, SUM_STAY, ["Visit.stay=5:20"])
    assert _values(answer) == {(): 5 + 20 + 7 + 12 + 20}  # 3 -> 5, 50 -> 20, 25 -> 20; NULL skipped
    data = answer.to_dict()
    assert data["bounds"] == ["5", "20"]  # stated: a public input the analyst gave
    assert "WHEN v.stay < 5 THEN 5 WHEN v.stay > 20 THEN 20" in answer.sql.replace('"', "")
    part = data["releases"][0]
    assert part["mechanism"] == "global_laplace" and part["noise_scale_upper_exact"] == "20"  # B / epsilon, B = 20, not 30
    declared = _release(db, SUM_STAY, None)
    assert declared.to_dict()["bounds"] == ["0", "30"] and declared.to_dict()["releases"][0]["noise_scale_upper_exact"] == "30"


def test_the_plan_scales_the_counts_sensitivity_by_the_narrowed_width(db):
    """Over a join (smooth mechanism) each part's factor is the narrowed B over the grid (+2 units off an exact grid)."""
    with Session(db) as s:
        for bounds, factor in ((None, Fraction(30)), (["Visit.stay=0:12"], Fraction(12)), (["Visit.stay=1:3"], Fraction(3))):
            job = admit(Request.for_sql(PER_SEX, epsilon="1", delta="1e-6", bounds=bounds), settings=s.database.settings,
                        ledger=s.ledger, analyst="ann")
            (part,) = plan(s, job).parts
            assert part.factor == factor, bounds
        job = admit(Request.for_sql("SELECT SUM(v.cost) FROM Visit v JOIN Patient p ON p.pat_id = v.pat_id", epsilon="1",
                                    delta="1e-6", bounds={"Visit.cost": ["0", "12.25"]}), settings=s.database.settings, ledger=s.ledger)
        planned = plan(s, job)
    assert planned.grid == Fraction(1, 10_000) and planned.parts[0].factor == Fraction("12.25") * 10_000 + 2


def _clipped_sums(con: duckdb.DuckDBPyConnection, sql: str) -> dict[object, Fraction]:
    return {row[0]: Fraction(str(row[1] or 0)) for row in con.execute(sql).fetchall()}


def test_brute_force_every_neighbour_moves_the_narrowed_sum_by_at_most_its_width_times_the_count(db, tmp_path):
    """Remove each Visit and each Patient in turn (add-remove neighbours): the planned SQL's grouped clipped sums move
    in L1 by at most B_narrowed times the change of the ungrouped count; under the declared bounds they move by more,
    so the bound checked is the narrowed one."""
    with Session(db) as s:
        job = admit(Request.for_sql(PER_SEX, epsilon="1", delta="1e-6", bounds=["Visit.stay=5:20"]), settings=s.database.settings,
                    ledger=s.ledger)
        planned = plan(s, job)
        count_sql = planned.query.count_query.to_sql(s.database.engine.dialect)
    narrowed = Fraction(20)
    base = duckdb.connect(str(db), read_only=True)
    try:
        whole, total = _clipped_sums(base, planned.sql), base.execute(count_sql).fetchone()[0]
        removals = [("Visit", "visit_id", r[0]) for r in base.execute("SELECT visit_id FROM Visit").fetchall()]
        removals += [("Patient", "pat_id", r[0]) for r in base.execute("SELECT pat_id FROM Patient").fetchall()]
    finally:
        base.close()
    widest = Fraction(0)
    for i, (table, key, value) in enumerate(removals):
        copy = tmp_path / f"n{i}.duckdb"
        con = duckdb.connect(str(copy))
        try:
            con.execute(f"ATTACH '{db}' AS src (READ_ONLY)")
            for name in ("Department", "Patient", "Visit"):
                con.execute(f"CREATE TABLE {name} AS SELECT * FROM src.{name}")
            if table == "Patient":
                con.execute(f"DELETE FROM Visit WHERE pat_id = {value}")  # the cascade: a patient's visits go with them
            con.execute(f"DELETE FROM {table} WHERE {key} = {value}")
            moved, count = _clipped_sums(con, planned.sql), con.execute(count_sql).fetchone()[0]
        finally:
            con.close()
        l1 = sum(abs(whole.get(k, 0) - moved.get(k, 0)) for k in set(whole) | set(moved))
        assert l1 <= narrowed * abs(total - count), (table, value, l1, total - count)
        widest = max(widest, l1)
    assert widest > narrowed  # some neighbour moves the sums by more than one join result's narrowed contribution


def test_a_widening_is_refused_before_anything_is_spent(db):
    for bounds in (["Visit.stay=0:31"], ["Visit.stay=-1:30"], ["visit.STAY=-0.5:10"]):
        with pytest.raises(PrivacyParameterError) as refused:
            _release(db, SUM_STAY, bounds)
        assert "widen the custodian's [bounds] of" in refused.value.message and "[0, 30]" in refused.value.message
        assert "0 <= LOWER <= UPPER <= 30" in refused.value.hint
    assert _spent(db) == Budget.zero()
    assert _values(_release(db, SUM_STAY, ["Visit.stay=0:30"])) == {(): 3 + 30 + 7 + 12 + 25}  # equal to the declared: admitted


@pytest.mark.parametrize(
    ("sql", "bounds", "said"),
    [
        ("SELECT SUM(v.visit_id) FROM Visit v", ["Visit.visit_id=0:5"], "no declared [bounds]"),  # no declared bounds to narrow
        (SUM_STAY, ["Nope.x=0:5"], "no declared [bounds]"),
        (SUM_STAY, ["Visit.cost=0:5"], "does not clip (it sums Visit.stay)"),  # declared, but not the summed column
        (SUM_STAY, ["Visit.stay=0:5", "Visit.cost=0:5"], "Visit.cost, which this query does not clip"),
        ("SELECT COUNT(*) FROM Visit v", ["Visit.stay=0:5"], "has none"),  # a scalar COUNT: refused at admission
        ("SELECT d.name, COUNT(*) FROM Visit v JOIN Department d ON v.dept = d.name GROUP BY d.name", ["Visit.stay=0:5"],
         "it sums nothing"),  # a grouped COUNT: refused by the plan
    ],
)
def test_bounds_the_query_cannot_use_are_refused_before_anything_is_spent(db, sql, bounds, said):
    with pytest.raises(UserError) as refused:
        _release(db, sql, bounds)
    assert said in refused.value.one_line() and refused.value.hint, refused.value.one_line()
    assert _spent(db) == Budget.zero()


def test_another_narrowing_is_another_answer_in_the_cache(db):
    first = _release(db, SUM_STAY, ["Visit.stay=5:20"])
    again = _release(db, SUM_STAY, {"Visit.stay": ["5", "20.0"]}, rng=random.Random(3))  # the same bounds, written otherwise
    other = _release(db, SUM_STAY, ["Visit.stay=5:25"])
    assert again.cached is True and _values(again) == _values(first)
    assert other.cached is False and _values(other) == {(): 5 + 25 + 7 + 12 + 25}
    assert _spent(db) == Budget.of("2", "0")  # one relation: pure epsilon; two distinct answers charged


def test_the_sql_preview_shows_the_narrowed_clipping_and_spends_nothing(db):
    with Session(db, analyst="ann") as s:
        shown = s.preview_sql(PER_DEPT, epsilon="1", delta="1e-6", bounds=["Visit.stay=5:20"])
        with pytest.raises(PrivacyParameterError):
            s.preview_sql(PER_DEPT, epsilon="1", delta="1e-6", bounds=["Visit.stay=5:40"])
    assert "< 5 THEN 5" in shown["normalized_sql"] and "> 20 THEN 20" in shown["normalized_sql"]
    assert shown["bounds"] == ["5", "20"]  # the preview states the bounds the release will use
    assert _spent(db) == Budget.zero()


def _public(answer: dict) -> dict:
    """An answer without what may differ between neighbours: the noisy values and what is derived from them."""
    out = {k: v for k, v in answer.items() if k not in ("groups", "seconds", "charge_id", "budget_left", "clipped_on_copy", "releases")}
    out["keys"] = [g["key"] for g in answer["groups"]]
    # the DP upper bound of the noise scale is a separately charged draw from the private RS: it may differ too
    out["releases"] = [{k: v for k, v in part.items() if not k.startswith("noise_scale_upper")} for part in answer["releases"]]
    return out


def test_neighbouring_databases_differ_only_in_the_noisy_values(db, tmp_path):
    """The same narrowed request on D and on D minus one visit, the noise fixed: everything but the values is equal."""
    (tmp_path / "n").mkdir()
    (tmp_path / "n" / "pimento.toml").write_text(CONFIG)
    neighbour = duckdb_file(tmp_path / "n" / "clinic.duckdb", [*DDL, "DELETE FROM Visit WHERE visit_id = 11"])
    here = _release(db, PER_DEPT, ["Visit.stay=5:20"], rng=random.Random(7)).to_dict()
    there = _release(neighbour, PER_DEPT, ["Visit.stay=5:20"], rng=random.Random(7)).to_dict()
    assert _public(here) == _public(there)
    assert here["bounds"] == ["5", "20"] and "WHEN v.stay > 20 THEN 20" in here["sql"].replace('"', "")
    moved = {tuple(g["key"]): Fraction(g["value_exact"]) for g in here["groups"]}
    kept = {tuple(g["key"]): Fraction(g["value_exact"]) for g in there["groups"]}
    assert moved[("cardio",)] - kept[("cardio",)] == 20 and moved[("onco",)] == kept[("onco",)]  # only the noisy values differ


# ----------------------------------------------------------------------------- the goal's clear refusals, CLI and Python API

#: (SQL, delta, extra CLI arguments, the API's bounds, what the one line names): a SUM on a column without declared bounds, a
#: group key on an undeclared private domain without delta, more groups than the cap, a narrowing that widens.
REFUSALS = [
    ("SELECT SUM(v.visit_id) FROM Visit v", "1e-6", [], None, '"Visit.visit_id" = [LOWER, UPPER] under [bounds]'),
    ("SELECT v.dept, COUNT(*) FROM Visit v GROUP BY v.dept", None, [], None, "Visit.dept under [domains]"),
    ("SELECT d.name, p.sex, v.dept, COUNT(*) FROM Visit v JOIN Department d ON v.dept = d.name JOIN Patient p ON p.pat_id = v.pat_id "
     "GROUP BY d.name, p.sex, v.dept", "1e-6", [], None, "Visit.dept under [domains]"),
    ("SELECT d.name, p.sex, COUNT(*) FROM Visit v JOIN Department d ON v.dept = d.name JOIN Patient p ON p.pat_id = v.pat_id "
     "GROUP BY d.name, p.sex", "1e-6", [], None, "[release] max_groups"),
    (SUM_STAY, None, ["--bounds", "Visit.stay=0:31"], ["Visit.stay=0:31"], "0 <= LOWER <= UPPER <= 30"),
]


@pytest.fixture()
def capped(tmp_path: Path) -> Path:
    """The clinic with [release] max_groups = 5 (3 departments x 2 sexes = 6 groups)."""
    (tmp_path / "pimento.toml").write_text(CONFIG + "\n[release]\nmax_groups = 5\n")
    return duckdb_file(tmp_path / "clinic.duckdb", DDL)


@pytest.mark.parametrize(("sql", "delta", "args", "bounds", "names"), REFUSALS)
def test_each_bad_input_is_one_clear_line_from_the_cli_with_nothing_spent(capped, sql, delta, args, bounds, names):
    from typer.testing import CliRunner

    from pimento.cli.app import app

    argv = ["sql", "--db", str(capped), "--epsilon", "1", "--analyst", "ann", "--sql", sql, *(["--delta", delta] if delta else []), *args]
    result = CliRunner().invoke(app, argv, terminal_width=10_000)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert names in lines[0], lines[0]
    assert _spent(capped) == Budget.zero()


@pytest.mark.parametrize(("sql", "delta", "args", "bounds", "names"), REFUSALS)
def test_each_bad_input_is_one_clear_user_error_from_the_python_api_with_nothing_spent(capped, sql, delta, args, bounds, names):
    with pytest.raises(UserError) as refused:
        _release(capped, sql, bounds, delta=delta)
    line = refused.value.one_line()
    assert "\n" not in line and names in line, line
    assert _spent(capped) == Budget.zero()


def test_a_question_s_bounds_are_checked_at_admission_before_any_search(db):
    """A question's reading is not known at admission, but a widening or an undeclared column is refused there, before the
    synthetic copy is read; narrowed bounds inside the declared ones are admitted (used if the reading sums the column)."""
    from pimento.errors import ModeError
    from pimento.release.admission import admitted_bounds

    with Session(db) as s:
        settings = s.database.settings
        with pytest.raises(PrivacyParameterError, match="may only narrow"):
            admit(Request.for_question("total stay?", epsilon="1", bounds=["Visit.stay=0:99"]), settings=settings, ledger=s.ledger)
        with pytest.raises(PrivacyParameterError, match="no declared"):
            admit(Request.for_question("total?", epsilon="1", bounds=["Visit.visit_id=0:9"]), settings=settings, ledger=s.ledger)
        job = admit(Request.for_question("total stay?", epsilon="1", bounds=["Visit.stay=0:9"]), settings=settings, ledger=s.ledger)
        assert job.request.bounds == (NarrowedBounds("Visit.stay", Fraction(0), Fraction(9)),)
        with pytest.raises(ModeError, match="clips nothing"):  # mode ci answers exactly: nothing to clip
            admitted_bounds(Request.for_sql(SUM_STAY, bounds=["Visit.stay=0:9"]), settings, spends=False)
    assert _spent(db) == Budget.zero()
