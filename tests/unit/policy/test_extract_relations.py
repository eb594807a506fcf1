"""Issue 27: generic relation phrases and definitions, on the development HR domain
(``tests/data/policies/dev_hr``, not frozen: rules were written from it)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from pimento.engines.database import load_database
from pimento.policy.extract_offline import definitions, extract_policy_offline
from pimento.policy.review import open_questions

DEV = Path(__file__).resolve().parents[2] / "data" / "policies" / "dev_hr"


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    path = tmp_path_factory.mktemp("dev_hr") / "hr.duckdb"
    con = duckdb.connect(str(path))
    con.execute((DEV / "schema.sql").read_text(encoding="utf-8"))
    con.close()
    db = load_database(path)
    try:
        return extract_policy_offline((DEV / "policy.txt").read_text(encoding="utf-8"), db.catalog,
                                      engine=db.engine, year=2024)
    finally:
        db.close()


def _norm(result, nid):
    return next(n for n in result.policy["norms"] if n["id"] == nid)


def _sql(result, nid):
    return result.policy["grounding"]["conditions"][_norm(result, nid)["condition"]]["sql"]


def test_a_relation_noun_and_one_hop_ground_member_of_a_team_led_by(extracted) -> None:
    # "member" names Membership (a noun-forming suffix), "led by that team lead" is Team.lead_id one hop away
    assert _sql(extracted, "C1") == ("SELECT a.employee_id AS subject, b.lead_id AS recipient FROM Membership AS a "
                                     "JOIN Team AS b ON b.team_id = a.team_id")


def test_while_introduces_a_condition(extracted) -> None:
    norm = _norm(extracted, "C3")
    assert extracted.policy["grounding"]["roles"][norm["recipient"]]["where"] == "kind = 'payroll_provider'"
    assert _sql(extracted, "C3") == "SELECT vendor_id AS recipient FROM Vendor WHERE contract_active"


def test_a_term_the_text_defines_grounds_to_the_listed_columns(extracted) -> None:
    text = '"personnel file" means an employee\'s full name and job title; "pay data" means gross pay.'
    assert definitions(text) == {
        "personnel file": ["full name", "job title"], "pay data": ["gross pay"]}
    g = extracted.policy["grounding"]
    locs = {(loc["relation"], loc["attribute"]) for d in _norm(extracted, "C5")["data"]
            for loc in g["data_types"][d]["locations"]}
    assert locs == {("Employee", "full_name"), ("Employee", "home_address"), ("Employee", "job_title"),
                    ("Employee", "birth_date")}  # not national_id, not phone: the definition lists four


def test_the_same_team_needs_both_parties_else_it_is_a_question(extracted) -> None:
    assert "C6" not in {n["id"] for n in extracted.policy["norms"]}
    q = next(q for q in open_questions(extracted.draft()) if q["clause"] == "C6")
    assert q["kind"] == "condition" and "same team" in q["phrase"]
