"""Issue 27: generic prohibition shapes, on the development library domain
(``tests/data/policies/dev_library``, not frozen: written to find these failures; rules may be
written from it).

* a negative adverbial before an inverted modal ("Under no circumstances may X ...", "In no event
  shall X ...", "At no time may X ...") is a prohibition of X (before: X was read as the sender
  "Under no circumstances", or no modal was found);
* an aside between the modal and the verb ("may not, for any purpose, view ...") no longer hides the
  data; in a permit, an aside that is not a purpose is a condition (grounded or held: fail narrow);
* a phrase that spells out a column's name ("card number") means that column, not every column of
  the lexicon's category of one of its words (before: also ``Payment.card_last4``);
* more ways to prohibit: "shall refrain from", "is forbidden from", "It is prohibited to",
  "Nobody may", "Disclosure of D to R is prohibited [unless ...]", "must not ever view" (before:
  no modal, the sender "Nobody", or the volunteer read as the sender of "ever").
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from pimento.engines.database import load_database
from pimento.policy.extract_offline import extract_policy_offline
from pimento.policy.extract_offline.shapes import Sentence, parse_sentence

DEV = Path(__file__).resolve().parents[2] / "data" / "policies" / "dev_library"


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    path = tmp_path_factory.mktemp("dev_library") / "library.duckdb"
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
    return next((n for n in result.policy["norms"] if n["id"] == nid), None)


def _columns(result, nid):
    g = result.policy["grounding"]
    return {f"{loc['relation']}.{loc['attribute']}" for d in _norm(result, nid)["data"]
            for loc in g["data_types"][d]["locations"]}


def _recipient(result, nid):
    role = result.policy["grounding"]["roles"][_norm(result, nid)["recipient"]]
    return role["principal"], role.get("where")


@pytest.mark.parametrize(("nid", "recipient", "columns"), [
    ("C8", ("staff", "position = 'volunteer'"), "Payment.amount"),       # Under no circumstances may ...
    ("C15", ("partner", "kind = 'collection_agency'"), "Patron.phone"),  # In no event shall ...
    ("C16", ("staff", "position = 'volunteer'"), "ComputerSession.sites_visited"),  # At no time may ...
])
def test_a_fronted_negative_adverbial_is_a_prohibition_of_the_agent(extracted, nid, recipient, columns) -> None:
    norm = _norm(extracted, nid)
    assert norm is not None, [f for f in extracted.failures if f["clause"] == nid]
    assert norm["sign"] == "deny" and _recipient(extracted, nid) == recipient
    assert columns in _columns(extracted, nid)


def test_an_aside_after_the_modal_keeps_the_data(extracted) -> None:
    norm = _norm(extracted, "C17")  # "may not, for any purpose, view the payments of a patron"
    assert norm is not None and norm["sign"] == "deny" and norm["purpose"] == "any"
    assert {"Payment.amount", "Payment.card_last4", "Payment.paid_on"} <= _columns(extracted, "C17")


def test_a_spelled_out_column_is_not_widened_by_a_category(extracted) -> None:
    assert _columns(extracted, "C7") == {"Patron.card_number"}  # not Payment.card_last4
    assert _columns(extracted, "C12") == {"Patron.birth_date"}


@pytest.mark.parametrize(("text", "sign", "conditions", "purpose"), [
    ("A librarian may, in exceptional cases, view a patron's loans.", "permit", ["in exceptional cases"], None),
    ("A librarian may not, in exceptional cases, view a patron's loans.", "deny", [], None),  # prohibits more
    ("A librarian may, for research, view a patron's loans if the patron agrees.", "permit", ["the patron agrees"],
     "research"),
    ("A librarian may, with the patron's consent, view a patron's loans.", "permit", ["with the patron's consent"], None),
])
def test_an_aside_of_a_permit_is_a_condition_never_dropped(text, sign, conditions, purpose) -> None:
    frame = parse_sentence(Sentence("X1", text))
    assert (frame.sign, frame.agent, frame.data, frame.conditions, frame.purpose) == (
        sign, "librarian", ["loans"], conditions, purpose)


def test_an_inverted_passive_and_never() -> None:
    frame = parse_sentence(Sentence("X1", "Under no circumstances may a patron's loans be disclosed to a marketer."))
    assert (frame.sign, frame.verb, frame.data, frame.recipient) == ("deny", "passive", ["loans"], "marketer")
    frame = parse_sentence(Sentence("X2", "Never shall a clerk sell a patron's email."))
    assert (frame.sign, frame.agent, frame.data) == ("deny", "clerk", ["email"])


@pytest.mark.parametrize(("nid", "sender", "recipient", "columns"), [
    ("C18", ("staff", "position = 'volunteer'"), ("partner", "kind = 'marketer'"), {"Patron.email"}),  # refrain from
    ("C19", None, ("partner", "kind = 'marketer'"), {"Loan.loan_id"}),              # It is prohibited to
    ("C20", None, ("partner", "kind = 'marketer'"), {"Patron.card_number"}),        # Nobody may
    ("C21", None, ("staff", "position = 'volunteer'"), {"Fine.amount"}),            # is forbidden from
    ("C22", None, ("partner", "kind = 'law_enforcement'"), {"Hold.hold_id"}),       # Disclosure of ... is prohibited
    ("C23", None, ("staff", "position = 'volunteer'"), {"Patron.phone"}),           # must not ever view
])
def test_more_ways_to_prohibit(extracted, nid, sender, recipient, columns) -> None:
    norm = _norm(extracted, nid)
    assert norm is not None, [f for f in extracted.failures if f["clause"] == nid]
    assert norm["sign"] == "deny" and _recipient(extracted, nid) == recipient
    roles = extracted.policy["grounding"]["roles"]
    assert (None if norm.get("sender", "any") == "any" else
            (roles[norm["sender"]]["principal"], roles[norm["sender"]].get("where"))) == sender
    assert columns <= _columns(extracted, nid)


def test_a_nominal_prohibition_keeps_its_exception(extracted) -> None:
    norm = _norm(extracted, "C22")  # "... is prohibited unless the agreement of law enforcement is active"
    assert norm["condition"] == "agreement_active"  # the requirement: prohibited unless it holds
