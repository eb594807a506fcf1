"""The epsilon planner of a grouped or summed answer (issue 25): the preview names the epsilon for +-10%, as a count's does.

:func:`pimento.release.aggregate_accuracy.planner` plans the release at each of the planner's epsilons and prices each
plan on the synthetic copy; the question's preview (``ask --preview``) and the SQL preview (``sql --preview``) carry the
rows and ``epsilon_for_10_percent``. Also: every demo question of the grouped shapes is read (the formulary is a
declared domain of the demo).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from db_support import demo_with_copy
from pimento.release.accuracy import PLANNER_TARGET, epsilon_for
from pimento.release.interpretation import PLANNER_EPSILONS
from pimento.release.session import Session

PER_SEX = "How many patients per sex?"
AVG_DOSE = "What is the average dose of medication orders per medication?"


@pytest.fixture(scope="module")
def hospital(tmp_path_factory, standin_synthetic) -> Path:
    return demo_with_copy(tmp_path_factory.mktemp("planner") / "h", standin_synthetic, patients=150, ledger='analyst_share = "1"')


def _halves(rows: list[dict]) -> list[Fraction]:
    return [Fraction(str(r["estimated_half_width_95"])) for r in rows]


def test_a_grouped_question_preview_prices_every_planner_epsilon_and_names_the_one_for_10_percent(hospital):
    with Session(hospital, analyst="ann") as s:
        shown = s.preview(PER_SEX, epsilon="0.1", delta="1e-6").to_dict()
    rows = shown["planner"]
    assert [Fraction(r["epsilon"]) for r in rows] == sorted(Fraction(e) for e in PLANNER_EPSILONS)
    halves = _halves(rows)
    assert halves == sorted(halves, reverse=True) and halves[0] > halves[-1]  # more epsilon, less noise
    asked = next(r for r in rows if r["epsilon"] == "0.1")
    assert Fraction(str(asked["estimated_half_width_95"])) == Fraction(str(shown["estimated_half_width_95"]))
    median = shown["predicted_error"]["median_value_on_copy"]
    expected = epsilon_for(PLANNER_TARGET, rows, median)
    assert expected is not None and shown["epsilon_for_10_percent"] == expected
    assert shown["spent"] == {"epsilon": "0", "delta": "0"}


def test_the_sql_preview_of_a_grouped_query_names_the_epsilon_for_10_percent(hospital):
    sql = "SELECT p.sex, COUNT(*) FROM Patient p GROUP BY p.sex"
    with Session(hospital, analyst="ann") as s:
        shown = s.preview_sql(sql, epsilon="0.1", delta="1e-6")
        spent = s.ledger.spent(s.location)
    assert [Fraction(r["epsilon"]) for r in shown["planner"]] == sorted(Fraction(e) for e in PLANNER_EPSILONS)
    assert shown["epsilon_for_10_percent"] == epsilon_for(PLANNER_TARGET, shown["planner"], shown["synthetic"]["answer"]) is not None
    with Session(hospital) as s:
        assert s.ledger.spent(s.location) == spent  # nothing spent by the planner


def test_the_average_dose_per_medication_is_read_over_the_declared_formulary(hospital):
    with Session(hospital, analyst="ann") as s:
        shown = s.preview(AVG_DOSE, epsilon="1", delta="1e-6").to_dict()
    assert shown["aggregate"] == "avg" and "[domains] MedicationOrders.medication" in shown["domain"]
    assert shown["groups"] == 43 and shown["planner"]
