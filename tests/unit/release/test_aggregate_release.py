"""Grouped COUNT, SUM and AVG through the one release path (issue 25): answers, refusals, one charge, the cache.

A small DuckDB: a public relation Department, private Patient and Visit. Under :class:`NoNoise`
(every rounded Laplace draw is 0) a released value is the true one, so the tests can check the
groups, the zero-filled domain, the clipping and the grid; the refusals are checked to leave the
ledger as it was.
"""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from db_support import duckdb_file
from neighbours import NoNoise
from pimento.errors import ModeError, UnsupportedQuery
from pimento.mechanisms.budget import Budget
from pimento.mechanisms.samplers import fixed_noise_for_tests
from pimento.release.admission import admit
from pimento.release.aggregate import _release_part, plan
from pimento.release.request import Request
from pimento.release.session import Session

DDL = [
    "CREATE TABLE Department (name VARCHAR PRIMARY KEY)",
    "CREATE TABLE Patient (pat_id INTEGER PRIMARY KEY, sex VARCHAR NOT NULL)",
    "CREATE TABLE Visit (visit_id INTEGER PRIMARY KEY, pat_id INTEGER NOT NULL REFERENCES Patient(pat_id), "
    "dept VARCHAR NOT NULL REFERENCES Department(name), stay INTEGER, cost DOUBLE)",
    "INSERT INTO Department VALUES ('cardio'), ('neuro'), ('onco'), ('psych')",
    "INSERT INTO Patient VALUES (1, 'F'), (2, 'M'), (3, 'F'), (4, 'Q')",
    # stays 3, 50 (clipped to 30), 7, NULL, 12; costs with cents
    "INSERT INTO Visit VALUES (10, 1, 'cardio', 3, 10.25), (11, 1, 'cardio', 50, 200.0), (12, 2, 'neuro', 7, 1.5), "
    "(13, 3, 'onco', NULL, 2.0), (14, 4, 'onco', 12, 3.75)",
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
"Patient.sex" = ["F", "M", "X"]

[release]
max_groups = 5
"""
PER_DEPT = "SELECT d.name, COUNT(*) FROM Visit v JOIN Department d ON v.dept = d.name GROUP BY d.name"


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    (tmp_path / "pimento.toml").write_text(CONFIG)
    return duckdb_file(tmp_path / "clinic.duckdb", DDL)


def _release(db: Path, sql: str, delta: str | None = "1e-6", **fields):
    with fixed_noise_for_tests(NoNoise()), Session(db, analyst="ann") as s:
        return s.release_sql(sql, "1", delta, **fields)


def _spent(db: Path) -> Budget:
    with Session(db) as s:
        return s.ledger.spent(s.location)


def _values(answer) -> dict[tuple, Fraction | None]:
    return {tuple(g["key"]): None if g["value_exact"] is None else Fraction(g["value_exact"]) for g in answer.to_dict()["groups"]}


def test_a_grouped_count_over_a_public_domain_shows_every_group_with_one_charge(db):
    answer = _release(db, PER_DEPT)
    assert _values(answer) == {("cardio",): 2, ("neuro",): 1, ("onco",): 2, ("psych",): 0}  # zeros included
    data = answer.to_dict()
    assert data["aggregate"] == "count" and data["group_by"] == ["d.name"] and "public relation Department" in data["domain"]
    assert data["releases"][0]["mechanism"] == "vector_smooth_laplace"  # a join: the vector's own beta
    # one DP bound of RS for the whole vector (paid once): every unclamped interval has the same width
    assert len({Fraction(g["interval_exact"][1]) - Fraction(g["interval_exact"][0]) for g in data["groups"]
                if Fraction(g["interval_exact"][0]) > 0}) <= 1
    assert _spent(db) == Budget.of("1", "1e-6")  # one charge for four groups


def test_the_cached_answer_is_the_same_and_free(db):
    first = _release(db, PER_DEPT)
    with fixed_noise_for_tests(lambda: random.Random(3)), Session(db, analyst="ann") as s:
        again = s.release_sql(PER_DEPT, "1", "1e-6")
    assert again.cached is True and first.cached is False
    assert again.to_dict()["groups"] == first.to_dict()["groups"]
    assert _spent(db) == Budget.of("1", "1e-6")


def test_a_declared_domain_drops_values_outside_it_after_the_charge(db):
    """Patient 4's 'Q' is not in the declared domain: dropped silently; 'X' is shown with 0."""
    answer = _release(db, "SELECT p.sex, COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id GROUP BY p.sex")
    assert _values(answer) == {("F",): 3, ("M",): 1, ("X",): 0}


def test_a_where_on_a_group_column_keeps_the_whole_domain(db):
    """The domain's IN filter is ANDed to the relation's own selection; every domain value is still shown."""
    answer = _release(db, "SELECT p.sex, COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id WHERE p.sex <> 'M' GROUP BY p.sex")
    assert _values(answer) == {("F",): 3, ("M",): 0, ("X",): 0}
    assert "IN ('F', 'M', 'X')" in answer.sql and "<> 'M'" in answer.sql


def test_a_sum_is_clipped_in_the_engine_and_released_at_global_sensitivity_on_one_relation(db):
    answer = _release(db, "SELECT d.name, SUM(v.stay) FROM Visit v JOIN Department d ON v.dept = d.name GROUP BY d.name")
    assert "CASE WHEN" in answer.sql
    assert _values(answer) == {("cardio",): 3 + 30, ("neuro",): 7, ("onco",): 12, ("psych",): 0}
    with fixed_noise_for_tests(NoNoise()), Session(db, analyst="ann") as s:
        single = s.release_sql("SELECT SUM(v.stay) FROM Visit v", "1")
    assert _values(single) == {(): 3 + 30 + 7 + 12}
    part = single.to_dict()["releases"][0]
    assert part["mechanism"] == "global_laplace" and part["noise_scale_upper_exact"] == "30"  # B / epsilon, B = 30


def test_one_value_over_a_join_takes_the_scalar_mechanism(db):
    """An ungrouped SUM over a join is one value: the scalar smooth mechanism (its beta is larger than the vector one's at d = 1)."""
    answer = _release(db, "SELECT SUM(v.stay) FROM Visit v JOIN Patient p ON p.pat_id = v.pat_id WHERE p.sex = 'F'")
    assert answer.to_dict()["releases"][0]["mechanism"] == "smooth_laplace" and _values(answer) == {(): 3 + 30}


def test_a_sum_of_a_real_column_is_rounded_to_a_grid_and_pays_for_it(db):
    answer = _release(db, "SELECT SUM(v.cost) FROM Visit v", delta=None)
    assert _values(answer) == {(): Fraction("10.25") + Fraction("100.5") + Fraction("1.5") + 2 + Fraction("3.75")}
    part = answer.to_dict()["releases"][0]
    assert part["grid"] == "0.001"  # a hundredth of the bounds' last decimal place
    assert Fraction(part["noise_scale_upper_exact"]) == Fraction("100.5") + 2 * Fraction("0.001")  # (B + 2 g) / epsilon


def test_an_average_is_the_noisy_sum_over_the_noisy_count_with_the_split_stated(db):
    answer = _release(db, "SELECT p.sex, AVG(v.stay) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id GROUP BY p.sex")
    data = answer.to_dict()
    assert data["budget_split"].startswith("half for the SUM") and data["confidence"] == 0.9
    assert [p["epsilon"] for p in data["releases"]] == ["0.5", "0.5"]
    groups = {tuple(g["key"]): g for g in data["groups"]}
    assert Fraction(groups[("F",)]["value_exact"]) == Fraction(3 + 30, 2)  # visit 13's NULL stay is not counted
    assert groups[("X",)]["value"] is None  # no noisy count above 0: no estimate, the interval is the bounds
    assert groups[("X",)]["interval_exact"] == ["0", "30"]


@pytest.mark.parametrize(
    ("sql", "delta", "construct"),
    [
        ("SELECT SUM(v.visit_id) FROM Visit v", "1e-6", "unbounded_sum"),
        ("SELECT p.sex, v.dept, COUNT(*) FROM Patient p JOIN Visit v ON p.pat_id = v.pat_id GROUP BY p.sex, v.dept", "1e-6",
         "private_group_domain"),
        ("SELECT v.dept, COUNT(*) FROM Visit v GROUP BY v.dept", None, "private_group_domain"),  # selection needs delta
        ("SELECT d.name, p.sex, COUNT(*) FROM Visit v JOIN Department d ON v.dept = d.name JOIN Patient p ON p.pat_id = v.pat_id "
         "GROUP BY d.name, p.sex", "1e-6", "too_many_groups"),  # 4 x 3 > max_groups 5
    ],
)
def test_refusals_come_before_any_charge(db, sql, delta, construct):
    with pytest.raises(UnsupportedQuery) as refused:
        _release(db, sql, delta)
    assert refused.value.construct == construct and refused.value.hint
    assert _spent(db) == Budget.zero()


def test_a_sum_without_bounds_names_the_key_to_add(db):
    with pytest.raises(UnsupportedQuery) as refused:
        _release(db, "SELECT SUM(v.visit_id) FROM Visit v")
    assert '"Visit.visit_id" = [LOWER, UPPER] under [bounds]' in refused.value.one_line()


@pytest.mark.parametrize("mode", ["split", "contextual"])
def test_split_and_contextual_refuse_a_grouped_query_before_reading(mode):
    from pimento.release.modes import release_mode

    with pytest.raises(ModeError, match="GROUP BY, SUM or AVG"):
        release_mode(mode).release_aggregate(None, None)  # nothing is touched: both arguments are None


def test_partition_selection_shows_only_groups_above_its_threshold(db, tmp_path):
    many = [f"INSERT INTO Visit VALUES ({100 + i}, 1, 'psych', 1, 1.0)" for i in range(40)]
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "pimento.toml").write_text(CONFIG)
    path = duckdb_file(tmp_path / "big" / "clinic.duckdb", DDL + many)
    answer = _release(path, "SELECT v.dept, COUNT(*) FROM Visit v GROUP BY v.dept")
    data = answer.to_dict()
    selection = data["partition_selection"]
    assert 15 < float(Fraction(selection["threshold"])) < 16
    assert _values(answer) == {("psych",): 40}  # 2, 1 and 2 are below the threshold
    assert selection["shown_probability"]["1"] < 1e-6 and selection["shown_probability"]["50"] > 0.999


