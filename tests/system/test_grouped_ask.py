"""A grouped question through ``pimento ask`` (issue 25, items 3 and 4: preview, confirmed answer, the table ``pimento sql``
prints) and neighbour invariance of the grouped ask (with the noise fixed, only the noisy values differ); the service and
the page: tests/unit/service/test_grouped_ask_service.py.

On the demo hospital (200 patients) with a stand-in synthetic copy; the question "How many patients per sex?" is read as
``SELECT Patient.sex, COUNT(*) FROM Patient GROUP BY Patient.sex`` (the demo declares the domain of Patient.sex: every
group is shown, zeros included).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from db_support import demo_with_copy
from neighbours import assert_neighbour_invariant, drop_timings, outcome
from pimento.cli._common import console
from pimento.cli.app import app
from pimento.mechanisms.samplers import fixed_noise_for_tests
from pimento.release.session import Session

QUESTION = "How many patients per sex?"
CHOSEN = "SELECT Patient.sex, COUNT(*) FROM Patient GROUP BY Patient.sex"
#: the keys of a grouped question's preview and answer, in order (the grouped SQL answer's keys, then a question's)
PREVIEW_KEYS = ["question", "mode", "chosen_sql", "reading", "confidence", "readings_proposed", "aggregate", "group_by", "groups",
                "domain", "budget_split", "partition_selection", "clipped_on_copy", "predicted_error", "formulations",
                "refused_formulations", "planner", "synthetic_rs", "estimated_half_width_95", "estimate_basis", "predicted_relative_error",
                "warn_relative_error", "epsilon_for_10_percent", "noise_warning", "cost", "mechanism", "guarantee_if_confirmed",
                "avoided_sql", "alternatives", "notes", "search_seconds", "spent"]
ANSWER_KEYS = ["question", "sql", "analyst", "mode", "aggregate", "column", "group_by", "bounds", "domain", "groups", "confidence",
               "epsilon", "delta", "budget_split", "releases", "partition_selection", "clipped_on_copy", "cached", "charge_id",
               "budget_left", "neighbours", "unit", "chosen_sql", "synthetic_rs", "synthetic_shapley", "avoided_sql", "guarantee",
               "search", "seconds"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory, standin_synthetic) -> Path:
    return demo_with_copy(tmp_path_factory.mktemp("grouped_ask"), standin_synthetic, patients=200)


def _charges(db: Path) -> int:
    with Session(db) as s:
        return len([c for c in s.ledger.charges() if c.analyst == "ann"])


def _cli(*args: str):
    console.width = 100
    return CliRunner().invoke(app, list(args))


def test_ask_previews_a_grouped_question_for_free(demo):
    result = _cli("ask", QUESTION, "--db", str(demo), "--epsilon", "1", "--delta", "1e-6", "--analyst", "ann", "--preview", "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert list(shown) == PREVIEW_KEYS
    assert shown["chosen_sql"] == CHOSEN and shown["aggregate"] == "count" and shown["group_by"] == ["Patient.sex"]
    assert shown["groups"] == 2 and shown["partition_selection"] is None and "declared" in shown["domain"]
    assert shown["cost"] == {"epsilon": "1", "delta": "0"} and shown["spent"] == {"epsilon": "0", "delta": "0"}
    assert shown["predicted_error"]["groups_on_copy"] == 2 and shown["predicted_relative_error"] < 0.1
    assert "noise_warning" in shown and shown["estimated_half_width_95"] > 0
    assert _charges(demo) == 0
    text = _cli("ask", QUESTION, "--db", str(demo), "--epsilon", "1", "--delta", "1e-6", "--preview")
    assert "will answer: the number of rows in Patient, per Patient.sex" in text.stdout
    assert "expected accuracy per group about" in text.stdout and "groups: 2, every one shown, zeros included" in text.stdout


def test_ask_answers_a_grouped_question_with_one_charge_and_the_question_fields(demo):
    before = _charges(demo)
    result = _cli("ask", QUESTION, "--db", str(demo), "--epsilon", "1", "--delta", "1e-6", "--analyst", "ann", "--confirm-sql", CHOSEN, "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert list(answer) == ANSWER_KEYS
    assert answer["question"] == QUESTION and answer["chosen_sql"] == CHOSEN and answer["aggregate"] == "count"
    assert [g["key"] for g in answer["groups"]] == [["F"], ["M"]] and answer["partition_selection"] is None
    assert answer["guarantee"]["epsilon"] == "2.6" and answer["guarantee"]["epsilon_release"] == "1"
    assert answer["search"]["alternatives"][0]["sql"] == CHOSEN and "avoided_sql" in answer
    assert _charges(demo) == before + 1
    text = _cli("ask", QUESTION, "--db", str(demo), "--epsilon", "1", "--delta", "1e-6", "--analyst", "ann", "--confirm-sql", CHOSEN)
    assert text.exit_code == 0, text.output
    assert "COUNT(*) per Patient.sex" in text.stdout and "95% interval" in text.stdout and "cached, no new cost" in text.stdout
    assert "end-to-end guarantee: (2.6, 0.000001)-DP" in text.stdout and "chosen for the lowest predicted error" in text.stdout
    assert _charges(demo) == before + 1  # the same question again: the answer cache


@pytest.fixture(scope="module")
def with_policy(tmp_path_factory, standin_synthetic) -> Path:
    """The demo with the custodian's policy (the modes ci, split and contextual are available)."""
    from policy_config import compile_example_policy, configure_policy

    folder = tmp_path_factory.mktemp("grouped_policy")
    db = demo_with_copy(folder / "h", standin_synthetic, patients=100)
    configure_policy(db, compile_example_policy(db, folder / "compiled.json"))
    return db


