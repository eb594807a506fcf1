"""benchmarks/smartnoise_grouped without SmartNoise: the workload, the truth, the statistics, Pimento's side, the table.

SmartNoise itself runs only in its own virtual environment (``--snpython``); everything here runs
in the project's environment on a small generated clinic, in a few seconds.
"""

from __future__ import annotations

import csv
import math
import sys
from fractions import Fraction

import duckdb
import pytest

from benchmarks import smartnoise_grouped as g
from pimento.config import declared_bounds, declared_domain
from pimento.mechanisms.budget import Budget
from pimento.release import Session


@pytest.fixture(scope="module")
def clinic(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clinic")
    paths = g.generate_clinic(folder, patients=400, diagnoses=40, seed=3)
    g.write_config(folder)
    return paths


def _csv(path):
    with path.open() as fh:
        return list(csv.DictReader(fh))


def test_size_bins_cover_every_positive_size_once():
    assert [g.size_bin(n) for n in (1, 2, 5, 6, 15, 16, 100, 101, 10**6)] == ["1", "2-5", "2-5", "6-10", "11-15", "16-20", "51-100", "101+", "101+"]
    with pytest.raises(ValueError):
        g.size_bin(0)


def test_the_clinic_is_deterministic_and_has_one_row_per_person(clinic, tmp_path):
    again = g.generate_clinic(tmp_path, patients=400, diagnoses=40, seed=3)
    assert again["patients"].read_text() == clinic["patients"].read_text()
    assert again["visits"].read_text() == clinic["visits"].read_text()
    patients = _csv(clinic["patients"])
    assert len({p["id"] for p in patients}) == len(patients) == 400  # max_ids = 1 holds for SmartNoise
    assert {p["region"] for p in patients} <= {r for r, _ in g.REGIONS}
    assert any(float(p["charges"]) > g.CHARGES_BOUNDS[1] for p in patients)  # clipping matters
    visits = _csv(clinic["visits"])
    assert any(int(v["stay"]) > g.STAY_BOUNDS[1] for v in visits)
    con = duckdb.connect(str(clinic["db"]), read_only=True)
    try:
        assert con.execute("SELECT COUNT(*) FROM patients").fetchone()[0] == 400
        assert con.execute("SELECT COUNT(*) FROM visits").fetchone()[0] == len(visits)
    finally:
        con.close()


def test_the_config_declares_what_both_sides_use(clinic):
    """[bounds] and [domains] are the bounds given to SmartNoise; the cache is off so that every run is a release."""
    with Session(clinic["db"]) as s:
        settings = s.database.settings
    assert settings.ledger.answer_cache is False
    assert declared_domain(settings, "patients", "region") == [r for r, _ in g.REGIONS]
    spec = g._sn_spec(clinic, g.grouped_queries(), reps=1)
    for table, columns in spec["tables"].items():
        for column, kind in columns["columns"].items():
            if "lower" in kind:
                assert declared_bounds(settings, table, column) == (Fraction(kind["lower"]), Fraction(kind["upper"]))
    censored = {q["name"] for q in spec["queries"] if q["censor_dims"]}
    assert censored == {q.name for q in g.grouped_queries() if q.private_keys}
    assert [q["name"] for q in spec["queries"] if not q["equal_total"]] == ["COUNT(*) per diagnosis, SmartNoise at its default (twice the epsilon)"]


# A stand-in for SmartNoise (and the pandas it reads CSVs with) in the runner's subprocess: each
# statistic costs its epsilon (two for an AVG or a censored GROUP BY), a censored query 1.5 delta;
# a result echoes the epsilon it ran at; a JOIN is refused as SmartNoise does.
_FAKE_SNSQL = """
class Privacy:
    def __init__(self, *, epsilon, delta):
        self.epsilon, self.delta = epsilon, delta
class _Reader:
    def __init__(self, privacy, metadata):
        self.privacy = privacy
        self.censor = metadata["Collection"]["PUBLIC"]["patients"]["censor_dims"]
    def get_privacy_cost(self, sqls):
        k = 2 if ("AVG" in sqls[0] or self.censor) else 1
        return (k * self.privacy.epsilon, (1.5 if self.censor else 0.5) * self.privacy.delta)
    def execute(self, sql):
        if "JOIN" in sql:
            raise ValueError("Support for JOIN queries is currently disabled: [<x>]")
        return [["g", "v"], ["north", self.privacy.epsilon], ["south", float("nan")]]
def from_df(frames, *, privacy, metadata):
    return _Reader(privacy, metadata)
"""


def test_the_runner_spends_the_same_total_as_pimento(clinic, tmp_path, monkeypatch):
    """The runner's epsilon/delta scaling and its output, with a stand-in for SmartNoise (no SmartNoise needed)."""
    (tmp_path / "snsql").mkdir()
    (tmp_path / "snsql" / "__init__.py").write_text(_FAKE_SNSQL)
    (tmp_path / "pandas.py").write_text("def read_csv(path):\n    return path\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    out = g.smartnoise_runs(sys.executable, clinic, g.grouped_queries(), reps=2)
    avg, keys = out["AVG(age) per region"], out["COUNT(*) per diagnosis (private keys)"]
    assert avg["epsilon_per_statistic"] == pytest.approx(0.5) and avg["cost"][0] == pytest.approx(1.0)
    assert avg["runs"] == [{("north",): 0.5, ("south",): None}] * 2
    assert keys["epsilon_per_statistic"] == pytest.approx(0.5) and keys["cost"][1] <= 1e-5 * (1 + 1e-9)
    assert keys["delta_per_query"] == pytest.approx(1e-5 / 1.5)
    default = out["COUNT(*) per diagnosis, SmartNoise at its default (twice the epsilon)"]
    assert default["epsilon_per_statistic"] == 1.0 and default["cost"] == pytest.approx([2.0, 1.5e-5])
    assert out["COUNT(*) per region"]["cost"] == pytest.approx([1.0, 5e-6])
    assert out["visits JOIN patients: COUNT(*) per region"]["error"] == "ValueError: Support for JOIN queries is currently disabled"


def test_true_answers_are_clipped_to_the_declared_bounds(clinic):
    by_name = {q.name: q for q in g.grouped_queries()}
    charges = g.true_answer(clinic["db"], by_name["SUM(charges) per region (real)"])
    expected: dict[tuple[str], float] = {}
    for p in _csv(clinic["patients"]):
        expected[(p["region"],)] = expected.get((p["region"],), 0.0) + min(max(float(p["charges"]), 0.0), 1000.0)
    assert charges.keys() == expected.keys()
    assert all(math.isclose(charges[k], expected[k], rel_tol=1e-9) for k in expected)
    region = {p["id"]: p["region"] for p in _csv(clinic["patients"])}
    stays: dict[tuple[str], float] = {}
    for v in _csv(clinic["visits"]):
        stays[(region[v["patient_id"]],)] = stays.get((region[v["patient_id"]],), 0.0) + min(int(v["stay"]), 30)
    assert g.true_answer(clinic["db"], by_name["visits JOIN patients: SUM(stay) per region"]) == stays
    overall = g.true_answer(clinic["db"], by_name["AVG(age), no GROUP BY"])
    assert list(overall) == [()]


def test_noise_stats_count_only_the_runs_that_show_a_group():
    true = {("a",): 10.0, ("b",): 5.0, ("c",): 1.0}
    runs = [{("a",): 11.0, ("b",): 5.0}, {("a",): 7.0, ("b",): None}, {("a",): 12.0, ("x",): 3.0}]
    stats = g.noise_stats(true, runs)
    assert stats[("a",)]["shown"] == 3 and stats[("a",)]["mean_error"] == pytest.approx(0.0)
    assert stats[("a",)]["std"] == pytest.approx(math.sqrt((1 + 9 + 4) / 3))  # population std of the errors
    assert stats[("b",)] == {"true": 5.0, "shown": 1}  # one showing: no std
    assert stats[("c",)] == {"true": 1.0, "shown": 0}
    assert ("x",) not in stats  # a key that is not present has no truth
    assert g._mean_std(stats) == pytest.approx(stats[("a",)]["std"])
    assert g._mean_std(stats, min_shown=4) is None
    assert g._std_groups(stats) == {"groups": 1, "smallest_true": 10.0}


def test_recall_by_size_is_the_share_of_present_groups_shown_per_bin():
    true = {("a",): 1, ("b",): 1, ("c",): 30, ("d",): 0}
    rows = g.recall_by_size(true, [[("a",), ("c",), ("zz",)], [("c",)]])
    assert rows == [{"bin": "1", "groups": 2, "recall": 0.25}, {"bin": "21-30", "groups": 1, "recall": 1.0}]


def test_smartnoise_rows_become_group_values():
    assert g.parse_sn_rows([["north", 3.0], ["south", None]]) == {("north",): 3.0, ("south",): None}
    assert g.parse_sn_rows([[47.5]]) == {(): 47.5}


def test_pimento_runs_are_fresh_charged_releases(clinic):
    query = next(q for q in g.grouped_queries() if q.name == "COUNT(*) per region")
    with Session(clinic["db"]) as s:
        before = s.ledger.spent(s.location)
    out = g.pimento_runs(clinic["db"], query, 3, analyst="test-fresh")
    with Session(clinic["db"]) as s:
        assert s.ledger.spent(s.location) == before + Budget.of("3")  # three charges: no cached answer
    assert out["mechanisms"] == ["global_laplace"] and out["noise_scale_upper"] == [1.0] and out["noise_scale_upper_range"] == [[1.0, 1.0]]
    assert [sorted(r) for r in out["runs"]] == [sorted((r,) for r, _ in g.REGIONS)] * 3
    assert len({tuple(sorted(r.items())) for r in out["runs"]}) > 1  # independent noise per release


def test_pimento_partition_selection_and_summary(clinic):
    query = next(q for q in g.grouped_queries() if q.private_keys)
    true = g.true_answer(clinic["db"], query)
    pim = g.pimento_runs(clinic["db"], query, 2, analyst="test-select")
    assert pim["mechanisms"] == ["laplace_partition_selection"]
    sn = {"cost_at_epsilon_1": [2.0, 1.5e-5], "epsilon_per_statistic": 0.5, "delta_per_query": 6.7e-6, "cost": [1.0, 1e-5],
          "seconds_per_query": 0.1, "runs": [{k: v + 1 for k, v in true.items() if v >= 20}, {k: v - 1 for k, v in true.items() if v >= 20}]}
    row = g._summary(query, true, pim, sn)
    assert row["pimento"]["threshold"] == pytest.approx(13.32, abs=0.01)  # 1 + 1/2 + ln(1/(2 delta)) + 1 at epsilon 1
    assert row["smartnoise"]["mean_std"] == pytest.approx(1.0) and row["smartnoise"]["mean_error"] == pytest.approx(0.0)
    assert sum(b["groups"] for b in row["pimento"]["recall"]) == sum(1 for v in true.values() if v >= 1)
    text = g.table({"rows": [row]})
    assert "Recall of COUNT(*) per diagnosis" in text and "| 1 |" in text


def test_the_table_says_refused_and_not_run():
    base = {"groups_present": 5, "pimento": {"mechanisms": ["vector_smooth_laplace"], "law_std": 10.0, "mean_std": 9.5, "mean_error": -0.25}}
    text = g.table({"rows": [{"query": "join", **base, "smartnoise": {"error": "ValueError: We only know how to handle tables with one key"}},
                             {"query": "alone", **base, "smartnoise": None}]})
    assert "| join | 5 | vector_smooth_laplace | 10.00 / 9.50 (-0.25) | refused: ValueError: We only know how" in text
    assert "| alone | 5 | vector_smooth_laplace | 10.00 / 9.50 (-0.25) | not run |" in text