def test_cli_sql_prints_a_table_and_json(db):
    from typer.testing import CliRunner

    from pimento.cli.app import app

    with fixed_noise_for_tests(NoNoise()):
        text = CliRunner().invoke(app, ["sql", "--db", str(db), "--epsilon", "1", "--delta", "1e-6", "--analyst", "ann", "--sql", PER_DEPT])
        raw = CliRunner().invoke(app, ["sql", "--db", str(db), "--epsilon", "1", "--delta", "1e-6", "--analyst", "bob", "--sql", PER_DEPT,
                                       "--json"])
    assert text.exit_code == 0, text.output
    assert "COUNT(*) per d.name" in text.stdout and "psych" in text.stdout and "95% interval" in text.stdout
    assert max(len(line) for line in text.stdout.splitlines()) <= 80
    data = json.loads(raw.stdout)
    assert [g["key"] for g in data["groups"]] == [["cardio"], ["neuro"], ["onco"], ["psych"]]


# --------------------------------------------------------------------------------------
# The law of a grouped SUM's released vector, through the plan, with power: the plan of a grouped
# SUM over a join (clipping bound B, grid g) releases each group with Laplace noise of scale
# 2 S (B/g + 2) / eps_noise grid units for the count's smooth bound S (mechanisms/PROOF.md section 10);
# accepted at that scale, rejected 30% off either way. The factor B/g + 2 is pinned exactly (its + 2
# is too small to see in the law); a release that dropped the factor or the grid is off by far more.
# --------------------------------------------------------------------------------------