def test_split_and_contextual_refuse_a_grouped_question_before_anything_is_spent(with_policy):
    """Refused by the reading, for the mode, nothing charged."""
    db = with_policy
    for mode in ("split", "contextual"):
        result = _cli("ask", QUESTION, "--db", str(db), "--epsilon", "1", "--delta", "1e-6", "--mode", mode, "--analyst", "ann",
                      "--context", "sender=employee:1,recipient=employee:1,purpose=treatment", "--preview")
        assert result.exit_code != 0
        assert f"--mode {mode} answers one scalar COUNT; a GROUP BY, SUM or AVG has no bound in this mode" in " ".join(result.output.split())
    assert _charges(db) == 0


def test_ci_answers_a_grouped_question_exactly_on_the_authorized_cells(with_policy):
    """Mode ci: the grouped reading is answered as ci answers any SQL, exactly, no charge."""
    result = _cli("ask", QUESTION, "--db", str(with_policy), "--epsilon", "1", "--mode", "ci", "--analyst", "ann",
                  "--context", "sender=employee:1,recipient=employee:1,purpose=treatment", "--confirm-sql", CHOSEN, "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["mode"] == "ci" and answer["sql"] == CHOSEN and answer["columns"][0].lower() == "sex"
    assert _charges(with_policy) == 0


# --------------------------------------------------------------------------------------------- neighbours


def test_a_grouped_ask_differs_on_neighbours_only_in_its_noisy_values(tmp_path):
    """D and D' (Patient 1 with one more HIV visit): the reading is the copy's, so the question's fields are equal; only
    the noisy values and their intervals (and the DP bound of the scale) may differ."""
    from test_neighbour_invariance import GROUPED_ALLOW, GROUPED_CONFIG, _attack_pair, _charge_copy, charged_copy

    d, d2 = _attack_pair(3, 1)
    synthetic = charged_copy(tmp_path / "syn", tmp_path)

    def run(path: Path, rng) -> dict:
        with fixed_noise_for_tests(rng), Session(path, analyst="ann") as session:
            _charge_copy(session)
            answer = outcome(lambda: session.ask("How many visits per diagnosis?", synthetic=synthetic, epsilon="1", delta="1e-6"))
        return drop_timings(answer)

    a, _ = assert_neighbour_invariant(run, d, d2, tmp_path, allow=GROUPED_ALLOW, config=GROUPED_CONFIG, what="grouped Session.ask")
    assert a.get("aggregate") == "count" and a["question"] == "How many visits per diagnosis?", a
    assert [g["key"] for g in a["groups"]] == [["flu"], ["hiv"], ["asthma"], ["none"]]


def test_the_reading_cache_serves_a_grouped_reading_as_grouped(demo):
    """The service's cache of readings (release/reading_cache.py): a grouped reading read back is the grouped reading, not a
    count's (an entry always carries the grouped part; a plain count's is None)."""
    from pimento.release.reading_cache import shared_readings

    with Session(demo, analyst="cache") as s, shared_readings():
        first = s.preview(QUESTION, epsilon="1", delta="1e-6")
        again = s.preview(QUESTION, epsilon="1", delta="1e-6")
        count = s.preview("How many patients are there?", epsilon="1", delta="1e-6")
        count_again = s.preview("How many patients are there?", epsilon="1", delta="1e-6")
    assert first.grouped is not None and again.grouped == first.grouped and again.sql == CHOSEN
    assert again.to_dict()["formulations"] == first.to_dict()["formulations"]
    assert count.grouped is None and count_again.grouped is None and count_again.sql == count.sql


def test_the_grouped_sql_preview_shows_the_same_predicted_error_as_the_question(demo):
    """``pimento sql --preview`` of grouped SQL: the whole answer's predicted error on the copy (one function for both previews)."""
    sql = _cli("sql", "--sql", CHOSEN, "--db", str(demo), "--epsilon", "1", "--delta", "1e-6", "--preview", "--json")
    asked = _cli("ask", QUESTION, "--db", str(demo), "--epsilon", "1", "--delta", "1e-6", "--preview", "--json")
    assert sql.exit_code == 0 and asked.exit_code == 0, sql.output + asked.output
    shown, question = json.loads(sql.stdout), json.loads(asked.stdout)
    assert shown["predicted_error"] == question["predicted_error"] and shown["predicted_error"]["groups_on_copy"] == 2
    for key in ("estimated_half_width_95", "predicted_relative_error", "noise_warning"):
        assert shown[key] == question[key], key
    assert not any("no accuracy estimate" in note for note in shown["notes"])
