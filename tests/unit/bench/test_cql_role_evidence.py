"""Issue 27, POLICY14: the role-evidence table counts right roles per sign and kind
(benchmarks.cql_role_evidence), and the careful review answers a role question from the gold (benchmarks.cql_review):
confirm when the gold's role is the proposal, edit to the gold's role otherwise, drop where the gold has no such
norm; a role edit that does not fit drops the permit."""

from __future__ import annotations

import copy
from typing import Any

from benchmarks.cql_review import careful_answers, careful_review
from benchmarks.cql_role_evidence import tally


def test_tally_counts_right_roles_per_sign_and_kind_and_skips_clauses_the_gold_lacks() -> None:
    def row(text, clause, sign, var, kind, right, gold_any=False, in_gold=True):
        return {"text": text, "clause": clause, "sign": sign, "var": var, "phrase": "p", "evidence": kind,
                "right": right, "gold_any": gold_any, "in_gold": in_gold}

    rows = [row("a", "C1", "permit", "recipient", "synonym", True),
            row("b", "C2", "permit", "recipient", "synonym", False),
            row("a", "C2", "permit", "sender", "synonym", False, gold_any=True),
            row("a", "C3", "deny", "recipient", "synonym", True),
            row("a", "C9", "permit", "recipient", "table_named", False, in_gold=False)]
    t = tally(rows)
    assert set(t) == {("permit", "synonym"), ("deny", "synonym")}
    p = t[("permit", "synonym")]
    assert (p["roles"], p["right"], p["gold_any"], len(p["texts"])) == (3, 1, 1, 2)
    assert dict(p["vars"]) == {"recipient": [2, 1], "sender": [1, 0]}


def _q(qid, principal, where, var="recipient"):
    return {"id": qid, "kind": "role", "var": var, "phrase": "x", "reason": "weak", "evidence": "synonym",
            "proposal": {"principal": principal, "where": where},
            "principals": {"Client": "client_id", "Staff": "staff_id", "Courier": "courier_id"}}


GROUNDING: dict[str, Any] = {
    "principals": {"client": {"relation": "Client", "key": "client_id"},
                   "staff": {"relation": "Staff", "key": "staff_id"}},
    "subject_principal": "client",
    "roles": {"client": {"principal": "client"}},
    "data_types": {"phone": {"locations": [{"relation": "Client", "attribute": "phone"}]}},
    "purposes": {}, "conditions": {},
}
DRAFT: dict[str, Any] = {
    "version": 1, "name": "d", "grounding": GROUNDING,
    "norms": [{"id": "C0", "sign": "permit", "subject": "client", "data": ["phone"]}],
    "review": [{"clause": c, "source": "s", "norm": {"id": c, "sign": "permit", "subject": "client", "data": ["phone"]},
                "questions": [q]}
               for c, q in (("C1", _q("C1.1", "Staff", "role = 'nurse'")),   # the gold's role, written otherwise
                            ("C2", _q("C2.1", "Staff", None)),               # the gold names the nurses only
                            ("C3", _q("C3.1", "Staff", None)),               # the gold has no C3
                            ("C4", _q("C4.1", "Staff", None)))],             # the gold leaves the recipient open
}
GOLD: dict[str, Any] = {
    "version": 1, "name": "g",
    "grounding": {**GROUNDING, "roles": {"client": {"principal": "client"},
                                         "nurse": {"principal": "staff", "where": "role='nurse'"}}},
    "norms": [{"id": "C0", "sign": "permit", "subject": "client", "data": ["phone"]},
              {"id": "C1", "sign": "permit", "recipient": "nurse", "subject": "client", "data": ["phone"]},
              {"id": "C2", "sign": "permit", "recipient": "nurse", "subject": "client", "data": ["phone"]},
              {"id": "C4", "sign": "permit", "subject": "client", "data": ["phone"]}],
}


def test_careful_answers_a_role_question_from_the_gold() -> None:
    answers = careful_answers(DRAFT, GOLD)
    assert answers == {"C1.1": "confirm", "C2.1": {"edit": {"principal": "Staff", "where": "role='nurse'"}},
                       "C3.1": "drop", "C4.1": "confirm"}
    doc = careful_review(DRAFT, GOLD)
    assert [n["id"] for n in doc["norms"]] == ["C0", "C1", "C2", "C4"]
    roles = {n["id"]: doc["grounding"]["roles"][n["recipient"]].get("where") for n in doc["norms"] if "recipient" in n}
    assert roles == {"C1": "role = 'nurse'", "C2": "role='nurse'", "C4": None}


def test_a_gold_role_that_does_not_fit_drops_the_permit() -> None:
    gold = copy.deepcopy(GOLD)  # the gold's nurses are a table the question cannot name (no key listed)
    gold["grounding"]["principals"]["nurse_t"] = {"relation": "Nurse", "key": "nurse_id"}
    gold["grounding"]["roles"]["nurse"] = {"principal": "nurse_t"}
    assert careful_answers(DRAFT, gold)["C2.1"] == {"edit": {"principal": "Nurse", "where": None}}
    doc = careful_review(DRAFT, gold)
    assert [n["id"] for n in doc["norms"]] == ["C0", "C4"]  # C1, C2's edits refused: dropped, fail closed