SQL = "SELECT d.name, SUM(v.cost) FROM Visit v JOIN Department d ON v.dept = d.name GROUP BY d.name"
S = Fraction(3)  # a fixed smooth bound of the count's sensitivity
RELEASES = 1000


@pytest.fixture(scope="module")
def noise(tmp_path_factory) -> tuple[np.ndarray, float]:
    folder = tmp_path_factory.mktemp("law")
    (folder / "pimento.toml").write_text(CONFIG)
    db = duckdb_file(folder / "clinic.duckdb", DDL)
    with Session(db) as s:
        job = admit(Request.for_sql(SQL, epsilon="1", delta="1e-6"), settings=s.database.settings, ledger=s.ledger, analyst="ann")
        planned = plan(s, job)
    (part,) = planned.parts
    assert planned.grid == Fraction(1, 1000) and part.factor == Fraction("100.5") * 1000 + 2
    truth = [7, 0, 123456, 5]
    draws: list[float] = []
    with fixed_noise_for_tests(random.Random(11)):
        for _ in range(RELEASES):
            released, details = _release_part(part, truth, S, planned.grid)
            draws.extend(float(v / planned.grid) - t for v, t in zip(released.values, truth, strict=True))
    scale = float(2 * S * part.factor / Fraction(9, 10))
    assert Fraction(details["scale"]) == 2 * S * part.factor / Fraction(9, 10)
    return np.array(draws), scale


def test_the_released_vector_has_the_planned_laplace_scale(noise):
    draws, scale = noise
    assert stats.kstest(draws / scale, stats.laplace.cdf).pvalue > 1e-3


@pytest.mark.parametrize("off", [1.3, 0.7])
def test_the_law_test_rejects_a_scale_30_percent_off(noise, off):
    draws, scale = noise
    assert stats.kstest(draws / (scale * off), stats.laplace.cdf).pvalue < 1e-5


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        ('[bounds]\n"Visit.stay" = [30, 0]\n', "[30, 0]"),
        ('[bounds]\n"Visit.stay" = [0, "1/3"]\n', "decimal"),
        ('[bounds]\nstay = [0, 3]\n', "Table.column"),
        ('[domains]\n"Patient.sex" = []\n', "non-empty list"),
        ('[release]\nmax_groups = 0\n', "max_groups"),
    ],
)
def test_bad_bounds_and_domains_are_one_line_naming_the_file_and_key(tmp_path, toml, said):
    from pimento.config import load_settings
    from pimento.errors import ConfigError

    (tmp_path / "pimento.toml").write_text(toml)
    with pytest.raises(ConfigError) as bad:
        load_settings(tmp_path / "pimento.toml")
    assert str(tmp_path / "pimento.toml") in bad.value.message and said in bad.value.message
    assert toml.split("]")[0].strip("[") in bad.value.message  # the section


def test_the_synthetic_copy_predicts_clipping_and_gives_a_public_domain(tmp_path, standin_synthetic):
    """[bounds] narrower than the data: the answer says how many rows of the COPY are clipped (never the private
    count); a private column declared "public" takes its domain from the copy (charged to this ledger)."""
    import re as _re

    import duckdb

    from db_support import demo_with_copy

    db = demo_with_copy(tmp_path / "h", standin_synthetic, patients=150, ledger='analyst_share = "1"')
    toml = db.parent / "pimento.toml"
    text = toml.read_text().replace('"MedicationOrders.dose_mg" = [0, 1000]', '"MedicationOrders.dose_mg" = [0, 100]')
    toml.write_text(_re.sub(r'"Employee.department" = \[[^\]]*\]', '"Employee.department" = "public"', text))
    copy = db.parent / "hospital.synthetic.duckdb"
    con = duckdb.connect(str(copy), read_only=True)
    try:
        on_copy = con.execute("SELECT COUNT(*) FROM MedicationOrders WHERE dose_mg < 0 OR dose_mg > 100").fetchone()[0]
        rows = con.execute("SELECT COUNT(dose_mg) FROM MedicationOrders").fetchone()[0]
        departments = sorted(r[0] for r in con.execute("SELECT DISTINCT department FROM Employee").fetchall())
    finally:
        con.close()
    summed = _release(db, "SELECT SUM(m.dose_mg) FROM MedicationOrders m")
    clipped = summed.to_dict()["clipped_on_copy"]
    assert clipped["rows"] == on_copy > 0 and clipped["of_rows"] == rows, clipped
    grouped = _release(db, "SELECT e.department, COUNT(*) FROM Employee e JOIN Visit v ON e.employee_id = v.attending_id GROUP BY e.department")
    assert [g["key"][0] for g in grouped.to_dict()["groups"]] == departments
    assert "synthetic copy" in grouped.to_dict()["domain"]
